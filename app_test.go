package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func TestSelectEnvironments(t *testing.T) {
	cases := []struct {
		context any // nil = no -c env
		want    string
		wantErr error
	}{
		{nil, "dev,staging,prod", nil},
		{"all", "dev,staging,prod", nil},
		{"prod", "prod", nil},
		{"dev, staging", "dev,staging", nil},
		{"qa", "", config.ErrUnknownEnvironment},
	}
	for _, tc := range cases {
		ctx := map[string]any{}
		if tc.context != nil {
			ctx["env"] = tc.context
		}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		envs, err := selectEnvironments(app)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("-c env=%v: error %v, want %v", tc.context, err, tc.wantErr)
			continue
		}
		var names []string
		for _, e := range envs {
			names = append(names, e.Name)
		}
		if got := strings.Join(names, ","); got != tc.want {
			t.Errorf("-c env=%v: got %s, want %s", tc.context, got, tc.want)
		}
	}
}
