package lambdaenv

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// SDKHTTPClient is base (nil: the SDK's default client) except that it
// hands each request body to net/http with only Read and Close; set it as
// aws.Config.HTTPClient after the configuration is loaded, which keeps what
// the loader set on base (a custom CA bundle). The SDK closes a request's
// body as soon as the response arrives, and its closed body's WriteTo
// answers io.EOF; when net/http's last drain of the body comes after that,
// the transport takes the EOF for a write error and closes the connection
// while the response is still being read: the call fails with "use of
// closed network connection" (docs/design.md#sdk-connections). A closed
// body's Read answers io.EOF too, which a drain takes for the end.
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
