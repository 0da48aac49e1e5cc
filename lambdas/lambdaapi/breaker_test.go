package lambdaapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestBreakerAccessString(t *testing.T) {
	cmds := " -@all +evalsha +eval +hmget +hget +hset +hincrby +hdel +pexpire"
	for _, tc := range []struct {
		name, prefix string
		deps         []string
		want, err    string
	}{
		{name: "one breaker", prefix: "mf:breaker:", deps: []string{"pasarela"}, want: "on ~mf:breaker:{pasarela}" + cmds},
		{name: "two, deduplicated", prefix: "mf:breaker:", deps: []string{"correo-secundario", "ses", "ses"},
			want: "on ~mf:breaker:{correo-secundario} ~mf:breaker:{ses}" + cmds},
		{name: "glob characters escaped", prefix: `t*?[x]\:`, deps: []string{"a"}, want: `on ~t\*\?\[x\]\\:{a}` + cmds},
		{name: "no dependency", prefix: "p:", err: "no dependency"},
		{name: "space in prefix", prefix: "a b:", deps: []string{"x"}, err: "white space"},
		{name: "bad dependencies, all reported", prefix: "p:", deps: []string{"", "a b", "{x}"}, err: `"{x}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lambdaapi.BreakerAccessString(tc.prefix, tc.deps...)
			if tc.err != "" {
				if !errors.Is(err, lambdaapi.ErrAccessString) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want ErrAccessString with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestBreakerKey(t *testing.T) {
	if got := lambdaapi.BreakerKey(lambdaapi.BreakerKeyPrefix, "pasarela"); got != "mf:breaker:{pasarela}" {
		t.Fatal(got)
	}
}
