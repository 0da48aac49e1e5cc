// Package test holds the app-level tests: snapshots of every stack of every
// environment, cdk-nag on the whole app, and assertions on what the stacks
// promise (names, encryption, alarms, bundled binaries).
package test

import (
	"testing"

	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }
