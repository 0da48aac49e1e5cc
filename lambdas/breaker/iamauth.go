package breaker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// IAMTokenTTL is how long an IAM token may open a connection (fixed by
// ElastiCache); an open connection outlives it (ConnMaxLifetime).
const IAMTokenTTL = 15 * time.Minute

// ErrIAMAuth is returned (wrapped) when an IAM token cannot be signed.
var ErrIAMAuth = errors.New("breaker: cannot sign the ElastiCache IAM token")

// emptyPayloadHash is the SHA-256 of the empty body the token's request has.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// IAMAuth authenticates connections as an IAM-enabled ElastiCache user:
// the password is a SigV4-presigned "connect" request for the user on the
// serverless cache, signed locally (no call to AWS), valid IAMTokenTTL.
// The role must be allowed elasticache:Connect on the cache and the user.
type IAMAuth struct {
	// UserID is the user's id, which is also its name.
	UserID string
	// CacheName is the serverless cache's name (signed in lower case, as
	// ElastiCache stores it).
	CacheName string
	// Region and Credentials sign the token.
	Region      string
	Credentials aws.CredentialsProvider
	// Now is the signing clock (default time.Now).
	Now func() time.Time
}

// Token returns a fresh token: the presigned URL without its scheme,
// "<cache>/?Action=connect&User=<id>&ResourceType=ServerlessCache&X-Amz-...".
func (a *IAMAuth) Token(ctx context.Context) (string, error) {
	var problems []error
	for name, v := range map[string]string{"UserID": a.UserID, "CacheName": a.CacheName, "Region": a.Region} {
		if v == "" {
			problems = append(problems, fmt.Errorf("%s is empty", name))
		}
	}
	if a.Credentials == nil {
		problems = append(problems, errors.New("no credentials"))
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%w: %w", ErrIAMAuth, errors.Join(problems...))
	}
	creds, err := a.Credentials.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: credentials: %w", ErrIAMAuth, err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	return presignConnect(ctx, creds, a.Region, strings.ToLower(a.CacheName), url.Values{
		"Action": {"connect"}, "User": {a.UserID}, "ResourceType": {"ServerlessCache"},
	}, now())
}

// presignConnect signs GET http://host/?params for service elasticache,
// expiring after IAMTokenTTL, and drops the scheme.
func presignConnect(ctx context.Context, creds aws.Credentials, region, host string, params url.Values, now time.Time) (string, error) {
	params.Set("X-Amz-Expires", strconv.Itoa(int(IAMTokenTTL.Seconds())))
	u := url.URL{Scheme: "http", Host: host, Path: "/", RawQuery: params.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrIAMAuth, err)
	}
	signed, _, err := v4.NewSigner().PresignHTTP(ctx, creds, req, emptyPayloadHash, "elasticache", region, now.UTC())
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrIAMAuth, err)
	}
	return strings.TrimPrefix(signed, "http://"), nil
}
