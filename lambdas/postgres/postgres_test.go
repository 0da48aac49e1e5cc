package postgres

import (
	"context"
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/jackc/pgx/v5"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
)

const testDB = "mf_postgres_test"

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := localaws.EnsureDatabase(ctx, testDB); err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, "postgres tests need PostgreSQL:", err)
		os.Exit(1)
	}
	cancel()
	os.Exit(m.Run())
}

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

func TestFromEnvReportsEveryMissingVariable(t *testing.T) {
	t.Parallel()
	_, err := FromEnv(context.Background(), lambdaenv.FromMap(map[string]string{"DB_PORT": "x"}), aws.Config{Region: "eu-west-1"}, nil, ConnectConfig{})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	for _, v := range []string{lambdaapi.EnvDBHost, lambdaapi.EnvDBName, lambdaapi.EnvDBPort, lambdaapi.EnvDBUser, lambdaapi.EnvDBMaxConns} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name %s: %v", v, err)
		}
	}
}

func TestFromEnvUsesTheSecretWithoutAUser(t *testing.T) {
	t.Parallel()
	env := lambdaenv.FromMap(map[string]string{
		lambdaapi.EnvDBHost: "127.0.0.1", lambdaapi.EnvDBName: testDB, lambdaapi.EnvDBSecretARN: "arn:secreto", lambdaapi.EnvDBMaxConns: "3",
	})
	pool, err := FromEnv(context.Background(), env, aws.Config{Region: "eu-west-1"},
		fakeSecrets{`{"username":"postgres","password":"","host":"ignored","port":5432,"dbname":"ignored"}`},
		ConnectConfig{SSLMode: "disable", ApplicationName: "mf-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var app, db string
	if err := pool.QueryRow(context.Background(), "SELECT current_setting('application_name'), current_database()").Scan(&app, &db); err != nil {
		t.Fatal(err)
	}
	if app != "mf-test" || db != testDB || pool.Config().MaxConns != 3 {
		t.Fatalf("application_name=%q database=%q max conns %d (DB_MAX_CONNS 3)", app, db, pool.Config().MaxConns)
	}
}
