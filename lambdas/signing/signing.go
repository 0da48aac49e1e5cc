// Package signing is the signature of an order's charge: HMAC-SHA256, under
// a key only the outbox publisher, the order starter and cobro can read,
// over a canonical, versioned encoding of what the charge depends on (the
// event id, the order id, the amount in cents, the currency and the card
// token). The publisher signs each PedidoCreado; the starter and cobro
// verify it against what they are asked to start and charge, so a forged
// event or a direct invoke with another amount is refused
// (docs/design.md#charge-signature). A signature names its key's id (the
// Secrets Manager version), so Verify accepts every key it is given: the
// current and the previous version during a rotation. Comparison is
// constant-time. Standard library only (and its contract, lambdaapi):
// crypto/hmac is the well-kept library; ours are the encoding and errors.
package signing

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// EnvSecretARN is lambdaapi.EnvSigningSecretARN.
const EnvSecretARN = lambdaapi.EnvSigningSecretARN

// Version is the encoding version, the first part of every signature.
const Version = "v1"

// MinKeyBytes is the shortest key Sign and Verify use
// (lambdaapi.MinSigningKeyBytes).
const MinKeyBytes = lambdaapi.MinSigningKeyBytes

// domain separates this encoding from any other use of the key.
const domain = "mercadofresco/cobro/" + Version

// Errors. Every verification failure wraps ErrInvalid, and one of the
// more precise errors below.
var (
	// ErrInvalid: the signature does not prove that the publisher signed
	// this charge. Permanent: retrying cannot change it.
	ErrInvalid = errors.New("signing: invalid charge signature")
	// ErrMissing: no signature at all.
	ErrMissing = errors.New("signing: no signature")
	// ErrMalformed: not "v1.<key id>.<mac>".
	ErrMalformed = errors.New("signing: malformed signature")
	// ErrUnknownKey: signed with a key the verifier does not hold.
	ErrUnknownKey = errors.New("signing: unknown signing key")
	// ErrMismatch: the MAC does not match the charge (a changed amount,
	// currency, token, order or event, or a forged signature).
	ErrMismatch = errors.New("signing: signature does not match the charge")
	// ErrBadKey: a key shorter than MinKeyBytes or whose id is empty or
	// contains '.'.
	ErrBadKey = errors.New("signing: unusable key")
)

// Charge is what a charge depends on: every field is signed.
type Charge struct {
	EventID     string // the outbox row id (id_evento)
	OrderID     string // pedido_id
	AmountCents int64  // total_centimos
	Currency    string // moneda (ISO 4217)
	CardToken   string // token_tarjeta
}

// Verifier checks a charge's signature with the keys it holds
// (*SecretSource reads them from Secrets Manager). A bad signature
// wraps ErrInvalid; any other error is a failure to check (transient).
type Verifier interface {
	Verify(ctx context.Context, c Charge, sig string) error
}

// Key is one signing key: ID is its Secrets Manager version id.
type Key struct {
	ID     string
	Secret []byte
}

func (k Key) check() error {
	if len(k.Secret) < MinKeyBytes || k.ID == "" || strings.Contains(k.ID, ".") {
		return fmt.Errorf("%w: key %q has %d bytes (at least %d) or an id that is empty or has '.'", ErrBadKey, k.ID, len(k.Secret), MinKeyBytes)
	}
	return nil
}

// Canonical is the signed encoding of c: the domain, then each field as an
// 8-byte big-endian length and its bytes (the amount as 8 bytes), so no
// two different charges encode alike.
func Canonical(c Charge) []byte {
	var b []byte
	field := func(s string) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	field(domain)
	field(c.EventID)
	field(c.OrderID)
	b = binary.BigEndian.AppendUint64(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(c.AmountCents))
	field(c.Currency)
	field(c.CardToken)
	return b
}

func mac(k Key, c Charge) []byte {
	h := hmac.New(sha256.New, k.Secret)
	h.Write(Canonical(c))
	return h.Sum(nil)
}

// Sign returns the signature of c under k: "v1.<key id>.<base64url MAC>".
func Sign(k Key, c Charge) (string, error) {
	if err := k.check(); err != nil {
		return "", err
	}
	return Version + "." + k.ID + "." + base64.RawURLEncoding.EncodeToString(mac(k, c)), nil
}

func parse(sig string) (keyID string, sum []byte, err error) {
	if sig == "" {
		return "", nil, fmt.Errorf("%w: %w", ErrInvalid, ErrMissing)
	}
	parts := strings.Split(sig, ".")
	if len(parts) != 3 || parts[0] != Version || parts[1] == "" {
		return "", nil, fmt.Errorf("%w: %w: want %s.<key id>.<mac>", ErrInvalid, ErrMalformed, Version)
	}
	sum, derr := base64.RawURLEncoding.DecodeString(parts[2])
	if derr != nil || len(sum) != sha256.Size {
		return "", nil, fmt.Errorf("%w: %w: the mac is not %d bytes of base64url", ErrInvalid, ErrMalformed, sha256.Size)
	}
	return parts[1], sum, nil
}

// Verify checks that sig is a signature of c under one of keys (the key
// the signature names). Errors wrap ErrInvalid and ErrMissing, ErrMalformed,
// ErrUnknownKey or ErrMismatch; a key given that is unusable wraps ErrBadKey.
func Verify(keys []Key, c Charge, sig string) error {
	id, sum, err := parse(sig)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID != id {
			continue
		}
		if err := k.check(); err != nil {
			return err
		}
		if !hmac.Equal(mac(k, c), sum) {
			return fmt.Errorf("%w: %w (order %s, event %s)", ErrInvalid, ErrMismatch, c.OrderID, c.EventID)
		}
		return nil
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return fmt.Errorf("%w: %w: key %q (held: %v)", ErrInvalid, ErrUnknownKey, id, ids)
}
