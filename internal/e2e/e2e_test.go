package e2e

import (
	"context"
	"flag"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/redis/go-redis/v9"
)

type redisLog struct{ w io.Writer }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(l.w, "go-redis: "+format+"\n", v...)
}

var (
	flagFull   = flag.Bool("e2e.full", false, "run the full scenario (1,000 orders, 30 s outage) instead of the short one")
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
	Short = Scenario{Orders: 100, Burst: 2 * time.Minute, Outage: 20 * time.Second, OutageAt: 0.3, PublisherKills: 3,
		Poison: 20, PoisonEach: 5, BadData: 2, RedisDown: time.Second, RedisAt: 0.6, Carts: 12, Limit: 80 * time.Second}
	Full = Scenario{Orders: 1000, Burst: 15 * time.Minute, Outage: 30 * time.Second, OutageAt: 0.35, PublisherKills: 5,
		Poison: 20, PoisonEach: 5, BadData: 2, RedisDown: 3 * time.Second, RedisAt: 0.6, Carts: 30, Limit: 8 * time.Minute}
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
	switch *flagKeys {
	case "":
	case "ignore", "honour":
		ignoreKeys = *flagKeys == "ignore"
	default:
		t.Fatalf("-e2e.keys=%q: want ignore or honour", *flagKeys)
	}
	root, err := localaws.FindUp("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	// The functions' logs are kept after a run of make e2e (its report
	// names the file), and removed with the test's temp dir otherwise.
	dir := t.TempDir()
	if *flagReport != "" {
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

	seed := testseed.New(t).Seed
	w := NewWorld(t, Options{Env: "prod", TemplatesDir: filepath.Join(root, "test", "testdata", "snapshots"),
		Account: "333333333333", Region: "eu-west-1", ExecScale: 5, WaitScale: 25, Seed: seed, Logs: logs,
		IgnoreKeys: ignoreKeys, KeyRetention: *flagKeep})
	run := NewRun(w, sc)
	rep := run.Execute(context.Background())
	md := rep.Markdown()
	t.Logf("functions' logs: %s\n%s", logPath, md)
	if *flagReport != "" {
		if err := os.WriteFile(*flagReport, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range rep.Check() {
		t.Error(b)
	}
}
