package lambdaenv

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sync"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// sdkBody behaves as the SDK's request body: Read and WriteTo answer io.EOF
// once it is closed, and the SDK closes it as soon as Do returns. Its drain
// (any call after the payload is delivered) waits for that close, which
// puts net/http's last drain of the body after the response, the order a
// loaded machine sometimes produces.
type sdkBody struct {
	mu      sync.Mutex
	data    *bytes.Reader
	closed  bool
	closing chan struct{}
}

func newSDKBody(payload string) *sdkBody {
	return &sdkBody{data: bytes.NewReader([]byte(payload)), closing: make(chan struct{})}
}

func (b *sdkBody) waitIfDrained() bool {
	b.mu.Lock()
	drained := b.data.Len() == 0
	b.mu.Unlock()
	if drained {
		<-b.closing
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *sdkBody) Read(p []byte) (int, error) {
	if b.waitIfDrained() {
		return 0, io.EOF
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.Read(p)
}

func (b *sdkBody) WriteTo(w io.Writer) (int64, error) {
	if b.waitIfDrained() {
		return 0, io.EOF
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.WriteTo(w)
}

func (b *sdkBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	return nil
}

// TestSDKHTTPClientKeepsConnectionsOpen sends two requests with bodies that
// the caller closes as soon as the response arrives, as the SDK does: with
// SDKHTTPClient the request is written without error and the second request
// reuses the first one's connection; with the SDK's default client the
// transport takes the closed body's io.EOF for a write error and closes the
// connection.
func TestSDKHTTPClientKeepsConnectionsOpen(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"Messages":[]}`))
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name   string
		client interface {
			Do(*http.Request) (*http.Response, error)
		}
		wantClosed bool
	}{
		{"SDKHTTPClient", SDKHTTPClient(nil), false},
		{"SDK default (the failure this client avoids)", awshttp.NewBuildableClient(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reused []bool
			var writeErrs []error
			for range 2 {
				body := newSDKBody(`{"QueueUrl":"q"}`)
				req, err := http.NewRequest(http.MethodPost, srv.URL, body)
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = int64(body.data.Len())
				wrote := make(chan error, 1)
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
					GotConn:      func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
					WroteRequest: func(i httptrace.WroteRequestInfo) { wrote <- i.Err },
				}))
				resp, err := tc.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_ = body.Close() // the SDK closes the body once Do returns
				writeErrs = append(writeErrs, <-wrote)
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			closed := writeErrs[0] != nil || !reused[1]
			if closed != tc.wantClosed {
				t.Fatalf("write errors %v, second request on a reused connection %v: connection closed = %v, want %v", writeErrs, reused[1], closed, tc.wantClosed)
			}
		})
	}
}

// TestLoadAWSConfigUsesSDKHTTPClient: every function's SDK clients send
// through SDKHTTPClient, with and without a custom CA bundle (which the
// loader sets on the SDK's own client first).
func TestLoadAWSConfigUsesSDKHTTPClient(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	// A bundle of the test's own: the certificate of a TLS test server.
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	tlsSrv.Close()
	bundlePath := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundlePath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bundle := range []string{"", bundlePath} {
		t.Run("AWS_CA_BUNDLE="+bundle, func(t *testing.T) {
			t.Setenv("AWS_CA_BUNDLE", bundle)
			cfg, err := FromMap(nil).LoadAWSConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cfg.HTTPClient.(readOnlyBodies); !ok {
				t.Fatalf("HTTPClient is %T, want SDKHTTPClient's", cfg.HTTPClient)
			}
		})
	}
}
