package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// rehearsal is the sandbox served over HTTP for a test, with commands run
// in-process as an operator would type them.
type rehearsal struct {
	sb  *sandbox
	url string
	ctx context.Context
}

func newRehearsal(t *testing.T, scenario string) *rehearsal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	sb, err := newSandbox(scenario, "dev", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sb.handler())
	t.Cleanup(srv.Close)
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "sandbox", "AWS_SECRET_ACCESS_KEY": "sandbox", "AWS_REGION": "eu-west-1", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none")} {
		t.Setenv(k, v)
	}
	return &rehearsal{sb: sb, url: srv.URL, ctx: ctx}
}

// run runs one mf-dlq command line (fields split on spaces) and returns
// its exit code, stdout and stderr.
func (r *rehearsal) run(line string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(r.ctx, strings.Fields(strings.TrimPrefix(line, "mf-dlq ")), &out, &errb)
	return code, out.String(), errb.String()
}

func (r *rehearsal) depth(t *testing.T, base string) int {
	t.Helper()
	for _, m := range r.sb.sources {
		if m.name == base {
			st, err := r.sb.sqs.Inspect(m.url)
			if err != nil {
				t.Fatal(err)
			}
			return len(st)
		}
	}
	out, err := r.sb.sqs.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: &base})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.sb.sqs.Inspect(*out.QueueUrl)
	return len(st)
}

var (
	devSource = catalog.PhysicalName(catalog.PedidosQueueName, "dev")
	devDLQ    = catalog.PhysicalName(catalog.PedidosDLQName, "dev")
)

// TestRehearsalMixtureOnlyTransient: in the mixture, classify finds 10
// poison, 30 data and 80 transient; a plain redrive is refused with the
// reason and moves nothing; redrive --only transient moves exactly the
// transient ones, and the dry run shows the counts per verdict.
func TestRehearsalMixtureOnlyTransient(t *testing.T) {
	r := newRehearsal(t, "mixture")
	code, out, errb := r.run("classify Pedidos -e dev --json --endpoint-url " + r.url)
	var rep dlq.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || rep.Verdict != dlq.Mixed {
		t.Fatalf("classify: %d %v\n%s%s", code, err, out, errb)
	}
	byClass := map[dlq.Verdict]int{}
	transient := map[string]bool{}
	for _, m := range rep.Messages {
		byClass[m.Class]++
		if m.Class == dlq.Transient {
			transient[m.PedidoID] = true
		}
		if m.PedidoID == "" && m.Class != dlq.Poison {
			t.Errorf("message %s without pedido_id", m.MessageID)
		}
	}
	if byClass[dlq.Poison] != 10 || byClass[dlq.Data] != 30 || byClass[dlq.Transient] != 80 {
		t.Fatalf("classify: %v", byClass)
	}

	code, out, errb = r.run("redrive Pedidos -e dev --confirm-fixed --endpoint-url " + r.url)
	if code != exitRefused || !strings.Contains(errb, "10 poison and 30 data") || !strings.Contains(errb, "--only transient") || r.depth(t, devSource) != 0 {
		t.Fatalf("plain redrive with poison: %d, source %d\n%s%s", code, r.depth(t, devSource), out, errb)
	}

	code, out, errb = r.run("redrive Pedidos -e dev --only transient --dry-run --endpoint-url " + r.url)
	if code != exitOK || !strings.Contains(out, "80 transient (move), 30 data (stay), 10 poison (stay)") {
		t.Errorf("dry run: %d\n%s%s", code, out, errb)
	}

	code, out, errb = r.run("redrive Pedidos -e dev --only transient --confirm-fixed --rate 500 --json --endpoint-url " + r.url)
	var res dlq.RedriveResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitOK {
		t.Fatalf("redrive --only transient: %d %v\n%s%s", code, err, out, errb)
	}
	if res.Moved != 80 || res.Unselected != 40 || r.depth(t, devSource) != 80 || r.depth(t, devDLQ) != 40 {
		t.Fatalf("moved %d, left %d; source %d, DLQ %d\n%s", res.Moved, res.Unselected, r.depth(t, devSource), r.depth(t, devDLQ), errb)
	}
	st, _ := r.sb.sqs.Inspect(r.sb.sources[0].url)
	for _, m := range st {
		var body struct {
			PedidoID string `json:"pedido_id"`
		}
		if json.Unmarshal([]byte(m.Body), &body) != nil || !transient[body.PedidoID] {
			t.Errorf("moved a message classify did not call transient: %.80s", m.Body)
		}
	}
	if !strings.HasPrefix(res.Next, "mf-dlq verify "+devDLQ+" --expect 80 --since ") || !strings.HasSuffix(res.Next, "--endpoint-url "+r.url) {
		t.Errorf("next: %q (want verify with the endpoint given)", res.Next)
	}
}

// TestRehearsalVerify: with the consumer disabled (contain
// --disable-consumer, served by the sandbox), redrive's suggested verify
// says NOT VERIFIED (consumer disabled, backlog waiting, too few
// deletions); once re-enabled and the consumer has drained the source,
// the same command says VERIFIED. CloudWatch unreachable is unknown, not 0.
func TestRehearsalVerify(t *testing.T) {
	r := newRehearsal(t, "transient-burst")
	code, out, errb := r.run("contain Pedidos -e dev --window 10ms --samples 2 --disable-consumer --endpoint-url " + r.url)
	if code != exitOK || !strings.Contains(out, "is now Disabled") {
		t.Fatalf("contain --disable-consumer: %d\n%s%s", code, out, errb)
	}
	code, out, errb = r.run("redrive Pedidos -e dev --confirm-fixed --rate 500 --endpoint-url " + r.url)
	if code != exitOK {
		t.Fatalf("redrive: %d\n%s%s", code, out, errb)
	}
	var next string
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "next: "); ok {
			next = s
		}
	}
	if !strings.Contains(next, "--expect 120") || !strings.Contains(next, "--endpoint-url "+r.url) {
		t.Fatalf("next line %q\n%s", next, out)
	}
	if n, _ := r.sb.consumeOnce(r.ctx); n != 0 {
		t.Fatalf("a disabled consumer deleted %d", n)
	}
	code, out, errb = r.run(next + " --window 10ms")
	if code != exitNotVerified || !strings.Contains(out, "is Disabled") || !strings.Contains(out, "120 messages waiting") ||
		!strings.Contains(out, "deleted 0 messages") || strings.Contains("\n"+out, "\nVERIFIED:") {
		t.Fatalf("verify while disabled: %d\n%s%s", code, out, errb)
	}
	if code, out, errb = r.run("contain Pedidos -e dev --window 10ms --samples 2 --enable-consumer --endpoint-url " + r.url); code != exitOK {
		t.Fatalf("contain --enable-consumer: %d\n%s%s", code, out, errb)
	}
	// Enabled but not yet run: the backlog is still there.
	if code, out, _ = r.run(next + " --window 10ms"); code != exitNotVerified || !strings.Contains(out, "120 messages waiting") {
		t.Fatalf("verify before the drain: %d\n%s", code, out)
	}
	if n, err := r.sb.consumeOnce(r.ctx); n != 120 || err != nil {
		t.Fatalf("the consumer deleted %d: %v", n, err)
	}
	if code, out, errb = r.run(next); code != exitOK || !strings.Contains("\n"+out, "\nVERIFIED:") || !strings.Contains(out, "deleted 120 messages") {
		t.Fatalf("verify after the drain: %d\n%s%s", code, out, errb)
	}
	// The same check against an endpoint without CloudWatch: unknown.
	code, out, _ = r.run(strings.Replace(next, r.url, r.url+"/nowhere", 1))
	if code == exitOK {
		t.Errorf("verify with nothing served said yes:\n%s", out)
	}
}

// TestRehearsalExpired: the expired scenario classifies expired (14);
// redrive leaves them (5) and --readmit-expired sends them back marked,
// and the sandbox consumer then accepts them.
func TestRehearsalExpired(t *testing.T) {
	r := newRehearsal(t, "expired")
	if code, out, _ := r.run("classify Pedidos -e dev --endpoint-url " + r.url); code != exitOK || !strings.Contains(out, "verdict: EXPIRED") {
		t.Fatalf("classify: %d\n%s", code, out)
	}
	if code, _, errb := r.run("redrive Pedidos -e dev --confirm-fixed --endpoint-url " + r.url); code != exitRefused || r.depth(t, devSource) != 0 {
		t.Fatalf("redrive: %d\n%s", code, errb)
	}
	if code, out, errb := r.run("redrive Pedidos -e dev --only expired --readmit-expired --confirm-fixed --rate 500 --endpoint-url " + r.url); code != exitOK || !strings.Contains(out, "12 of them were older") {
		t.Fatalf("redrive --readmit-expired: %d\n%s%s", code, out, errb)
	}
	st, _ := r.sb.sqs.Inspect(r.sb.sources[0].url)
	for _, m := range st {
		if _, ok := m.MessageAttributes[lambdaapi.AttrReadmision]; !ok {
			t.Fatalf("redriven without the re-admission mark")
		}
	}
	if n, _ := r.sb.consumeOnce(r.ctx); n != 12 {
		t.Errorf("the consumer accepted %d of the 12 re-admitted", n)
	}
}

// TestInicioBuffer: the order starter's buffer is nameable with -e and
// classify applies its 89-day window on detail.creado_en.
func TestInicioBuffer(t *testing.T) {
	r := newRehearsal(t, "malformed")
	q, err := r.sb.sqs.GetQueueUrl(r.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(catalog.PhysicalName(catalog.InicioDLQName, "dev"))})
	if err != nil {
		t.Fatal(err)
	}
	url := *q.QueueUrl
	for i, age := range []time.Duration{100 * 24 * time.Hour, 10 * 24 * time.Hour} {
		body := fmt.Sprintf(`{"detail-type":"PedidoCreado","detail":{"version":1,"pedido_id":"PED-2026-%06d","cliente_id":"CLI-1","cliente":{"id":"CLI-1","email":"ana@example.com"},`+
			`"total_centimos":1250,"moneda":"EUR","lineas":[{"sku":"S-1","cantidad":1,"precio_centimos":1250}],"token_tarjeta":"tok_1","creado_en":%q}}`, i, time.Now().Add(-age).UTC().Format(time.RFC3339))
		if _, err := r.sb.sqs.SendMessage(r.ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errb := r.run("classify Inicio -e dev --json --endpoint-url " + r.url)
	var rep dlq.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || rep.Verdict != dlq.Mixed {
		t.Fatalf("classify Inicio: %d %v\n%s%s", code, err, out, errb)
	}
	got := map[string]dlq.Verdict{}
	for _, m := range rep.Messages {
		got[m.PedidoID] = m.Class
	}
	if got["PED-2026-000000"] != dlq.Expired || got["PED-2026-000001"] != dlq.Transient {
		t.Errorf("classes %v (want the 100-day-old expired under the 89-day window, the 10-day-old transient)", got)
	}
}

// TestEveryCommandHelp: --help prints each command's usage and flags to
// stdout and exits 0; the runbook's flags are there.
func TestEveryCommandHelp(t *testing.T) {
	runbookFlags := map[string][]string{"contain": {"-samples"}, "classify": {"-max"}, "redrive": {"-max", "-only", "-rate"}, "verify": {"-expect", "-since"}}
	for _, c := range commands {
		name := c.name
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{name, "--help"}, &out, &errb)
		if code != exitOK || !strings.HasPrefix(out.String(), "usage: mf-dlq "+name) {
			t.Errorf("%s --help: exit %d\n%s%s", name, code, out.String(), errb.String())
		}
		for _, f := range append(runbookFlags[name], "-json") {
			if !strings.Contains(out.String(), "  "+f+" ") && !strings.Contains(out.String(), "  "+f+"\n") {
				t.Errorf("%s --help lacks %s:\n%s", name, f, out.String())
			}
		}
	}
}

// TestEveryCommandJSON: each command's --json output parses.
func TestEveryCommandJSON(t *testing.T) {
	r := newRehearsal(t, "malformed")
	for _, line := range []string{
		"contain Pedidos -e dev --window 10ms --samples 2",
		"inspect Pedidos -e dev -n 3",
		"classify Pedidos -e dev",
		"redrive Pedidos -e dev --only transient --dry-run",
		"verify Pedidos -e dev --window 10ms",
	} {
		_, out, errb := r.run(line + " --json --endpoint-url " + r.url)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil || v == nil {
			t.Errorf("%s --json: %v\n%s\n%s", line, err, out, errb)
		}
	}
	// sandbox --json prints its endpoint first, then serves until stopped.
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"sandbox", "--scenario", "malformed", "--json"}, pw, io.Discard)
		pw.Close()
		done <- code
	}()
	var info sandboxInfo
	if err := json.NewDecoder(pr).Decode(&info); err != nil || !strings.HasPrefix(info.EndpointURL, "http://") || info.Messages != 25 {
		t.Errorf("sandbox --json: %+v %v", info, err)
	}
	cancel()
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain until the writer closes
	if code := <-done; code != exitOK {
		t.Errorf("sandbox exit %d", code)
	}
}

// TestRateFlags: --rate 0 is refused, a fractional rate is held.
func TestRateFlags(t *testing.T) {
	r := newRehearsal(t, "malformed")
	base := "redrive Pedidos -e dev --only poison --confirm-fixed --endpoint-url " + r.url
	if code, _, errb := r.run(base + " --rate 0"); code != exitUsage || !strings.Contains(errb, "--rate 0") {
		t.Errorf("--rate 0: %d %s", code, errb)
	}
	if code, out, errb := r.run(base + " --rate 0.5 --dry-run"); code != exitOK || !strings.Contains(out, "at 0.5 msg/s") || !strings.Contains(out, "receive → send → delete") {
		t.Errorf("--rate 0.5: %d %s%s", code, out, errb)
	}
}
