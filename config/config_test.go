package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

func TestAllEnvironmentsAreValid(t *testing.T) {
	envs, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range envs {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); got != "dev,staging,prod" {
		t.Fatalf("environments = %s, want dev,staging,prod in that order", got)
	}
	// Every defined environment is in the catalogue's list (a definition
	// missing from it would never be synthesised).
	if len(environments) != len(envs) {
		t.Fatalf("%d environments defined, %d listed in catalog.Environments", len(environments), len(envs))
	}
}

func TestPhysicalName(t *testing.T) {
	dev, _ := Lookup("dev")
	prod, _ := Lookup("prod")
	cases := []struct {
		env  Environment
		base string
		want string
	}{
		{dev, "cola-mercadofresco-pedidos", "cola-mercadofresco-pedidos-dev"},
		{prod, "cola-mercadofresco-pedidos", "cola-mercadofresco-pedidos"},
		{dev, "mercadofresco-movimientos-stock.fifo", "mercadofresco-movimientos-stock-dev.fifo"},
		{prod, "mercadofresco-movimientos-stock.fifo", "mercadofresco-movimientos-stock.fifo"},
		{dev, "alias/mercadofresco-datos", "alias/mercadofresco-datos-dev"},
	}
	for _, tc := range cases {
		if got := tc.env.PhysicalName(tc.base); got != tc.want {
			t.Errorf("%s.PhysicalName(%q) = %q, want %q", tc.env.Name, tc.base, got, tc.want)
		}
	}
}

// Environments may share an account: no two of them may produce the same
// physical name or stack name.
func TestEnvironmentsNeverCollide(t *testing.T) {
	envs, _ := All()
	seen := map[string]string{}
	for _, e := range envs {
		for _, n := range []string{e.PhysicalName("mercadofresco-idempotencia"), e.StackName("Platform")} {
			if other, dup := seen[n]; dup {
				t.Errorf("%s and %s both produce %q", other, e.Name, n)
			}
			seen[n] = e.Name
		}
	}
}

// Prod keeps Aurora's maximum of automated backups; a retention Aurora
// refuses is refused.
func TestDatabaseBackupRetention(t *testing.T) {
	prod, err := Lookup("prod")
	if err != nil {
		t.Fatal(err)
	}
	if prod.DatabaseBackupDays != 35 {
		t.Errorf("prod keeps %v days of backups, want Aurora's maximum 35", prod.DatabaseBackupDays)
	}
	for _, days := range []float64{0, 36, 7.5} {
		e := prod
		e.DatabaseBackupDays = days
		requireValidation(t, e, "DatabaseBackupDays")
	}
}

func TestProdIsProtected(t *testing.T) {
	prod, _ := Lookup("prod")
	if !prod.DeletionProtection || prod.RemovalPolicy != awscdk.RemovalPolicy_RETAIN {
		t.Errorf("prod must retain and protect its data: %+v", prod)
	}
}

func TestLookupOverridesFromEnvironment(t *testing.T) {
	t.Setenv("MF_STAGING_ACCOUNT", "444455556666")
	t.Setenv("MF_STAGING_ALARM_EMAIL", "")
	env, err := Lookup("staging")
	if err != nil {
		t.Fatal(err)
	}
	if env.Account != "444455556666" || env.AlarmEmail != "" {
		t.Errorf("overrides not applied: account=%s email=%q", env.Account, env.AlarmEmail)
	}
}

func TestLookupRejectsBadInput(t *testing.T) {
	if _, err := Lookup("qa"); !errors.Is(err, ErrUnknownEnvironment) || !strings.Contains(err.Error(), "dev, staging, prod") {
		t.Errorf("unknown environment: got %v", err)
	}
	t.Setenv("MF_DEV_ACCOUNT", "12345")
	_, err := Lookup("dev")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `account "12345"`) {
		t.Errorf("bad account: got %v", err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	bad := Environment{Name: "x", Account: "1", Region: "eu-west-1", AvailabilityZones: []string{"us-east-1a"}, MaxConsumerConcurrency: 1, AlarmEmail: "nobody",
		Cache: &CacheImport{Endpoint: "c.cache.amazonaws.com", SecurityGroupID: "sg-1"}} // no Name
	err := bad.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	for _, want := range []string{"12-digit", "two availability zones", "not in region", "MaxConsumerConcurrency", "PublisherConcurrency", "not an address",
		"GatewayURL", "ERPWebhookURL", "GatewayReadTimeout", "PaymentConcurrency", "ERPRateLimitPerSecond", "ArchiveRetentionDays",
		"Cache import needs a Name", "DatabaseBackupDays", "AuditTrail is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error misses %q: %v", want, err)
		}
	}
}

func TestRolesAreValidated(t *testing.T) {
	base, err := Lookup("prod")
	if err != nil {
		t.Fatal(err)
	}
	if base.Roles != defaultRoles {
		t.Fatalf("prod roles = %+v, want the defaults %+v", base.Roles, defaultRoles)
	}
	if got, want := base.RoleArn("identidad/mercadofresco-guardia"), "arn:aws:iam::"+base.Account+":role/identidad/mercadofresco-guardia"; got != want {
		t.Errorf("RoleArn = %q, want %q", got, want)
	}
	cases := []struct {
		name  string
		roles Roles
		want  string // "" = valid
	}{
		{"defaults", defaultRoles, ""},
		{"with a path", Roles{KeyAdmin: "identidad/claves", BreakGlass: "identidad/emergencia", Operator: "guardia"}, ""},
		{"empty key admin", Roles{BreakGlass: "b", Operator: "o"}, `Roles.KeyAdmin ""`},
		{"space in a name", Roles{KeyAdmin: "a", BreakGlass: "b c", Operator: "o"}, `Roles.BreakGlass "b c"`},
		{"too long", Roles{KeyAdmin: "a", BreakGlass: "b", Operator: strings.Repeat("o", 65)}, "Roles.Operator"},
		{"break-glass shared", Roles{KeyAdmin: "a", BreakGlass: "a", Operator: "o"}, "must be a role of its own"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := base
			e.Roles = tc.roles
			requireValidation(t, e, tc.want)
		})
	}
}

// requireValidation fails t unless e is valid (want "") or its Validate
// error is an ErrInvalid naming want.
func requireValidation(t *testing.T, e Environment, want string) {
	t.Helper()
	err := e.Validate()
	switch {
	case want == "" && err != nil:
		t.Fatalf("Validate: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid)):
		t.Fatalf("Validate = %v, want an ErrInvalid naming %q", err, want)
	}
}

// Every environment names the trail its key watch depends on; a missing
// trail or one that is not a trail's ARN is refused naming AuditTrail, and
// MF_<NAME>_AUDIT_TRAIL replaces the placeholder.
func TestAuditTrailIsRequired(t *testing.T) {
	base, err := Lookup("prod")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, trail, want string // want "" = valid
	}{
		{"the placeholder", base.AuditTrail, ""},
		{"another account's trail", "arn:aws:cloudtrail:eu-west-1:555555555555:trail/organizacion", ""},
		{"missing", "", "AuditTrail is required"},
		{"a bucket", "arn:aws:s3:::mercadofresco-trail", `AuditTrail "arn:aws:s3:::mercadofresco-trail" is not a CloudTrail trail ARN`},
		{"a bare name", "aws-controltower-BaselineCloudTrail", "is not a CloudTrail trail ARN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := base
			e.AuditTrail = tc.trail
			requireValidation(t, e, tc.want)
		})
	}
	t.Setenv("MF_PROD_AUDIT_TRAIL", "arn:aws:cloudtrail:eu-west-1:555555555555:trail/organizacion")
	if env, err := Lookup("prod"); err != nil || env.AuditTrail != "arn:aws:cloudtrail:eu-west-1:555555555555:trail/organizacion" {
		t.Errorf("override: %v, %q", err, env.AuditTrail)
	}
}

// The bus archive may not keep events longer than the order starter's
// 89-day window (Step Functions keeps execution names 90 days), nor
// forever (0).
func TestArchiveRetentionIsBoundedByTheStarterWindow(t *testing.T) {
	base, err := Lookup("prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		days float64
		ok   bool
	}{{1, true}, {60, true}, {89, true}, {90, false}, {365, false}, {0, false}, {-1, false}, {30.5, false}} {
		e := base
		e.ArchiveRetentionDays = tc.days
		err := e.Validate()
		if tc.ok != (err == nil) || (err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ArchiveRetentionDays"))) {
			t.Errorf("ArchiveRetentionDays %v: err = %v", tc.days, err)
		}
	}
}
