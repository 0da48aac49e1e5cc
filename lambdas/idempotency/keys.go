package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes is DynamoDB's limit for a partition key value.
const MaxKeyBytes = 2048

// Operation prefixes of the keys derived from the domain. The key names the
// operation as well as the order, because one order produces one charge,
// one e-mail, one ERP notice and one preparation, each to run once (a stock
// movement's key is eventsapi.MovimientoStock.DeduplicationID).
const (
	OpCobro              = "cobro"
	OpCorreoConfirmacion = "correo-confirmacion"
	OpPreparacion        = "preparacion"
	OpAvisoERP           = "aviso-erp"
	OpReembolso          = "reembolso"
)

// KeyCobro returns the key of the card charge of an order:
// "cobro:<pedido_id>". The same key travels to the payment gateway as its
// Idempotency-Key header.
func KeyCobro(pedidoID string) (string, error) {
	return joinKey(OpCobro, pedidoID)
}

// KeyReembolso returns the key of the refund of an order's charge:
// "reembolso:<pedido_id>", also the gateway's Idempotency-Key.
func KeyReembolso(pedidoID string) (string, error) {
	return joinKey(OpReembolso, pedidoID)
}

// KeyCorreoConfirmacion returns the key of the confirmation e-mail of an
// order: "correo-confirmacion:<pedido_id>".
func KeyCorreoConfirmacion(pedidoID string) (string, error) {
	return joinKey(OpCorreoConfirmacion, pedidoID)
}

// KeyAvisoERP returns the key of the ERP notice of a confirmed order:
// "aviso-erp:<pedido_id>". The same key travels to the ERP as its
// Idempotency-Key header.
func KeyAvisoERP(pedidoID string) (string, error) {
	return joinKey(OpAvisoERP, pedidoID)
}

// KeyPreparacion returns the key of the warehouse preparation of an order:
// "preparacion:<pedido_id>".
func KeyPreparacion(pedidoID string) (string, error) {
	return joinKey(OpPreparacion, pedidoID)
}

// CanonicalHash returns the hex SHA-256 of the canonical JSON encoding of v:
// v is encoded with encoding/json, decoded into generic values, numbers are
// normalised (48.20, 48.2 and 4.82e1 are one number; integers keep every
// digit, even beyond 2^53) and the result is encoded again, which sorts
// object keys. json.RawMessage and []byte holding JSON text are
// canonicalised too.
func CanonicalHash(v any) (string, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("idempotency: canonical hash: %w", err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return "", fmt.Errorf("idempotency: canonical hash: payload is not JSON: %w", err)
	}
	if dec.More() {
		return "", fmt.Errorf("idempotency: canonical hash: trailing data after JSON value")
	}
	canon, err := json.Marshal(canonicalNumbers(generic))
	if err != nil {
		return "", fmt.Errorf("idempotency: canonical hash: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalNumbers rewrites every json.Number in a decoded JSON tree to one
// text per value, so that the encoding a producer happens to use does not
// change the hash.
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonicalNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = canonicalNumbers(e)
		}
		return x
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if n, ok := new(big.Int).SetString(s, 10); ok {
				return json.Number(n.String())
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return x // out of float64 range: keep the text
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		return v
	}
}

// joinKey validates each component: non-empty, valid UTF-8, no ':' (which
// would make "reserva:a:b:c" ambiguous) and no surrounding blanks (a
// trailing space is a different key and a silent double charge).
func joinKey(parts ...string) (string, error) {
	for _, p := range parts {
		switch {
		case p == "":
			return "", fmt.Errorf("%w: empty component in %q", ErrInvalidKey, strings.Join(parts, ":"))
		case !utf8.ValidString(p):
			return "", fmt.Errorf("%w: component is not valid UTF-8", ErrInvalidKey)
		case strings.Contains(p, ":"):
			return "", fmt.Errorf("%w: component %q contains ':'", ErrInvalidKey, p)
		case strings.TrimSpace(p) != p:
			return "", fmt.Errorf("%w: component %q has leading or trailing blanks", ErrInvalidKey, p)
		}
	}
	k := strings.Join(parts, ":")
	return k, validateKey(k)
}

func validateKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(k) > MaxKeyBytes:
		return fmt.Errorf("%w: key is %d bytes, DynamoDB allows %d", ErrInvalidKey, len(k), MaxKeyBytes)
	case !utf8.ValidString(k):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalidKey)
	}
	return nil
}
