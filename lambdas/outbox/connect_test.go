package outbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestPoolConfigFromSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secret  string
		cfg     ConnectConfig
		host    string
		port    uint16
		db      string
		wantErr bool
	}{
		{"rds secret via proxy", `{"username":"mf","password":"p@ss/:word","host":"cluster.example","port":5432,"dbname":"tienda"}`,
			ConnectConfig{Host: "proxy.example"}, "proxy.example", 5432, "tienda", false},
		{"string port, db override", `{"username":"mf","password":"x","host":"h","port":"6432","dbname":"a"}`,
			ConnectConfig{Database: "b"}, "h", 6432, "b", false},
		{"no port", `{"username":"mf","password":"x","host":"h","dbname":"a"}`, ConnectConfig{}, "h", 5432, "a", false},
		{"not json", `nope`, ConnectConfig{}, "", 0, "", true},
		{"no user", `{"host":"h","dbname":"a"}`, ConnectConfig{}, "", 0, "", true},
		{"bad port", `{"username":"mf","host":"h","port":"x","dbname":"a"}`, ConnectConfig{}, "", 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := PoolConfigFromSecret(tc.secret, tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			cc := pc.ConnConfig
			if cc.Host != tc.host || cc.Port != tc.port || cc.Database != tc.db || cc.User != "mf" {
				t.Fatalf("config = %s:%d/%s user %s", cc.Host, cc.Port, cc.Database, cc.User)
			}
			if cc.TLSConfig == nil || cc.TLSConfig.InsecureSkipVerify || cc.TLSConfig.ServerName != tc.host {
				t.Fatal("TLS must be required and verified against the host name")
			}
			if cc.DefaultQueryExecMode != pgx.QueryExecModeExec || pc.MaxConns != 2 {
				t.Fatalf("exec mode %v, max conns %d", cc.DefaultQueryExecMode, pc.MaxConns)
			}
			if tc.name == "rds secret via proxy" && cc.Password != "p@ss/:word" {
				t.Fatalf("password not preserved: %q", cc.Password)
			}
		})
	}
}

type fakeSecrets struct{ value string }

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if aws.ToString(in.SecretId) != "arn:secreto" {
		return nil, errors.New("no such secret")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(f.value)}, nil
}

func TestConnectFromSecretReachesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := ConnectFromSecret(ctx, fakeSecrets{`{"username":"postgres","password":"","host":"127.0.0.1","port":5432,"dbname":"` + testDB + `"}`},
		ConnectConfig{SecretARN: "arn:secreto", SSLMode: "disable"})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var one int
	if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through the pool: %v", err)
	}
	if _, err := ConnectFromSecret(ctx, fakeSecrets{}, ConnectConfig{SecretARN: "other"}); err == nil {
		t.Fatal("missing secret accepted")
	}
}

func TestIAMPoolConfigSignsATokenPerConnection(t *testing.T) {
	t.Parallel()
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	cfg := ConnectConfig{Host: "proxy.example", User: "mf_admin", Database: "tienda", Region: "eu-west-1"}
	pc, err := IAMPoolConfig(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	cc := pc.ConnConfig.Copy()
	if err := pc.BeforeConnect(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"proxy.example:5432?Action=connect", "DBUser=mf_admin", "X-Amz-Signature=", "eu-west-1"} {
		if !strings.Contains(cc.Password, want) {
			t.Fatalf("token %q lacks %q", cc.Password, want)
		}
	}
	if cc.TLSConfig == nil || cc.TLSConfig.InsecureSkipVerify || pc.ConnConfig.DefaultQueryExecMode != pgx.QueryExecModeExec {
		t.Fatal("IAM connections must use verified TLS and unnamed statements")
	}
	for _, bad := range []ConnectConfig{{}, {Host: "h", User: "u", Database: "d"}} {
		if _, err := IAMPoolConfig(bad, creds); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("IAMPoolConfig(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// The functions run with QueryExecModeExec (no named prepared statements,
// for RDS Proxy): migrations, Add, a publish round and the gauges must all
// work in that mode.
func TestEverythingWorksInTheProxyFriendlyExecMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t, testDB)
	pc, err := PoolConfigFromSecret(`{"username":"postgres","password":"","host":"127.0.0.1","port":5432,"dbname":"`+testDB+`"}`, ConnectConfig{SSLMode: "disable"})
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	writeOrders(t, pool, 0, 15)
	sink := newFakeSink()
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, p, 10*time.Second)
	if a, _ := sink.snapshot(); len(a) != 15 {
		t.Fatalf("%d published in exec mode, want 15", len(a))
	}
	if n, err := Cleanup(ctx, pool, CleanupConfig{}); err != nil || n != 0 {
		t.Fatalf("Cleanup in exec mode = %d, %v", n, err)
	}
}
