package cost

import (
	"strings"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/synthesized"
)

// label names r the same way in every environment: its SPEC name when it
// has a physical name ("mf-cobro", not "mf-cobro-dev"), otherwise its
// stack's part and construct path ("Network/Red/FlowLogs").
func (m *model) label(r *synthesized.Resource) string {
	if s, ok := r.Properties[synthesized.NameProperty(r.Type)].(string); ok && s != "" {
		return specName(s, m.app.Env)
	}
	path := r.Path()
	if _, rest, ok := strings.Cut(path, "/"); ok {
		path = rest
	}
	part := strings.TrimSuffix(r.Stack, "-"+m.app.Env) // "Network" of "MercadoFresco-Network-prod"
	return part[strings.LastIndex(part, "-")+1:] + "/" + strings.TrimSuffix(path, "/Resource")
}

// specName strips an environment's suffix from a physical name
// (catalog.PhysicalName: "-dev", ".fifo" kept last), or the token inside a
// name built from another one ("cola-mercadofresco-pedidos-dev-entrega-dlq").
func specName(name, env string) string {
	sfx := catalog.Suffix(env)
	if sfx == "" {
		return name
	}
	if stem, ok := strings.CutSuffix(name, ".fifo"); ok {
		return specName(stem, env) + ".fifo"
	}
	if stem, ok := strings.CutSuffix(name, sfx); ok {
		return stem
	}
	return strings.Replace(name, sfx+"-", "-", 1)
}
