package removal

import (
	"testing"

	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }
