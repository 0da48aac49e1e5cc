package httpdep_test

import (
	"context"
	"errors"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/retry"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rotatingKeys serves "old" until Refresh, then "new".
type rotatingKeys struct{ refreshed atomic.Int32 }

func (k *rotatingKeys) APIKey(context.Context) (string, error) {
	if k.refreshed.Load() > 0 {
		return "new", nil
	}
	return "old", nil
}

func (k *rotatingKeys) Refresh(context.Context) (string, error) {
	k.refreshed.Add(1)
	return "new", nil
}

// spentCalls is a CallCounter with no call left.
type spentCalls struct{}

func (spentCalls) Take(context.Context, string) error { return errors.New("calls spent") }
func (spentCalls) Refund(context.Context, string)     {}

func client(t *testing.T, srv *localaws.Service, keys httpdep.KeySource, br *breaker.Breaker) *httpdep.Client {
	t.Helper()
	return clientWith(t, srv, httpdep.Config{Keys: keys, Breaker: br})
}

func clientWith(t *testing.T, srv *localaws.Service, cfg httpdep.Config) *httpdep.Client {
	t.Helper()
	r, err := retry.New(retry.Policy{MaxAttempts: 3}, retry.WithClock(retry.NewVirtualClock(time.Now())), retry.WithRand(retry.NewSeeded(1)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name, cfg.BaseURL, cfg.Retrier, cfg.ReadTimeout, cfg.HTTPClient = "almacen", srv.URL(), r, time.Second, srv.Client()
	c, err := httpdep.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClassification(t *testing.T) {
	for _, tc := range []struct {
		name      string
		faults    []localaws.Rule
		answer    localaws.ServiceResponse
		kind      error // nil: success
		requests  int
		sent      bool
		code      string
		accept    string // the only API key the server takes ("": any)
		refreshes int32  // of the API key (a 401 reads it again once per attempt)
		calls     httpdep.CallCounter
	}{
		{name: "created", answer: localaws.JSON(201, `{"id":"x"}`), requests: 1},
		{name: "refused", answer: localaws.JSON(422, `{"codigo":"pedido_cancelado","mensaje":"cancelado"}`), kind: httpdep.ErrRejected, requests: 1, sent: true, code: "pedido_cancelado"},
		{name: "5xx retried then unavailable", faults: []localaws.Rule{{Fault: localaws.Fault{Status: 503}}}, kind: httpdep.ErrUnavailable, requests: 3, sent: true, code: "fallo_inyectado"},
		{name: "409 retried", faults: []localaws.Rule{{Times: 1, Fault: localaws.Fault{Status: 409}}}, answer: localaws.JSON(201, `{"id":"x"}`), requests: 2},
		{name: "timeout after the effect retried with the key", faults: []localaws.Rule{{Times: 1, Fault: localaws.Fault{HangAfterEffect: true}}}, answer: localaws.JSON(201, `{"id":"x"}`), requests: 2},
		{name: "reset retried", faults: []localaws.Rule{{Times: 2, Fault: localaws.Fault{Reset: true}}}, answer: localaws.JSON(201, `{"id":"x"}`), requests: 3},
		{name: "undecodable 2xx", answer: localaws.JSON(201, `not json`), kind: httpdep.ErrUnavailable, requests: 3, sent: true},
		{name: "401 reads the key again and sends once more", accept: "new", answer: localaws.JSON(201, `{"id":"x"}`), requests: 2, refreshes: 1},
		// docs/design.md#http-dependencies: the key, not the request, was
		// refused; not retried within the call, not recorded as a refusal.
		{name: "401 after reading the key again is unavailable", faults: []localaws.Rule{{Fault: localaws.Fault{Status: 401}}}, kind: httpdep.ErrUnavailable, requests: 2, sent: true, code: "fallo_inyectado", refreshes: 1},
		{name: "call cap spent: nothing sent", answer: localaws.JSON(201, `{"id":"x"}`), kind: httpdep.ErrUnavailable, calls: spentCalls{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := localaws.NewService(func(localaws.ServiceRequest) localaws.ServiceResponse { return tc.answer },
				localaws.WithPrecheck(func(r localaws.ServiceRequest) *localaws.ServiceResponse {
					if tc.accept != "" && r.Header.Get("Authorization") != "Bearer "+tc.accept {
						resp := localaws.JSON(401, `{}`)
						return &resp
					}
					return nil
				}))
			t.Cleanup(srv.Close)
			srv.Inject(tc.faults...)
			var out struct{ ID string }
			keys := &rotatingKeys{}
			err := clientWith(t, srv, httpdep.Config{Keys: keys, Calls: tc.calls}).Post(context.Background(), "/v1/x", "preparacion:P1", map[string]string{"a": "b"}, &out)
			if n := len(srv.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if n := keys.refreshed.Load(); n != tc.refreshes {
				t.Errorf("%d key refreshes, want %d", n, tc.refreshes)
			}
			if tc.kind == nil {
				if err != nil || out.ID != "x" {
					t.Fatalf("err %v, out %+v", err, out)
				}
				if e := srv.Effects(); len(e) != 1 {
					t.Fatalf("%d effects, want 1 (the key makes retries safe)", len(e))
				}
				return
			}
			var he *httpdep.Error
			if !errors.Is(err, tc.kind) || !errors.As(err, &he) || he.Sent != tc.sent || he.Code != tc.code {
				t.Fatalf("err %v (%+v), want kind %v sent %v code %q", err, he, tc.kind, tc.sent, tc.code)
			}
			if strings.Count(err.Error(), "almacen /v1/x") != 1 {
				t.Errorf("the message repeats itself: %v", err)
			}
		})
	}
}

func TestNothingSentWhenTheConnectionIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r, _ := retry.New(retry.Policy{MaxAttempts: 2}, retry.WithClock(retry.NewVirtualClock(time.Now())))
	c, err := httpdep.New(httpdep.Config{Name: "erp", BaseURL: "http://" + addr, Keys: httpdep.StaticKey("k"), Retrier: r, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Post(context.Background(), "/v1/x", "k", struct{}{}, nil)
	var he *httpdep.Error
	if !errors.As(err, &he) || he.Sent || !errors.Is(err, httpdep.ErrUnavailable) {
		t.Fatalf("err %v (%+v), want unavailable and not sent", err, he)
	}
}

func TestOpenCircuitStopsAtOnceAndIsRecognisable(t *testing.T) {
	srv := localaws.NewService(func(localaws.ServiceRequest) localaws.ServiceResponse { return localaws.JSON(201, `{}`) })
	t.Cleanup(srv.Close)
	srv.Inject(localaws.Rule{Fault: localaws.Fault{Status: 500}})
	br, err := breaker.New(breaker.NewMemoryStore(), breaker.Config{Name: "almacen", FailureThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, srv, httpdep.StaticKey("k"), br)
	_ = c.Post(context.Background(), "/v1/x", "k1", struct{}{}, nil)
	n := len(srv.Requests())
	err = c.Post(context.Background(), "/v1/x", "k2", struct{}{}, nil)
	var he *httpdep.Error
	if !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, httpdep.ErrUnavailable) || !errors.As(err, &he) || he.Sent {
		t.Fatalf("err %v, want the open circuit, unavailable, not sent", err)
	}
	if len(srv.Requests()) != n {
		t.Fatal("a request went through the open circuit")
	}
}

func TestConfigReportsEveryProblem(t *testing.T) {
	_, err := httpdep.New(httpdep.Config{BaseURL: "almacen.example", ReadTimeout: -1})
	for _, want := range []string{"Name", "BaseURL", "Keys", "Retrier", "ReadTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
