package breaker

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The replication-group form of the token, with fixed credentials and
// clock, against the signature AWS's own Java sample computes for the same
// inputs (aws-samples/elasticache-iam-auth-demo-app): the canonical
// request (method, path, query, host header, payload hash) is the one
// ElastiCache verifies.
func TestPresignConnectMatchesAWSSampleSignature(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "fakeAccessKeyId", SecretAccessKey: "fakeSecretKey"}
	tok, err := presignConnect(context.Background(), creds, "eu-west-1", "my-replication-group-id",
		url.Values{"Action": {"connect"}, "User": {"my-user-id"}}, time.Unix(1735689600, 0))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse("http://" + tok)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.Query().Get("X-Amz-Signature"), "9e361603d85874bce06114c6644725ed113e3b11ae6fa92efdf10c6bcf5de8d7"; got != want {
		t.Fatalf("signature %s, want %s (token %s)", got, want, tok)
	}
}
