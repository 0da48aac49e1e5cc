package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// DynamoDBAPI is the part of *dynamodb.Client the store uses.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Item layout of mercadofresco-stock (partition key sku, sort key elemento).
const (
	attrSKU      = lambdaapi.StockPartitionKey
	attrElemento = lambdaapi.StockSortKey
	// ElementoTotales is the sort key of a SKU's totals item.
	ElementoTotales = "stock"

	attrExistencias = "existencias"
	attrReservado   = "reservado"
	attrDisponible  = "disponible"
	attrEstado      = "estado"
	attrCantidad    = "cantidad"
	attrSecuencia   = "secuencia"
	attrTipo        = "tipo"
	attrCambio      = "cambio"
	attrActualizado = "actualizado_en"
	// attrVersion counts the changes begun on a SKU's totals; a change
	// begins only on the version it read, so a late copy of its write
	// changes nothing.
	attrVersion = "version"

	// pendingPrefix names a totals attribute holding a line's change whose
	// deltas are applied to the totals but not yet to the line.
	pendingPrefix = "pendiente:"
)

// Line states.
const (
	EstadoReservada = "RESERVADA"
	EstadoLiberada  = "LIBERADA"
	EstadoAplicado  = "APLICADO"
)

// Outcome is what Apply did.
type Outcome int

const (
	// Applied: the movement changed the line and the totals.
	Applied Outcome = iota + 1
	// Skipped: the line already reflects this movement or a newer one (a
	// replay, a duplicate, or a late movement that must not undo a newer
	// one). Nothing changed.
	Skipped
)

func (o Outcome) String() string {
	if o == Skipped {
		return "skipped"
	}
	return "applied"
}

// Errors.
var (
	// ErrNegativeStock: applying the movement would leave less than zero
	// units available. A data error (a reservation of a SKU never counted,
	// an adjustment below what is reserved): never retried. The concrete
	// error is a *NegativeStockError.
	ErrNegativeStock = errors.New("stock: movement would make the stock negative")
	// ErrConflict: other writers kept changing the same line; transient.
	ErrConflict = errors.New("stock: concurrent changes of the same line")
	// ErrStore wraps DynamoDB failures other than a failed condition.
	ErrStore = errors.New("stock: store error")
)

// NegativeStockError describes a refused movement.
type NegativeStockError struct {
	SKU string
	// Disponible is the units available (Known false: the SKU has no totals).
	Disponible int64
	Known      bool
	// Needed is how many available units the movement takes.
	Needed int64
}

func (e *NegativeStockError) Error() string {
	if !e.Known {
		return fmt.Sprintf("stock: sku %s has no stock recorded (no adjustment yet) and the movement takes %d units", e.SKU, e.Needed)
	}
	return fmt.Sprintf("stock: sku %s has %d units available and the movement takes %d: the stock would be %d", e.SKU, e.Disponible, e.Needed, e.Disponible-e.Needed)
}

// Is makes errors.Is(err, ErrNegativeStock) true.
func (e *NegativeStockError) Is(target error) bool { return target == ErrNegativeStock }

// Store applies movements to the table. Safe for concurrent use.
type Store struct {
	db    DynamoDBAPI
	table string
	now   func() time.Time
}

// NewStore returns a store on table.
func NewStore(db DynamoDBAPI, table string) (*Store, error) {
	if db == nil || table == "" {
		return nil, errors.New("stock: NewStore needs a client and a table name")
	}
	return &Store{db: db, table: table, now: time.Now}, nil
}

// line is a line item as read.
type line struct {
	estado    string
	cantidad  int64
	secuencia int64
	// cambio is the token of the change that wrote the line.
	cambio string
}

// reserved is what the line holds back from the available stock.
func (l *line) reserved() int64 {
	if l != nil && l.estado == EstadoReservada {
		return l.cantidad
	}
	return 0
}

// change is a line's transition: the new state, the line's secuencia it
// was computed from (0: the line did not exist) and the deltas it applies
// to the totals. It is stored, as a pending change, on the totals item
// until the line is written.
type change struct {
	// cambio is a random token naming this change (one per attempt).
	cambio    string
	elemento  string
	tipo      string
	estado    string
	cantidad  int64
	secuencia int64
	leida     int64
	dExist    int64
	dReserv   int64
}

// need is how many available units the change takes (<= 0: it gives).
func (c change) need() int64 { return c.dReserv - c.dExist }

// maxRounds bounds the restarts of Apply when other writers change the
// same line (each restart re-reads it).
const maxRounds = 5

// Apply applies m once: see the package documentation for the protocol.
func (s *Store) Apply(ctx context.Context, m eventsapi.MovimientoStock) (Outcome, error) {
	for range maxRounds {
		out, err := s.applyOnce(ctx, m)
		if !errors.Is(err, errRestart) {
			return out, err
		}
	}
	return 0, fmt.Errorf("%w: %s %s", ErrConflict, m.SKU, elemento(m))
}

var errRestart = errors.New("restart")

func (s *Store) applyOnce(ctx context.Context, m eventsapi.MovimientoStock) (Outcome, error) {
	el := elemento(m)
	tot, err := s.getTotals(ctx, m.SKU)
	if err != nil {
		return 0, err
	}
	if p, pending := tot.pending[el]; pending {
		// A change of this line was begun and not finished (its invocation
		// died, or is still running): finish it, or take it back if the
		// line moved on without it, then start again from the totals.
		if _, err := s.finish(ctx, m.SKU, p); err != nil && !errors.Is(err, errRestart) {
			return 0, err
		}
		return 0, errRestart
	}
	cur, err := s.getLine(ctx, m.SKU, el)
	if err != nil {
		return 0, err
	}
	if cur != nil && (cur.secuencia >= m.Secuencia || m.Tipo == eventsapi.Ajuste) {
		return Skipped, nil
	}
	c := plan(cur, m)
	if n := c.need(); n > 0 && (!tot.exists || tot.disponible < n) {
		return 0, &NegativeStockError{SKU: m.SKU, Disponible: tot.disponible, Known: tot.exists, Needed: n}
	}
	switch err := s.begin(ctx, m.SKU, c, tot.version); {
	case isConditionFailed(err):
		// The totals moved since they were read (another change began,
		// or the stock changed): read them again.
		return 0, errRestart
	case err != nil:
		return 0, err
	}
	return s.finish(ctx, m.SKU, c)
}

// plan computes the line's new state from its current one.
func plan(cur *line, m eventsapi.MovimientoStock) change {
	c := change{elemento: elemento(m), tipo: string(m.Tipo), cantidad: m.Cantidad, secuencia: m.Secuencia, cambio: newToken()}
	if cur != nil {
		c.leida = cur.secuencia
	}
	switch m.Tipo {
	case eventsapi.Reserva:
		c.estado, c.dReserv = EstadoReservada, m.Cantidad-cur.reserved()
	case eventsapi.Liberacion:
		c.estado, c.dReserv = EstadoLiberada, -cur.reserved()
	case eventsapi.Ajuste:
		c.estado, c.dExist = EstadoAplicado, m.Cantidad
	}
	return c
}

// begin applies c's deltas to the totals, records c as pending there and
// moves the totals' version on, only if the version is still the one read
// (so the write counts once however often it reaches DynamoDB), no change
// of the line is pending and the stock covers what c takes (else a failed
// condition).
func (s *Store) begin(ctx context.Context, sku string, c change, version int64) error {
	names := map[string]string{"#p": pendingPrefix + c.elemento, "#e": attrExistencias, "#r": attrReservado, "#d": attrDisponible, "#u": attrActualizado, "#v": attrVersion}
	values := map[string]types.AttributeValue{
		":de": num(c.dExist), ":dr": num(c.dReserv), ":dd": num(c.dExist - c.dReserv), ":z": num(0),
		":c": c.item(), ":now": str(s.now().UTC().Format(time.RFC3339Nano)), ":next": num(version + 1),
	}
	cond := "attribute_not_exists(#p) AND attribute_not_exists(#v)"
	if version > 0 {
		cond, values[":v"] = "attribute_not_exists(#p) AND #v = :v", num(version)
	}
	if n := c.need(); n > 0 {
		cond += " AND #d >= :need"
		values[":need"] = num(n)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       key(sku, ElementoTotales),
		UpdateExpression: aws.String("SET #e = if_not_exists(#e, :z) + :de, #r = if_not_exists(#r, :z) + :dr, " +
			"#d = if_not_exists(#d, :z) + :dd, #p = :c, #u = :now, #v = :next"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return s.wrap(err)
}

// finish writes the line's new state (only if the line is still the one c
// was computed from) and clears c from the totals. While c is pending no
// other change of the line can begin, so a line that is not the one c
// read either carries c already (another invocation finished c) or changed
// before c began: then c's deltas are stale, they are taken back and the
// caller starts again.
func (s *Store) finish(ctx context.Context, sku string, c change) (Outcome, error) {
	cond, values := "attribute_not_exists(#s)", map[string]types.AttributeValue{}
	if c.leida > 0 {
		cond, values[":leida"] = "#s = :leida", num(c.leida)
	}
	item := map[string]types.AttributeValue{
		attrSKU: str(sku), attrElemento: str(c.elemento), attrTipo: str(c.tipo), attrEstado: str(c.estado),
		attrCantidad: num(c.cantidad), attrSecuencia: num(c.secuencia), attrCambio: str(c.cambio),
		attrActualizado: str(s.now().UTC().Format(time.RFC3339Nano)),
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#s": attrSecuencia}, ExpressionAttributeValues: nonEmpty(values),
	})
	if isConditionFailed(err) {
		cur, gerr := s.getLine(ctx, sku, c.elemento)
		if gerr != nil {
			return 0, gerr
		}
		if cur != nil && cur.cambio == c.cambio {
			return Applied, s.clearPending(ctx, sku, c.elemento, c.cambio)
		}
		if err := s.undo(ctx, sku, c); err != nil {
			return 0, err
		}
		return 0, errRestart
	}
	if err := s.wrap(err); err != nil {
		return 0, err
	}
	return Applied, s.clearPending(ctx, sku, c.elemento, c.cambio)
}

// undo takes c's deltas back from the totals and removes it, if it is
// still pending there.
func (s *Store) undo(ctx context.Context, sku string, c change) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(sku, ElementoTotales),
		UpdateExpression:          aws.String("SET #e = #e - :de, #r = #r - :dr, #d = #d - :dd REMOVE #p"),
		ConditionExpression:       aws.String("#p.#c = :c"),
		ExpressionAttributeNames:  map[string]string{"#p": pendingPrefix + c.elemento, "#c": attrCambio, "#e": attrExistencias, "#r": attrReservado, "#d": attrDisponible},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(c.cambio), ":de": num(c.dExist), ":dr": num(c.dReserv), ":dd": num(c.dExist - c.dReserv)},
	})
	if isConditionFailed(err) {
		return nil // already finished or undone by another invocation
	}
	return s.wrap(err)
}

// clearPending removes the pending change cambio of elemento, if it is
// still there.
func (s *Store) clearPending(ctx context.Context, sku, elemento, cambio string) error {
	if cambio == "" {
		return nil
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(sku, ElementoTotales),
		UpdateExpression:          aws.String("REMOVE #p"),
		ConditionExpression:       aws.String("#p.#c = :c"),
		ExpressionAttributeNames:  map[string]string{"#p": pendingPrefix + elemento, "#c": attrCambio},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(cambio)},
	})
	if isConditionFailed(err) {
		return nil
	}
	return s.wrap(err)
}

func (s *Store) getLine(ctx context.Context, sku, elemento string) (*line, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(sku, elemento), ConsistentRead: aws.Bool(true)})
	if err := s.wrap(err); err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	l := &line{estado: getS(out.Item, attrEstado), cambio: getS(out.Item, attrCambio)}
	var err1, err2 error
	l.cantidad, err1 = getN(out.Item, attrCantidad)
	l.secuencia, err2 = getN(out.Item, attrSecuencia)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("%w: line %s/%s: %w", ErrStore, sku, elemento, err)
	}
	return l, nil
}

// Totals is a SKU's totals item.
type Totals struct {
	SKU                                string
	Existencias, Reservado, Disponible int64
	// Pending is the number of line changes begun and not finished.
	Pending int
}

type totals struct {
	exists                             bool
	existencias, reservado, disponible int64
	// version is 0 on totals no change has begun on since it was added.
	version int64
	pending map[string]change
}

func (s *Store) getTotals(ctx context.Context, sku string) (totals, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(sku, ElementoTotales), ConsistentRead: aws.Bool(true)})
	if err := s.wrap(err); err != nil {
		return totals{}, err
	}
	t := totals{exists: len(out.Item) > 0, pending: map[string]change{}}
	if !t.exists {
		return t, nil
	}
	var e1, e2, e3 error
	t.existencias, e1 = getN(out.Item, attrExistencias)
	t.reservado, e2 = getN(out.Item, attrReservado)
	t.disponible, e3 = getN(out.Item, attrDisponible)
	if err := errors.Join(e1, e2, e3); err != nil {
		return t, fmt.Errorf("%w: totals of %s: %w", ErrStore, sku, err)
	}
	if _, set := out.Item[attrVersion]; set {
		if t.version, err = getN(out.Item, attrVersion); err != nil {
			return t, fmt.Errorf("%w: totals of %s: %w", ErrStore, sku, err)
		}
	}
	for name, v := range out.Item {
		el, ok := strings.CutPrefix(name, pendingPrefix)
		if !ok {
			continue
		}
		c, err := parseChange(el, v)
		if err != nil {
			return t, fmt.Errorf("%w: totals of %s: %s: %w", ErrStore, sku, name, err)
		}
		t.pending[el] = c
	}
	return t, nil
}

// Read returns the totals of sku (zero values when it has none).
func (s *Store) Read(ctx context.Context, sku string) (Totals, error) {
	t, err := s.getTotals(ctx, sku)
	return Totals{SKU: sku, Existencias: t.existencias, Reservado: t.reservado, Disponible: t.disponible, Pending: len(t.pending)}, err
}

func (c change) item() types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		attrSecuencia: num(c.secuencia), attrTipo: str(c.tipo), attrEstado: str(c.estado), attrCantidad: num(c.cantidad),
		attrCambio: str(c.cambio), "leida": num(c.leida), "de": num(c.dExist), "dr": num(c.dReserv),
	}}
}

func parseChange(elemento string, v types.AttributeValue) (change, error) {
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return change{}, errors.New("not a map")
	}
	c := change{elemento: elemento, tipo: getS(m.Value, attrTipo), estado: getS(m.Value, attrEstado), cambio: getS(m.Value, attrCambio)}
	if c.cambio == "" {
		return c, errors.New("no token")
	}
	var errs [5]error
	c.secuencia, errs[0] = getN(m.Value, attrSecuencia)
	c.cantidad, errs[1] = getN(m.Value, attrCantidad)
	c.leida, errs[2] = getN(m.Value, "leida")
	c.dExist, errs[3] = getN(m.Value, "de")
	c.dReserv, errs[4] = getN(m.Value, "dr")
	return c, errors.Join(errs[:]...)
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

func key(sku, elemento string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrSKU: str(sku), attrElemento: str(elemento)}
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s is missing or not a number", name)
	}
	return strconv.ParseInt(v.Value, 10, 64)
}

func nonEmpty(m map[string]types.AttributeValue) map[string]types.AttributeValue {
	if len(m) == 0 {
		return nil
	}
	return m
}

func isConditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrStore, err)
}
