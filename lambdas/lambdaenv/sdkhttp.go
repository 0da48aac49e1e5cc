package lambdaenv

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// SDKHTTPClient is base (nil: the SDK's default client) except that it
// hands each request body to net/http with only Read and Close, so a
// connection is not closed under a response still being read
// (docs/design.md#sdk-connections); set it as aws.Config.HTTPClient after
// the configuration is loaded, which keeps what the loader set on base (a
// custom CA bundle).
func SDKHTTPClient(base aws.HTTPClient) aws.HTTPClient {
	if base == nil {
		base = awshttp.NewBuildableClient()
	}
	return readOnlyBodies{base}
}

type readOnlyBodies struct{ aws.HTTPClient }

func (c readOnlyBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.WithContext(r.Context()) // a shallow copy: the caller's request is left as it was
		r.Body = readCloser{r.Body}
	}
	return c.HTTPClient.Do(r)
}

// readCloser hides every method of the body but Read and Close.
type readCloser struct{ io.ReadCloser }
