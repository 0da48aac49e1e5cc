package idempotency

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// Status is the estado attribute of a record.
type Status string

// The three states. Two would not do: with only "done / not done", two
// concurrent consumers would both see "not done" and both charge.
const (
	StatusInProgress Status = "EN_CURSO"
	StatusCompleted  Status = "COMPLETADO"
	StatusFailed     Status = "FALLIDO"
)

// Attribute names of a record (see the package documentation).
const (
	attrEstado        = "estado"
	attrResultado     = "resultado"
	attrCaducaBloqueo = "caduca_bloqueo"
	attrExpiraEn      = lambdaapi.IdempotencyTTLAttribute
	attrPropietario   = "propietario"
	attrHashCarga     = "hash_carga"
	attrErrorCodigo   = "error_codigo"
	attrErrorMensaje  = "error_mensaje"
)

// record is the decoded form of an item.
type record struct {
	status        Status
	result        []byte // JSON, COMPLETADO only
	lockExpiresAt time.Time
	expiresAt     time.Time
	owner         string
	payloadHash   string
	errCode       string
	errMsg        string
}

// expired reports whether the record counts as absent at now: past its
// expira_en (TTL can lag by days) or an EN_CURSO whose lock has ended.
// It mirrors the claim's condition expression exactly, with the same
// resolutions (seconds and milliseconds).
func (r record) expired(now time.Time) bool {
	if r.expiresAt.Unix() < now.Unix() {
		return true
	}
	return r.status == StatusInProgress && r.lockExpiresAt.UnixMilli() < now.UnixMilli()
}

// decodeRecord reads an item written by this package, with an error that
// names the key and the offending attribute for anything else (the first
// problem found).
func decodeRecord(key string, item map[string]types.AttributeValue) (record, error) {
	var problem string
	note := func(ok bool, err error, missing string) {
		switch {
		case problem != "":
		case err != nil:
			problem = err.Error()
		case !ok:
			problem = missing
		}
	}
	str := func(name, missing string) string { // missing "": optional
		v, ok, err := stringAttr(item, name)
		note(ok || missing == "", err, missing)
		return v
	}
	num := func(name, missing string) int64 {
		v, ok, err := numberAttr(item, name)
		note(ok, err, missing)
		return v
	}
	r := record{status: Status(str(attrEstado, "no "+attrEstado+" attribute"))}
	r.expiresAt = time.Unix(num(attrExpiraEn, "no "+attrExpiraEn+" attribute"), 0)
	r.owner, r.payloadHash = str(attrPropietario, ""), str(attrHashCarga, "")
	without := func(name string) string { return fmt.Sprintf("%s record without %s", r.status, name) }
	switch r.status {
	case StatusInProgress:
		r.lockExpiresAt = time.UnixMilli(num(attrCaducaBloqueo, without(attrCaducaBloqueo)))
	case StatusCompleted:
		r.result = []byte(str(attrResultado, without(attrResultado)))
	case StatusFailed:
		r.errCode = str(attrErrorCodigo, without(attrErrorCodigo))
		r.errMsg = str(attrErrorMensaje, "")
	default:
		note(false, nil, fmt.Sprintf("unknown %s %q (want %s, %s or %s)", attrEstado, r.status, StatusInProgress, StatusCompleted, StatusFailed))
	}
	if problem != "" {
		return record{}, &RecordError{Key: key, Reason: problem}
	}
	return r, nil
}

func stringAttr(item map[string]types.AttributeValue, name string) (string, bool, error) {
	av, ok := item[name]
	if !ok {
		return "", false, nil
	}
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		return "", false, fmt.Errorf("%s is %s, want a string (S)", name, avType(av))
	}
	return s.Value, true, nil
}

func numberAttr(item map[string]types.AttributeValue, name string) (int64, bool, error) {
	av, ok := item[name]
	if !ok {
		return 0, false, nil
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, false, fmt.Errorf("%s is %s, want a number (N)", name, avType(av))
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s = %q is not an integer", name, n.Value)
	}
	return v, true, nil
}

// avType names av's DynamoDB type ("S", "N", "BOOL", ...).
func avType(av types.AttributeValue) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", av), "*types.AttributeValueMember")
}

func attrS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func attrN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
