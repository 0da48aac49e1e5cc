package observability

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

func TestRemovalFor(t *testing.T) {
	for _, tc := range []struct {
		p    awscdk.RemovalPolicy
		k    RemovalKind
		want awscdk.RemovalPolicy
	}{
		{"", Data, awscdk.RemovalPolicy_RETAIN},
		{"", Snapshottable, awscdk.RemovalPolicy_RETAIN},
		{awscdk.RemovalPolicy_SNAPSHOT, Data, awscdk.RemovalPolicy_RETAIN},
		{awscdk.RemovalPolicy_SNAPSHOT, Snapshottable, awscdk.RemovalPolicy_SNAPSHOT},
		{awscdk.RemovalPolicy_DESTROY, Data, awscdk.RemovalPolicy_DESTROY},
		{awscdk.RemovalPolicy_RETAIN, Snapshottable, awscdk.RemovalPolicy_RETAIN},
	} {
		if got := RemovalFor(tc.p, tc.k); got != tc.want {
			t.Errorf("For(%q, %d) = %q, want %q", tc.p, tc.k, got, tc.want)
		}
	}
}
