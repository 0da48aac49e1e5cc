package signing_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/lambdas/signing"
)

var (
	current  = signing.Key{ID: "v-2", Secret: bytes.Repeat([]byte("k"), 32)}
	previous = signing.Key{ID: "v-1", Secret: bytes.Repeat([]byte("p"), 40)}
	other    = signing.Key{ID: "v-2", Secret: bytes.Repeat([]byte("x"), 32)} // same id, another secret: a forger's
	charge   = signing.Charge{EventID: "e-1", OrderID: "P-1", AmountCents: 4820, Currency: "EUR", CardToken: "tok_1"}
)

// keyID is the key id a signature names ("v1.<key id>.<mac>").
func keyID(sig string) string { return strings.SplitN(sig+"..", ".", 3)[1] }

func mustSign(t *testing.T, k signing.Key, c signing.Charge) string {
	t.Helper()
	s, err := signing.Sign(k, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	good := mustSign(t, current, charge)
	changed := func(f func(*signing.Charge)) signing.Charge { c := charge; f(&c); return c }
	cases := []struct {
		name   string
		keys   []signing.Key
		charge signing.Charge
		sig    string
		want   error // nil: accepted
	}{
		{"signed with the current key", []signing.Key{current, previous}, charge, good, nil},
		{"signed with the previous key", []signing.Key{current, previous}, charge, mustSign(t, previous, charge), nil},
		{"missing", []signing.Key{current}, charge, "", signing.ErrMissing},
		{"malformed", []signing.Key{current}, charge, "firma", signing.ErrMalformed},
		{"other version", []signing.Key{current}, charge, "v9" + strings.TrimPrefix(good, "v1"), signing.ErrMalformed},
		{"mac not base64", []signing.Key{current}, charge, "v1.v-2.***", signing.ErrMalformed},
		{"unknown key", []signing.Key{previous}, charge, good, signing.ErrUnknownKey},
		{"wrong key", []signing.Key{current}, charge, mustSign(t, other, charge), signing.ErrMismatch},
		{"amount changed", []signing.Key{current}, changed(func(c *signing.Charge) { c.AmountCents = 1 }), good, signing.ErrMismatch},
		{"currency changed", []signing.Key{current}, changed(func(c *signing.Charge) { c.Currency = "USD" }), good, signing.ErrMismatch},
		{"token changed", []signing.Key{current}, changed(func(c *signing.Charge) { c.CardToken = "tok_2" }), good, signing.ErrMismatch},
		{"order changed", []signing.Key{current}, changed(func(c *signing.Charge) { c.OrderID = "P-2" }), good, signing.ErrMismatch},
		{"event changed", []signing.Key{current}, changed(func(c *signing.Charge) { c.EventID = "e-2" }), good, signing.ErrMismatch},
		{"short verifying key", []signing.Key{{ID: "v-2", Secret: []byte("short")}}, charge, good, signing.ErrBadKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := signing.Verify(tc.keys, tc.charge, tc.sig)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || (tc.want != signing.ErrBadKey && !errors.Is(err, signing.ErrInvalid)) {
				t.Fatalf("Verify = %v, want %v (and ErrInvalid)", err, tc.want)
			}
		})
	}
}

func TestSignRefusesUnusableKeys(t *testing.T) {
	for _, k := range []signing.Key{
		{ID: "v", Secret: bytes.Repeat([]byte("k"), signing.MinKeyBytes-1)},
		{ID: "", Secret: current.Secret},
		{ID: "a.b", Secret: current.Secret},
	} {
		if _, err := signing.Sign(k, charge); !errors.Is(err, signing.ErrBadKey) {
			t.Errorf("Sign with key %q (%d bytes) = %v, want ErrBadKey", k.ID, len(k.Secret), err)
		}
	}
}

// Fields that concatenate alike must not encode alike.
func TestCanonicalSeparatesFields(t *testing.T) {
	a := signing.Charge{EventID: "ab", OrderID: "c", AmountCents: 1, Currency: "EUR", CardToken: "t"}
	b := signing.Charge{EventID: "a", OrderID: "bc", AmountCents: 1, Currency: "EUR", CardToken: "t"}
	if bytes.Equal(signing.Canonical(a), signing.Canonical(b)) {
		t.Fatal("two charges share an encoding")
	}
	if id := keyID(mustSign(t, current, a)); id != current.ID {
		t.Fatalf("key id = %q, want %q", id, current.ID)
	}
}
