package cfnindex_test

import (
	"testing"

	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestMain closes the jsii kernel at the end (the package imports the CDK,
// which starts it): an unclosed kernel leaves its runtime directory behind.
func TestMain(m *testing.M) { cdktest.Main(m) }
