package main

import (
	"testing"

	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestMain closes the jsii kernel at the end: the CDK packages this command
// imports start it when the binary starts.
func TestMain(m *testing.M) { cdktest.Main(m) }
