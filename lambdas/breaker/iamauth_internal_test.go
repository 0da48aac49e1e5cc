package breaker

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The replication-group form of the token, with fixed credentials and
// clock, against the signatures AWS's own Java sample computes for the
// same inputs (aws-samples/elasticache-iam-auth-demo-app): the canonical
// request (method, path, query, host header, payload hash) is the one
// ElastiCache verifies.
func TestPresignConnectMatchesAWSSampleSignature(t *testing.T) {
	for _, tc := range []struct {
		name  string
		creds aws.Credentials
		want  string
	}{
		{"static credentials", aws.Credentials{AccessKeyID: "fakeAccessKeyId", SecretAccessKey: "fakeSecretKey"},
			"9e361603d85874bce06114c6644725ed113e3b11ae6fa92efdf10c6bcf5de8d7"},
		{"session credentials", aws.Credentials{AccessKeyID: "fakeAccessKeyId", SecretAccessKey: "fakeSecretKey", SessionToken: "fakeSessionToken"},
			"bbce2bd61bd78461297ecb92e7001ddbeab2d85906c3cbedad6c9b81fb3466dc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := presignConnect(context.Background(), tc.creds, "eu-west-1", "my-replication-group-id",
				url.Values{"Action": {"connect"}, "User": {"my-user-id"}}, time.Unix(1735689600, 0))
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse("http://" + tok)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Query().Get("X-Amz-Signature"); got != tc.want {
				t.Fatalf("signature %s, want %s (token %s)", got, tc.want, tok)
			}
		})
	}
}
