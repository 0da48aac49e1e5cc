// Package config is the typed description of every MercadoFresco deployment
// environment (dev, staging, prod).
//
// Everything that differs between environments lives here and nowhere else:
// stacks and constructs read an Environment and never branch on its name.
// The defaults synthesise on a machine with no AWS credentials: accounts are
// placeholders that `cdk synth` never contacts, and can be overridden per
// environment without editing code (see Lookup).
package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// ErrUnknownEnvironment is returned by Lookup for a name that is not one of
// the configured environments.
var ErrUnknownEnvironment = errors.New("config: unknown environment")

// ErrInvalid is wrapped by every validation error of an Environment.
var ErrInvalid = errors.New("config: invalid environment")

// Environment is one deployment target. The zero value is not usable; obtain
// environments from Lookup or All.
type Environment struct {
	// Name is the short environment name: "dev", "staging" or "prod".
	Name string
	// Account is the 12-digit AWS account id the stacks deploy to.
	Account string
	// Region is the AWS region the stacks deploy to.
	Region string
	// AvailabilityZones pins the zones used by VPC-bound resources so that
	// synth needs no context lookup (and so no credentials).
	AvailabilityZones []string
	// AlarmEmail receives every alarm of the project through the SNS topic
	// alertas-mercadofresco. Empty means no e-mail subscription.
	AlarmEmail string
	// LogRetention is the retention of every log group the project creates.
	LogRetention awslogs.RetentionDays
	// RemovalPolicy applies to stateful resources (tables, keys, queues with
	// data, databases). Prod retains; throwaway environments destroy.
	RemovalPolicy awscdk.RemovalPolicy
	// DeletionProtection turns on the deletion protection of tables and
	// databases.
	DeletionProtection bool
	// Consumers configures the queue consumers' dependencies (warehouse,
	// ERP, e-mail providers); see Consumers.
	Consumers Consumers
	// MaxConsumerConcurrency is the ceiling applied to SQS event source
	// mappings (MaximumConcurrency), the backpressure limit that keeps Aurora's
	// ~200 connections and the payment gateway safe. Must be in [2, 1000].
	MaxConsumerConcurrency float64
	// PublisherConcurrency is the reserved concurrency of the outbox
	// publisher Lambda: at least 2, because consecutive invocations overlap
	// (lambdas/lambdaapi).
	PublisherConcurrency float64
	// ArchiveRetentionDays is how long the bus archive keeps events for
	// replay: a whole number of days from 1 to the order starter's window
	// (eventsapi.StarterWindow, 89 days); synthesis also checks the
	// replay's whole pass (docs/design.md#replay-windows).
	ArchiveRetentionDays float64
	// NatGateways is the number of NAT gateways of the VPC: the way out to
	// the internet for the functions that call the payment gateway, the
	// warehouse, the ERP and the e-mail provider (docs/design.md#network).
	// At most the number of availability zones.
	NatGateways float64
	// Cache, when set, is the environment's existing Valkey cache
	// mercadofresco-catalogo, imported instead of created.
	Cache *CacheImport
	// GatewayURL is the payment gateway's https base URL (the cobro and
	// reembolso tasks' GATEWAY_URL): the gateway's sandbox outside prod.
	GatewayURL string
	// GatewayReadTimeout is the read timeout of one gateway attempt
	// (GATEWAY_READ_TIMEOUT, 1 s to 2 min; docs/design.md#payment).
	GatewayReadTimeout time.Duration
	// PaymentConcurrency is the reserved concurrency of each payment task
	// (cobro, reembolso): the concurrency ceiling in front of the gateway.
	PaymentConcurrency float64
	// ERPWebhookURL is the ERP's https webhook that the API destination
	// calls with the order events.
	ERPWebhookURL string
	// ERPRateLimitPerSecond is the API destination's
	// invocationRateLimitPerSecond: what the ERP of this environment accepts.
	ERPRateLimitPerSecond float64
	// Carritos, when set, is the environment's existing carts table
	// mercadofresco-carritos, imported instead of created (its stream must be
	// NEW_AND_OLD_IMAGES and its TTL on expira_en).
	Carritos *CarritosImport
	// FlowLogsAllTraffic makes the VPC's flow log record ALL traffic,
	// accepted included; false records the rejected traffic only.
	FlowLogsAllTraffic bool
	// DatabaseBackupDays is the automated backup retention of the outbox's
	// Aurora cluster (point-in-time restore): a whole number of days from 1
	// to Aurora's 35 (docs/design.md#database-backups).
	DatabaseBackupDays float64
	// ShopDBConnections is the most connections the shop's order writers
	// (lambdas/pedido-writer, run outside this app) open through the RDS
	// Proxy: their instances × DB_MAX_CONNS. MF-DB-CONNECTIONS counts them
	// (docs/design.md#aurora-connections).
	ShopDBConnections int
	// AuditTrail is the ARN of the CloudTrail trail that records the
	// account's management events (write events at least) in Region: a
	// multi-region trail or one of this region, such as the Control Tower
	// organisation trail. The data key's watch sees the key's calls only
	// through it, and the on-call role's sends alert only if it also
	// records SQS data events (docs/README-security.md). The app does not
	// create it; MF_<NAME>_AUDIT_TRAIL overrides the placeholder.
	AuditTrail string
	// Roles names the IAM roles of the account's identity setup that this
	// app refers to (it never creates them): who administers the data key,
	// who alone may delete or disable it, who is on call.
	Roles Roles
	// Tags are applied to every resource of the environment.
	Tags map[string]string
}

// Roles are IAM role names, each optionally with its path
// ("identidad/mercadofresco-guardia"), in the environment's account. The
// roles exist before the first deploy: the account's identity setup (SSO
// permission sets or an identity stack) provides them.
type Roles struct {
	// KeyAdmin administers the data key alias/mercadofresco-datos (its
	// policy, rotation, tags, aliases) without being able to use it.
	KeyAdmin string
	// BreakGlass is the only principal that may schedule the data key's
	// deletion or disable it; its use is an incident of its own.
	BreakGlass string
	// Operator is the on-call engineer's role: the DLQ tool (cmd/mf-dlq)
	// runs as it, and its redrive sends to the consumer queues.
	Operator string
}

// rolePattern is an IAM role name with an optional path: what IAM accepts
// (names of 1..64 of [A-Za-z0-9+=,.@_-], path segments of the same).
var rolePattern = regexp.MustCompile(`^([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$`)

// defaultRoles are the role names of every environment unless it says
// otherwise.
var defaultRoles = Roles{
	KeyAdmin:   "mercadofresco-administrador-claves",
	BreakGlass: "mercadofresco-emergencia",
	Operator:   "mercadofresco-guardia",
}

// RoleArn is the ARN of the role named name (with its path, if any) in the
// environment's account, in the aws partition.
func (e Environment) RoleArn(name string) string {
	return "arn:aws:iam::" + e.Account + ":role/" + name
}

// CacheImport names an existing cache of the environment
// (datastore.CacheProps.Import). It must be a serverless cache of Valkey
// 7.2+ (or Redis OSS 7+: IAM authentication) with the app's user group
// (its id is the cache's name) attached once by an operator (aws
// elasticache modify-serverless-cache --serverless-cache-name <Name>
// --user-group-id <Name>); until then the breakers fail open.
type CacheImport struct {
	// Name is its serverless cache name (the IAM token is signed for it).
	Name string
	// Endpoint is its host name; Port defaults to 6379.
	Endpoint string
	Port     float64
	// SecurityGroupID is the security group that guards it; Bind adds
	// ingress rules to it.
	SecurityGroupID string
}

// CarritosImport names an existing carts table and its stream
// (events.CartsProps.Import). Its stream must be NEW_AND_OLD_IMAGES and its
// TTL on expira_en.
type CarritosImport struct {
	TableName string
	StreamArn string
	// KeyArn is the table's KMS key ("" for an AWS-owned key).
	KeyArn string
}

// organisationTrail is the placeholder of every environment's AuditTrail:
// the Control Tower organisation trail (multi-region, management events)
// of a placeholder management account.
const organisationTrail = "arn:aws:cloudtrail:eu-west-1:444444444444:trail/aws-controltower-BaselineCloudTrail"

// trailPattern is a CloudTrail trail ARN.
var trailPattern = regexp.MustCompile(`^arn:aws:cloudtrail:[a-z0-9-]+:[0-9]{12}:trail/[A-Za-z0-9._-]{3,128}$`)

// accountPattern is what AWS accepts as an account id.
var accountPattern = regexp.MustCompile(`^[0-9]{12}$`)

// environments are the built-in defaults. Accounts are documentation
// placeholders (synth never contacts them); real ones come from the
// MF_<ENV>_ACCOUNT environment variable.
var environments = map[string]Environment{
	"dev": {
		Name:                   "dev",
		Account:                "111111111111",
		Region:                 "eu-west-1",
		AvailabilityZones:      []string{"eu-west-1a", "eu-west-1b"},
		AlarmEmail:             "alertas-dev@mercadofresco.example",
		LogRetention:           awslogs.RetentionDays_ONE_WEEK,
		RemovalPolicy:          awscdk.RemovalPolicy_DESTROY,
		DeletionProtection:     false,
		MaxConsumerConcurrency: 2,
		PublisherConcurrency:   2,
		ArchiveRetentionDays:   7,
		NatGateways:            1,
		GatewayURL:             "https://sandbox.pasarela.mercadofresco.example",
		GatewayReadTimeout:     lambdaapi.DefaultReadTimeout,
		PaymentConcurrency:     5,
		ERPWebhookURL:          "https://erp-dev.mercadofresco.example/webhooks/pedidos",
		ERPRateLimitPerSecond:  1,
		AuditTrail:             organisationTrail,
		DatabaseBackupDays:     7,
		ShopDBConnections:      10,
	},
	"staging": {
		Name:                   "staging",
		Account:                "222222222222",
		Region:                 "eu-west-1",
		AvailabilityZones:      []string{"eu-west-1a", "eu-west-1b"},
		AlarmEmail:             "alertas-staging@mercadofresco.example",
		LogRetention:           awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy:          awscdk.RemovalPolicy_SNAPSHOT,
		DeletionProtection:     false,
		MaxConsumerConcurrency: 5,
		PublisherConcurrency:   2,
		ArchiveRetentionDays:   30,
		NatGateways:            1,
		GatewayURL:             "https://sandbox.pasarela.mercadofresco.example",
		GatewayReadTimeout:     lambdaapi.DefaultReadTimeout,
		PaymentConcurrency:     10,
		ERPWebhookURL:          "https://erp-staging.mercadofresco.example/webhooks/pedidos",
		ERPRateLimitPerSecond:  2,
		AuditTrail:             organisationTrail,
		DatabaseBackupDays:     7,
		ShopDBConnections:      20,
	},
	"prod": {
		Name:              "prod",
		Account:           "333333333333",
		Region:            "eu-west-1",
		AvailabilityZones: []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"},
		AlarmEmail:        "alertas@mercadofresco.example",
		LogRetention:      awslogs.RetentionDays_ONE_YEAR,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		// Deletion protection on everything stateful: a prod table or
		// database is never removed by a stack update.
		DeletionProtection: true,
		// 20 concurrent consumers at peak: 600 orders/h processed, 900/h
		// bursts absorbed by the queue; 60 pollers in a retry storm is what
		// this ceiling prevents (docs/design.md#consumer-concurrency).
		MaxConsumerConcurrency: 20,
		PublisherConcurrency:   2,
		// Two months of replay: with the starter buffer's 18 days (DLQ and
		// one redrive) and the rule's 2 h, 78 of the starter's 89 days.
		ArchiveRetentionDays: 60,
		// One NAT gateway per zone: a zone's failure must not cut the
		// payment path of the functions in the other zones.
		NatGateways:        3,
		GatewayURL:         "https://api.pasarela.mercadofresco.example",
		GatewayReadTimeout: lambdaapi.DefaultReadTimeout,
		// 450 executions in flight at peak (SPEC) share 50 charges at a
		// time: a gateway slowdown queues them instead of multiplying calls.
		PaymentConcurrency: 50,
		ERPWebhookURL:      "https://erp.mercadofresco.example/webhooks/pedidos",
		// The ERP takes ~10 requests/s; 240,000 orders/month average 0.1/s.
		ERPRateLimitPerSecond: 10,
		AuditTrail:            organisationTrail,
		// Aurora's maximum: a corruption found in the monthly close is
		// still restorable (docs/design.md#database-backups).
		DatabaseBackupDays: 35,
		FlowLogsAllTraffic: true,
		ShopDBConnections:  50, // 50 writer instances with a pool of 1
	},
}

// Names returns the environment names in promotion order
// (catalog.Environments).
func Names() []string { return slices.Clone(catalog.Environments) }

// Lookup returns the named environment with overrides applied: the
// environment variable MF_<NAME>_ACCOUNT (e.g. MF_PROD_ACCOUNT) replaces the
// placeholder account, MF_<NAME>_ALARM_EMAIL the alarm address and
// MF_<NAME>_AUDIT_TRAIL the audit trail.
func Lookup(name string) (Environment, error) {
	env, ok := environments[name]
	if !ok {
		return Environment{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownEnvironment, name, strings.Join(Names(), ", "))
	}
	env.Consumers = consumers[name]
	if env.Roles == (Roles{}) {
		env.Roles = defaultRoles
	}
	prefix := "MF_" + strings.ToUpper(name) + "_"
	if v := os.Getenv(prefix + "ACCOUNT"); v != "" {
		env.Account = v
	}
	if v, ok := os.LookupEnv(prefix + "ALARM_EMAIL"); ok {
		env.AlarmEmail = v
	}
	if v := os.Getenv(prefix + "AUDIT_TRAIL"); v != "" {
		env.AuditTrail = v
	}
	env.AvailabilityZones = append([]string(nil), env.AvailabilityZones...)
	if env.Cache != nil {
		c := *env.Cache
		env.Cache = &c
	}
	if env.Carritos != nil {
		c := *env.Carritos
		env.Carritos = &c
	}
	env.Tags = map[string]string{
		"proyecto":    "mercadofresco-integracion",
		"entorno":     env.Name,
		"gestionado":  "cdk",
		"responsable": "equipo-integracion",
	}
	if err := env.Validate(); err != nil {
		return Environment{}, err
	}
	return env, nil
}

// All returns every environment in the order dev, staging, prod.
func All() ([]Environment, error) {
	var out []Environment
	for _, n := range Names() {
		env, err := Lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, env)
	}
	return out, nil
}

// Validate reports every problem of the environment at once.
func (e Environment) Validate() error {
	var p problems
	e.Consumers.check(&p)
	if err := catalog.ValidEnvironment(e.Name); err != nil {
		p = append(p, err.Error())
	}
	p.If(!accountPattern.MatchString(e.Account), "account %q is not a 12-digit AWS account id", e.Account)
	p.If(e.Region == "", "region is empty")
	p.If(len(e.AvailabilityZones) < 2, "at least two availability zones are needed")
	for _, az := range e.AvailabilityZones {
		p.If(!strings.HasPrefix(az, e.Region), "availability zone %q is not in region %q", az, e.Region)
	}
	p.If(e.MaxConsumerConcurrency < 2 || e.MaxConsumerConcurrency > 1000, "MaxConsumerConcurrency %v is outside SQS's [2, 1000]", e.MaxConsumerConcurrency)
	p.If(e.PublisherConcurrency < 2, "PublisherConcurrency %v must be at least 2 (publisher invocations overlap, lambdas/lambdaapi)", e.PublisherConcurrency)
	maxDays := eventsapi.StarterWindow.Hours() / 24
	p.If(e.ArchiveRetentionDays < 1 || e.ArchiveRetentionDays > maxDays || e.ArchiveRetentionDays != float64(int(e.ArchiveRetentionDays)),
		"ArchiveRetentionDays %v must be a whole number of days from 1 to %.0f (the order starter's window: an older replayed order could start a second execution; 0 keeps events forever)", e.ArchiveRetentionDays, maxDays)
	p.If(e.NatGateways < 0 || e.NatGateways > float64(len(e.AvailabilityZones)) || e.NatGateways != float64(int(e.NatGateways)),
		"NatGateways %v must be a whole number between 0 and the %d availability zones", e.NatGateways, len(e.AvailabilityZones))
	p.https("GatewayURL", e.GatewayURL)
	p.https("ERPWebhookURL", e.ERPWebhookURL)
	p.If(e.GatewayReadTimeout < time.Second || e.GatewayReadTimeout > 2*time.Minute, "GatewayReadTimeout %v is outside [1s, 2m]", e.GatewayReadTimeout)
	p.If(e.PaymentConcurrency < 1, "PaymentConcurrency %v must be at least 1", e.PaymentConcurrency)
	p.If(e.ERPRateLimitPerSecond < 1 || e.ERPRateLimitPerSecond > 300, "ERPRateLimitPerSecond %v is outside EventBridge's [1, 300]", e.ERPRateLimitPerSecond)
	p.If(e.Carritos != nil && (e.Carritos.TableName == "" || !strings.HasPrefix(e.Carritos.StreamArn, "arn:")), "Carritos import needs TableName and the stream's ARN")
	p.If(e.Cache != nil && (e.Cache.Name == "" || e.Cache.Endpoint == "" || !strings.HasPrefix(e.Cache.SecurityGroupID, "sg-")), "Cache import needs a Name, an Endpoint and a SecurityGroupID (sg-...)")
	for _, r := range [][2]string{{"Roles.KeyAdmin", e.Roles.KeyAdmin}, {"Roles.BreakGlass", e.Roles.BreakGlass}, {"Roles.Operator", e.Roles.Operator}} {
		p.If(!rolePattern.MatchString(r[1]), "%s %q is not an IAM role name (with an optional path)", r[0], r[1])
	}
	p.If(e.Roles.BreakGlass != "" && (e.Roles.BreakGlass == e.Roles.KeyAdmin || e.Roles.BreakGlass == e.Roles.Operator),
		"Roles.BreakGlass %q must be a role of its own (not the key administrator nor the operator)", e.Roles.BreakGlass)
	p.If(e.ShopDBConnections < 1, "ShopDBConnections %d: the shop writes every order through the proxy, declare its connections (at least 1)", e.ShopDBConnections)
	p.If(e.DatabaseBackupDays < 1 || e.DatabaseBackupDays > 35 || e.DatabaseBackupDays != float64(int(e.DatabaseBackupDays)),
		"DatabaseBackupDays %v must be a whole number of days from 1 to Aurora's 35", e.DatabaseBackupDays)
	p.If(e.AuditTrail == "", "AuditTrail is required: the data key's watch sees the key's calls only through a CloudTrail trail recording management events in %s", e.Region)
	p.If(e.AuditTrail != "" && !trailPattern.MatchString(e.AuditTrail), "AuditTrail %q is not a CloudTrail trail ARN (arn:aws:cloudtrail:<region>:<account>:trail/<name>)", e.AuditTrail)
	p.If(e.AlarmEmail != "" && !strings.Contains(e.AlarmEmail, "@"), "alarm e-mail %q is not an address", e.AlarmEmail)
	if len(p) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalid, e.Name, strings.Join(p, "; "))
	}
	return nil
}

// problems collects what is wrong with an environment.
type problems []string

// If adds the problem when bad.
func (p *problems) If(bad bool, format string, a ...any) {
	if bad {
		*p = append(*p, fmt.Sprintf(format, a...))
	}
}

// https adds a problem unless u is an https URL.
func (p *problems) https(field, u string) {
	p.If(!strings.HasPrefix(u, "https://") || len(u) <= len("https://"), "%s %q is not an https URL", field, u)
}

// PhysicalName turns a SPEC name ("cola-mercadofresco-pedidos") into this
// environment's physical name ("cola-mercadofresco-pedidos-dev"). FIFO queue
// names keep their mandatory ".fifo" ending.
func (e Environment) PhysicalName(base string) string {
	return catalog.PhysicalName(base, e.Name)
}

// StackName is the CloudFormation stack name of one part of the app in this
// environment, e.g. "MercadoFresco-Platform-dev".
func (e Environment) StackName(part string) string {
	return "MercadoFresco-" + part + "-" + e.Name
}

// CDKEnvironment is the awscdk.Environment of this deployment target.
func (e Environment) CDKEnvironment() *awscdk.Environment {
	return &awscdk.Environment{Account: &e.Account, Region: &e.Region}
}

// ServiceTimes is how long a consumer's record takes at its dependency on
// a normal day, by its <DEP>_READ_TIMEOUT prefix in lower case ("aws": AWS
// only; the e-mail's is the secondary's, slower than SES), for
// bench/cmd/friday (docs/design.md#friday).
var ServiceTimes = map[string]time.Duration{
	"almacen": 2 * time.Second, "erp": 3 * time.Second, "correo_secundario": time.Second, "aws": 200 * time.Millisecond,
}
