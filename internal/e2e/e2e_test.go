package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"

	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/redis/go-redis/v9"
)

type redisLog struct{ w io.Writer }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(l.w, "go-redis: "+format+"\n", v...)
}

var (
	flagFull   = flag.Bool("e2e.full", false, "run the full scenario (1,000 orders, 30 s outage) instead of the short one")
	flagFriday = flag.Bool("e2e.friday", false, "run ten times Friday (9,000 orders in 4 bursts over an hour, the external services honouring keys) instead of the short one")
	flagReport = flag.String("e2e.report", "", "write the report (Markdown) to this file")
	flagKeys   = flag.String("e2e.keys", "", `"ignore": the external services perform every request whatever its Idempotency-Key; "honour": they de-duplicate by it; default: ignore for the short run, honour for the full one`)
	flagKeep   = flag.Duration("e2e.retention", 0, "how long the services keep an Idempotency-Key's answer, on the run's clock (default 24h)")
)

func TestMain(m *testing.M) {
	RunChild() // a child process of a run does its part and exits
	os.Exit(m.Run())
}

// Short is the scenario of `make test`; Full is `make e2e`'s.
var (
	Short = Scenario{Orders: 100, SKUs: 40, Burst: 2 * time.Minute, Outage: 20 * time.Second, OutageAt: 0.3, PublisherKills: 3,
		Poison: 20, PoisonEach: 5, BadData: 2, RedisDown: time.Second, RedisAt: 0.6, Carts: 12, Limit: 80 * time.Second}
	Full = Scenario{Orders: 1000, SKUs: 40, Burst: 15 * time.Minute, Outage: 30 * time.Second, OutageAt: 0.35, PublisherKills: 5,
		Poison: 20, PoisonEach: 5, BadData: 2, RedisDown: 3 * time.Second, RedisAt: 0.6, Carts: 30, Limit: 8 * time.Minute}
	// TenFridays is `make e2e-friday`: a Friday (900 orders an hour in
	// bursts for 4 hours) at ten times its rate, 9,000 orders in an hour,
	// without the outage and the Redis stop, over the shop's catalogue
	// (about 3,400 SKUs, docs/design.md); the payment concurrency is the
	// templates' (docs/design.md#payment-throttle).
	TenFridays = Scenario{Orders: 9000, SKUs: 3400, Burst: time.Hour, Bursts: 4, PublisherKills: 2,
		Poison: 20, PoisonEach: 5, BadData: 2, Carts: 30, Limit: 15 * time.Minute}
)

// TestOrderFlow runs the order flow end to end on this machine from the
// synthesized prod templates, under the scenario's faults, and checks every
// promise of the report (Report.Check). The short run (make test) has the
// external services ignore Idempotency-Key, so that its verdict measures
// the project's own layers; the full run (make e2e) has them honour it
// with a finite retention, and reports what each layer absorbed.
func TestOrderFlow(t *testing.T) {
	sc, ignoreKeys := Short, true
	if *flagFull {
		sc, ignoreKeys = Full, false
	}
	if *flagFriday {
		sc, ignoreKeys = TenFridays, false
	}
	switch *flagKeys {
	case "":
	case "ignore", "honour":
		ignoreKeys = *flagKeys == "ignore"
	default:
		t.Fatalf("-e2e.keys=%q: want ignore or honour", *flagKeys)
	}
	rep := runScenario(t, sc, Options{IgnoreKeys: ignoreKeys, KeyRetention: *flagKeep}, *flagReport)
	for _, b := range rep.Check() {
		t.Error(b)
	}
}

// Claims is TestVerdictCatchesBrokenClaims's scenario: a few orders and,
// of the faults, only those that the idempotency claims alone absorb.
var Claims = Scenario{Orders: 8, SKUs: 10, Burst: 20 * time.Second, ClaimsOnly: true, Limit: time.Minute}

// TestVerdictCatchesBrokenClaims runs the Claims scenario with cobro's and
// the preparation consumer's idempotency claims as written, and written
// without their condition (a DynamoDB that ignores it). Broken, the
// verdict must name a double charge (the cobro run again after Lambda lost
// its answer charges again) and a double preparation (the order whose
// copies of PedidoConfirmado each reach a new sandbox, where no in-process
// cache answers the second); as written, it must find no repeat at all.
func TestVerdictCatchesBrokenClaims(t *testing.T) {
	if *flagFull || *flagFriday || *flagReport != "" {
		t.Skip("the short run only")
	}
	for _, broken := range []bool{false, true} {
		t.Run(map[bool]string{false: "claims as written", true: "claims without their condition"}[broken], func(t *testing.T) {
			opts := Options{IgnoreKeys: true}
			if broken {
				opts.DynamoDB = func(endpoint string) string { return claimsWithoutCondition(t, endpoint, "cobro:", "preparacion:") }
			}
			rep := runScenario(t, Claims, opts, "")
			if rep.Quiet != "" {
				t.Fatalf("the run did not settle: %s", rep.Quiet)
			}
			bad := rep.unexplained()
			for _, want := range []struct{ dep, order string }{{"gateway charges", rep.LostAnswer.Order}, {"warehouse preparations", rep.ColdCopies}} {
				named := slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, " "+want.dep) && strings.Contains(b, want.order) })
				if named != broken {
					t.Errorf("the verdict names %s of %s: %v, want %v; it found: %q", want.dep, want.order, named, broken, bad)
				}
			}
			if !broken && len(bad) > 0 {
				t.Errorf("with the claims as written the verdict found repeats: %q", bad)
			}
		})
	}
}

// claimsWithoutCondition is DynamoDB (a proxy to endpoint) writing the
// idempotency claims (PutItem of an EN_CURSO record) of the keys with one of
// the prefixes without their condition, as a client that dropped it would.
func claimsWithoutCondition(t *testing.T, endpoint string, prefixes ...string) string {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // calls abandoned at a deadline
	next := proxy.Director
	proxy.Director = func(r *http.Request) {
		next(r)
		if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".PutItem") {
			return
		}
		body, _ := io.ReadAll(r.Body)
		var in map[string]any
		if json.Unmarshal(body, &in) == nil {
			item, _ := in["Item"].(map[string]any)
			key, _ := item["clave"].(map[string]any)
			estado, _ := item["estado"].(map[string]any)
			k, _ := key["S"].(string)
			if estado["S"] == "EN_CURSO" && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
				for _, f := range []string{"ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues", "ReturnValuesOnConditionCheckFailure"} {
					delete(in, f)
				}
				body, _ = json.Marshal(in)
			}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Set("Content-Length", fmt.Sprint(len(body)))
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// runScenario runs sc on a new World with opts (its environment, scales,
// seed and logs set here) and returns the report, written to report when
// not empty.
func runScenario(t *testing.T, sc Scenario, opts Options, report string) *Report {
	root, err := gobuild.FindUp("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	// The functions' logs are kept after a run of make e2e (its report
	// names the file), and removed with the test's temp dir otherwise.
	dir := t.TempDir()
	if report != "" {
		dir = ""
	}
	logs, err := os.CreateTemp(dir, "mf-e2e-functions-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	logPath := logs.Name()
	// The functions log to stdout, as in Lambda: to the log file here.
	stdout := os.Stdout
	os.Stdout = logs
	t.Cleanup(func() { os.Stdout = stdout })
	redis.SetLogger(redisLog{logs}) // go-redis's own reports of the Redis restart

	opts.Env, opts.TemplatesDir = "prod", filepath.Join(root, "test", "testdata", "snapshots")
	opts.Account, opts.Region, opts.ExecScale, opts.WaitScale = "333333333333", "eu-west-1", 5, 25
	opts.Seed, opts.Logs = testseed.New(t).Seed, logs
	w := NewWorld(t, opts)
	rep := NewRun(w, sc).Execute(context.Background())
	md := rep.Markdown()
	t.Logf("functions' logs: %s\n%s", logPath, md)
	if report != "" {
		if err := os.WriteFile(report, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rep
}
