package failure_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/lambdas/failure"
)

var errInner = errors.New("inner")

func TestMatching(t *testing.T) {
	declined := failure.Permanent("tarjeta_rechazada", errors.New("card declined"))
	replay := &failure.Error{Kind: failure.KindPermanent, Code: "tarjeta_rechazada", Err: errors.New("gateway: card declined"), Replayed: true}
	for _, tc := range []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"replay matches sentinel", replay, declined, true},
		{"wrapped replay matches sentinel", errors.Join(errors.New("x"), replay), declined, true},
		{"replay matches ErrPermanent", replay, failure.ErrPermanent, true},
		{"permanent is not poison", replay, failure.ErrPoison, false},
		{"poison matches ErrPoison", failure.Poisonf("bad: %w", errInner), failure.ErrPoison, true},
		{"other code does not match", replay, failure.Permanent("otro", errInner), false},
		{"empty codes do not match", &failure.Error{}, &failure.Error{}, false},
		{"Permanent keeps the cause", failure.Permanent("c", errInner), errInner, true},
		{"Permanent(nil) is nil", failure.Permanent("c", nil), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(tc.err, tc.target); got != tc.want {
				t.Fatalf("errors.Is = %v, want %v", got, tc.want)
			}
		})
	}
	if !strings.Contains(replay.Error(), "recorded") {
		t.Errorf("replayed error text %q does not say it was recorded", replay.Error())
	}
}

// The outermost mark decides: a transient wrapper around a permanent cause
// (an HTTP client's verdict around its retrier's) is transient.
func TestOutermostMarkDecides(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind failure.Kind
		code string
	}{
		{errInner, failure.KindTransient, ""},
		{fmt.Errorf("k: %w", failure.Permanent("rechazado", errInner)), failure.KindPermanent, "rechazado"},
		{failure.Transient(failure.Permanent("", errInner)), failure.KindTransient, ""},
		{failure.Poison(errInner), failure.KindPoison, ""},
		{failure.RetryAfter(errInner, 5), failure.KindTransient, ""},
	} {
		if k, c := failure.KindOf(tc.err), failure.CodeOf(tc.err); k != tc.kind || c != tc.code {
			t.Errorf("%v: kind %s code %q, want %s %q", tc.err, k, c, tc.kind, tc.code)
		}
	}
	if failure.Transient(nil) != nil || failure.Permanent("c", nil) != nil || failure.Poison(nil) != nil || failure.RetryAfter(nil, 5) != nil {
		t.Error("marking nil must give nil")
	}
}
