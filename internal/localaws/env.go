package localaws

import (
	"path/filepath"
	"testing"
)

// UseEndpoint points every AWS SDK client the test builds from the process
// environment at url (AWS_ENDPOINT_URL), or at services' own (by the SDK's
// service id: "DYNAMODB" sets AWS_ENDPOINT_URL_DYNAMODB), in Region, with
// static credentials and no shared configuration files or instance
// metadata, so nothing leaves the machine.
func UseEndpoint(t testing.TB, url string, services map[string]string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": url, "AWS_REGION": Region, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": "AKIDLOCAL", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
	} {
		t.Setenv(k, v)
	}
	for svc, u := range services {
		t.Setenv("AWS_ENDPOINT_URL_"+svc, u)
	}
}
