package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/synthesized"
)

// Options configure a World.
type Options struct {
	// Env is the environment whose templates are read ("prod").
	Env string
	// TemplatesDir holds the synthesized templates (the committed
	// snapshots, which the CDK tests prove equal to `cdk synth`).
	TemplatesDir string
	// Account and Region are the environment's (config).
	Account, Region string
	// ExecScale divides how long code may run: Lambda timeouts, task
	// TimeoutSeconds, read timeouts, the breaker's open period and the
	// deadline margin. WaitScale speeds up the harness's simulated clock:
	// SQS visibility and delays, retry waits, EventBridge backoff and the
	// customers' pauses. See the package doc.
	ExecScale, WaitScale float64
	// Seed drives every random choice of the run.
	Seed uint64
	// Logs receives the functions' log lines (their stdout).
	Logs io.Writer
	// IgnoreKeys makes the external services' fakes perform every request,
	// whatever its Idempotency-Key: the run then measures the project's own
	// layers (the verdict admits only the duplicates of uncertain outcomes).
	IgnoreKeys bool
	// KeyRetention is how long the fakes keep an Idempotency-Key's answer,
	// on the run's simulated clock; zero means localaws.DefaultKeyRetention.
	KeyRetention time.Duration
	// DynamoDB, when set, gets dynalite's endpoint and returns the one the
	// functions call instead (a test's faulty DynamoDB in front of it).
	DynamoDB func(endpoint string) string
}

// Queue is one queue of the templates, created in the SQS fake, with the
// dead-letter queue of its redrive policy (nil for none).
type Queue struct {
	Name, URL, ARN string
	FIFO           bool
	Visibility     time.Duration
	DLQ            *Queue
}

// World is the whole app on this machine: the templates' resources made
// local and the fakes they talk to.
type World struct {
	t     testing.TB
	opts  Options
	app   *synthesized.App
	clock *Clock

	rngLock sync.Mutex
	rng     *rand.Rand

	sqs   *localaws.SQS
	ddb   *localaws.Dynalite
	redis *localaws.Redis
	aws   *localaws.Endpoint
	deps  *Dependencies

	db       string
	runRoles map[string]string // the template's role names -> the run's
	writer   string            // the run's writer role
	admin    *pgxpool.Pool

	queues          map[string]*Queue // by name
	queueByResource map[*synthesized.Resource]*Queue
	functions       map[string]*Function
	overrides       []string // human-readable list for the report

	bus *Bus
	sfn *localaws.StepFunctions
}

// Physical gives every resource the run reads the meaning AWS gives it
// (synthesized.Physical: the SQS fake's URLs and ARNs are AWS's), but for
// the RDS proxy and the Valkey cache, which are the local PostgreSQL and
// Redis. A reference to a type it does not know fails the run.
func (w *World) Physical() synthesized.Physical {
	return synthesized.Physical{App: w.app, Local: func(r *synthesized.Resource, attr string) (string, bool) {
		host, port, _ := net.SplitHostPort(w.redis.Addr)
		switch r.Type + "." + attr {
		case "AWS::RDS::DBProxy.Endpoint":
			return "127.0.0.1", true // the local PostgreSQL
		case "AWS::ElastiCache::ServerlessCache.Endpoint.Address":
			return host, true
		case "AWS::ElastiCache::ServerlessCache.Endpoint.Port":
			return port, true
		}
		return "", false
	}}
}

// name is r's physical name.
func (w *World) name(r *synthesized.Resource) string {
	n, err := w.Physical().Name(r)
	if err != nil {
		w.fatalf("%v", err)
	}
	return n
}

// resolve is v, a value of r's template, with its references resolved; a
// reference without a local meaning fails the run.
func (w *World) resolve(r *synthesized.Resource, v any) any {
	out, err := w.app.Resolve(r.Stack, v, w.Physical())
	if err != nil {
		w.fatalf("%s: %v", r.Path(), err)
	}
	return out
}

func (w *World) resolveString(r *synthesized.Resource, v any) (string, error) {
	return w.app.ResolveString(r.Stack, v, w.Physical())
}

// NewWorld loads the templates and starts every local part: dynalite with
// the templates' tables, a private Redis, a private PostgreSQL database with
// the outbox schema applied by the migration custom resource's code, the
// SQS fake with the templates' queues, the AWS API fake and the external
// services' fakes.
func NewWorld(t testing.TB, o Options) *World {
	t.Helper()
	app, err := synthesized.LoadEnv(o.TemplatesDir, o.Env)
	if err != nil {
		t.Fatal(err)
	}
	app.Account, app.Region = o.Account, o.Region
	w := &World{t: t, opts: o, app: app, clock: NewClock(o.WaitScale), rng: rand.New(rand.NewPCG(o.Seed, 0xe2e)),
		queueByResource: map[*synthesized.Resource]*Queue{}, queues: map[string]*Queue{},
		functions: map[string]*Function{}, runRoles: map[string]string{}}

	// localaws.StartDynalite preloads its guard: a request an invocation abandons
	// half-sent (a deadline, a killed process) does not end dynalite.
	w.ddb = localaws.StartDynalite(t)
	w.redis = localaws.StartRedis(t)
	w.createTables()
	w.createQueues()
	w.aws = localaws.NewEndpoint(t, w.sqs)
	w.aws.Now, w.aws.KnownSecretsOnly, w.aws.NoLedger = w.clock.Now, true, true
	w.createSecrets()
	w.setUpDatabase()
	w.startDependencies()
	// What every function's AWS SDK reads from the process environment.
	ddb := w.ddb.Endpoint
	if o.DynamoDB != nil {
		ddb = o.DynamoDB(ddb)
	}
	localaws.UseEndpoint(t, w.aws.URL, map[string]string{"DYNAMODB": ddb, "SESV2": w.deps.SES.URL()})
	w.loadFunctions()
	return w
}

func (w *World) fatalf(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("e2e: "+format, args...)
}

// createTables creates every DynamoDB table of the templates in dynalite
// with its key schema.
func (w *World) createTables() {
	ctx := context.Background()
	for _, r := range w.app.Resources("AWS::DynamoDB::Table") {
		raw, _ := json.Marshal(map[string]any{"AttributeDefinitions": r.Prop("AttributeDefinitions"), "KeySchema": r.Prop("KeySchema")})
		var in dynamodb.CreateTableInput // the template's properties are the API's
		if err := json.Unmarshal(raw, &in); err != nil {
			w.fatalf("table %s: %v", r.Path(), err)
		}
		name := w.name(r)
		in.TableName = aws.String(name)
		in.BillingMode = "PAY_PER_REQUEST"
		if err := w.ddb.Create(ctx, &in); err != nil {
			w.fatalf("create table %s: %v", name, err)
		}
	}
}

func seconds(v any, def time.Duration) time.Duration {
	return time.Duration(synthesized.Number(v, def.Seconds()) * float64(time.Second))
}

// createQueues creates the templates' queues in the SQS fake, dead-letter
// queues first, with their visibility timeout, retention, delay, FIFO
// settings and redrive policy.
func (w *World) createQueues() {
	w.sqs = localaws.NewSQS(localaws.SQSConfig{Now: w.clock.Now, Account: w.opts.Account, Region: w.opts.Region})
	var create func(r *synthesized.Resource) *Queue
	create = func(r *synthesized.Resource) *Queue {
		if q, ok := w.queueByResource[r]; ok {
			return q
		}
		cfg := localaws.QueueConfig{
			VisibilityTimeout: seconds(r.Prop("VisibilityTimeout"), 30*time.Second),
			RetentionPeriod:   seconds(r.Prop("MessageRetentionPeriod"), 4*24*time.Hour),
			Delay:             seconds(r.Prop("DelaySeconds"), 0),
		}
		cfg.ContentBasedDeduplication, _ = r.Prop("ContentBasedDeduplication").(bool)
		var dlq *Queue
		for _, e := range w.app.From(r, synthesized.DeadLetter) {
			dlq = create(e.To)
			n, _ := e.Settings["maxReceiveCount"].(float64)
			cfg.Redrive = &localaws.RedrivePolicy{DeadLetterTargetARN: dlq.ARN, MaxReceiveCount: int(n)}
		}
		name := w.name(r)
		fifo, _ := r.Prop("FifoQueue").(bool)
		url, err := w.sqs.CreateQueue(name, cfg)
		if err != nil {
			w.fatalf("create queue %s: %v", name, err)
		}
		q := &Queue{Name: name, URL: url, ARN: w.sqs.ARN(url), FIFO: fifo, Visibility: cfg.VisibilityTimeout, DLQ: dlq}
		w.queues[name] = q
		w.queueByResource[r] = q
		return q
	}
	for _, r := range w.app.Resources("AWS::SQS::Queue") {
		create(r)
	}
}

// createSecrets gives every secret of the templates, in the endpoint's
// secret store, a value shaped as its GenerateSecretString says
// ({"<key>": ...} or a plain string, at least PasswordLength characters).
func (w *World) createSecrets() {
	for _, r := range w.app.Resources("AWS::SecretsManager::Secret") {
		arn, err := w.Physical().Ref(r)
		if err != nil {
			w.fatalf("%v", err)
		}
		value := fmt.Sprintf("e2e%016x", w.rng.Uint64())
		if g, ok := r.Prop("GenerateSecretString").(map[string]any); ok {
			// As long as the template asks (the signing key needs 32
			// bytes), the value repeated: the run's random sequence is the
			// same whatever the templates ask.
			if n, ok := g["PasswordLength"].(float64); ok {
				value = strings.Repeat(value, int(n)/len(value)+1)[:max(int(n), len(value))]
			}
			if key, ok := g["GenerateStringKey"].(string); ok {
				obj := map[string]any{}
				if tpl, ok := g["SecretStringTemplate"].(string); ok {
					_ = json.Unmarshal([]byte(tpl), &obj)
				}
				obj[key] = value
				b, _ := json.Marshal(obj)
				value = string(b)
			}
		}
		if w.aws.Secret(arn) != "" {
			w.fatalf("two secrets named %s: CloudFormation cannot create the second", arn)
		}
		w.aws.SetSecret(arn, value)
	}
}

// setUpDatabase creates the run's database and applies the outbox schema
// with the migration custom resource's own code (outbox.Migrator on the
// template's Custom::OutboxEsquema properties): roles, migrations as the
// owner role, grants. Role names get a per-run prefix, because roles are
// cluster-wide and two runs may share this PostgreSQL.
func (w *World) setUpDatabase() {
	ctx := context.Background()
	w.db = localaws.NewPostgresDatabase(w.t, "mf_e2e_")
	var res *synthesized.Resource
	for _, r := range w.app.Resources("Custom::OutboxEsquema") {
		res = r
	}
	if res == nil {
		w.fatalf("no Custom::OutboxEsquema in the templates")
	}
	prefix := "e2e" + strings.TrimPrefix(w.db, "mf_e2e_") + "_"
	roles := map[string]any{} // the template's Roles property, with the run's names
	for k, v := range w.resolve(res, res.Prop("Roles")).(map[string]any) {
		name, _ := v.(string)
		roles[k], w.runRoles[name] = prefix+name, prefix+name
	}
	w.writer = str(roles["writer"])
	localaws.DropRolesAtEnd(w.t, w.db, outbox.MigrationLockKey, slices.Collect(maps.Values(w.runRoles))...)
	w.admin = localaws.NewPool(w.t, w.db, "", 4)
	m := &outbox.Migrator{
		Schema:       "public",
		ConnectAdmin: func(context.Context) (outbox.Conn, error) { return localaws.NewPool(w.t, w.db, "", 1), nil },
		ConnectOwner: func(_ context.Context, owner string) (outbox.Conn, error) {
			return localaws.PoolAs(w.t, w.db, "", owner, 1), nil
		},
	}
	ev := cfn.Event{RequestType: cfn.RequestCreate, LogicalResourceID: res.LogicalID, ResourceProperties: map[string]any{
		lambdaapi.MigrationPropertyHash: lambdaapi.SchemaHash(), lambdaapi.MigrationPropertyRoles: roles,
	}}
	if _, err := m.Handle(ctx, ev); err != nil {
		w.fatalf("outbox migration: %v", err)
	}
}

// startDependencies starts the external services' fakes with the API keys
// of the secrets the functions are configured with.
func (w *World) startDependencies() {
	keys := map[string]string{}
	var sesConfigSet string
	for _, fn := range w.app.Resources("AWS::Lambda::Function") {
		vars, _ := fn.Prop("Environment").(map[string]any)
		env, _ := vars["Variables"].(map[string]any)
		for name, v := range env {
			switch {
			case strings.HasSuffix(name, "_SECRET_ARN") && name != "DB_MASTER_SECRET_ARN" && name != "DB_SECRET_ARN":
				arn, err := w.resolveString(fn, v)
				if err != nil {
					w.fatalf("%s %s: %v", fn.Path(), name, err)
				}
				if keys[strings.TrimSuffix(name, "_SECRET_ARN")], err = httpdep.ParseKey(w.aws.Secret(arn)); err != nil {
					w.fatalf("%s %s: %v", fn.Path(), name, err)
				}
			case name == "SES_CONFIGURATION_SET":
				sesConfigSet, _ = w.resolveString(fn, v)
			}
		}
	}
	for _, need := range []string{"GATEWAY", "ALMACEN", "ERP", "CORREO_SECUNDARIO"} {
		if keys[need] == "" {
			w.fatalf("no function reads %s_SECRET_ARN: the templates changed, update the run", need)
		}
	}
	opts := []localaws.ServiceOption{localaws.WithClock(w.clock.Now)}
	switch {
	case w.opts.IgnoreKeys:
		opts = append(opts, localaws.WithoutIdempotency())
	case w.opts.KeyRetention > 0:
		opts = append(opts, localaws.WithKeyRetention(w.opts.KeyRetention))
	}
	var webhookKey string
	for _, c := range w.app.Resources("AWS::Events::Connection") {
		_, webhookKey = w.connectionAPIKey(c)
	}
	w.deps = newDependencies(keys, webhookKey, sesConfigSet, opts...)
	w.t.Cleanup(w.deps.Close)
}

// apiKeyReference is the dynamic reference an EventBridge connection reads
// its API key with, the only one played: a secret's api_key field, as
// CloudFormation resolves it at deploy time.
var apiKeyReference = regexp.MustCompile(`^\{\{resolve:secretsmanager:(.+):SecretString:api_key::\}\}$`)

// connectionAPIKey is the header and the value of an EventBridge
// connection's API key authorization.
func (w *World) connectionAPIKey(c *synthesized.Resource) (header, value string) {
	b, _ := json.Marshal(w.resolve(c, c.Prop("AuthParameters")))
	var auth struct {
		ApiKeyAuthParameters struct{ ApiKeyName, ApiKeyValue string }
	}
	_ = json.Unmarshal(b, &auth)
	ref := apiKeyReference.FindStringSubmatch(auth.ApiKeyAuthParameters.ApiKeyValue)
	if ref == nil {
		w.fatalf("connection %s: the API key %q is not a reference to a secret's api_key", c.Path(), auth.ApiKeyAuthParameters.ApiKeyValue)
	}
	var secret struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal([]byte(w.aws.Secret(ref[1])), &secret); err != nil || secret.APIKey == "" {
		w.fatalf("connection %s: secret %s holds no api_key (%v)", c.Path(), ref[1], err)
	}
	return auth.ApiKeyAuthParameters.ApiKeyName, secret.APIKey
}

// QueueNamed returns the queue with that name.
func (w *World) QueueNamed(name string) *Queue {
	if q := w.queues[name]; q != nil {
		return q
	}
	w.fatalf("no queue named %s in the templates", name)
	return nil
}

// DLQs returns the queues that are some resource's dead-letter queue (a
// queue's redrive target, a subscription's or a rule target's), by name.
func (w *World) DLQs() []*Queue {
	seen := map[*Queue]bool{}
	for _, e := range w.app.Edges() {
		if q := w.queueByResource[e.To]; q != nil && e.Kind == synthesized.DeadLetter {
			seen[q] = true
		}
	}
	return slices.SortedFunc(maps.Keys(seen), func(a, b *Queue) int { return strings.Compare(a.Name, b.Name) })
}
