package checks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// RuleConnections is the connection budget of an RDS Proxy
// (docs/design.md#aurora-connections).
const RuleConnections = "MF-DB-CONNECTIONS"

// AuroraPostgresMaxConnections is Aurora PostgreSQL Serverless v2's
// default max_connections by maximum ACUs, as AWS documents it.
var AuroraPostgresMaxConnections = []struct{ ACU, Connections float64 }{
	{1, 189}, {4, 823}, {8, 1669}, {16, 3360}, {32, 5000},
}

// MaxConnections is the cluster's max_connections at its capacity range:
// the table's row at or below maxACU, at most 2,000 when minACU < 1.
func MaxConnections(minACU, maxACU float64) float64 {
	out := 0.0
	for _, row := range AuroraPostgresMaxConnections {
		if row.ACU <= maxACU {
			out = row.Connections
		}
	}
	if minACU < 1 {
		out = min(out, 2000)
	}
	return out
}

// connections holds the functions that connect through a proxy (reserved
// concurrency × DB_MAX_CONNS) and its outside writers to its share.
func (c *checker) connections() {
	for _, tg := range c.app.Resources("AWS::RDS::DBProxyTargetGroup") {
		proxy := c.app.Find(tg.Stack, tg.Prop("DBProxyName"))
		var scaling any
		if ids := listOf(tg.Prop("DBClusterIdentifiers")); len(ids) == 1 && c.app.Find(tg.Stack, ids[0]) != nil {
			scaling = c.app.Find(tg.Stack, ids[0]).Prop("ServerlessV2ScalingConfiguration")
		}
		maxACU := synthesized.Number(synthesized.Dig(scaling, "MaxCapacity"), 0)
		if proxy == nil || maxACU == 0 {
			c.fail(tg, RuleConnections, "cannot read the proxy and its Aurora Serverless v2 cluster's MaxCapacity: the connections through it cannot be counted")
			continue
		}
		maxConns := MaxConnections(synthesized.Number(synthesized.Dig(scaling, "MinCapacity"), 0), maxACU)
		pct := synthesized.Number(synthesized.Dig(tg.Prop("ConnectionPoolConfigurationInfo"), "MaxConnectionsPercent"), 100)
		budget := math.Floor(maxConns * pct / 100)
		var shares []string
		total := 0.0
		for _, fn := range c.app.Resources("AWS::Lambda::Function") {
			vars, _ := synthesized.Dig(fn.Prop("Environment"), "Variables").(map[string]any)
			if vars == nil || c.app.Find(fn.Stack, vars[lambdaapi.EnvDBHost]) != proxy {
				continue
			}
			reserved := synthesized.Number(fn.Prop("ReservedConcurrentExecutions"), -1)
			pool := synthesized.Number(vars[lambdaapi.EnvDBMaxConns], -1)
			if reserved < 0 || pool < 1 {
				c.fail(fn, RuleConnections, "function %s connects through proxy %s without ReservedConcurrentExecutions or %s: its connections are unbounded; set both (docs/design.md#aurora-connections)", label(fn), label(proxy), lambdaapi.EnvDBMaxConns)
				continue
			}
			shares = append(shares, fmt.Sprintf("%s %.0f × %.0f = %.0f", label(fn), reserved, pool, reserved*pool))
			total += reserved * pool
		}
		outside, _ := proxy.Metadata[synthesized.MetadataOutsideConnections].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(outside)) {
			n := synthesized.Number(outside[name], 0)
			shares = append(shares, fmt.Sprintf("%s (outside) %.0f", name, n))
			total += n
		}
		if total > budget {
			c.fail(proxy, RuleConnections, "proxy %s may be asked for %.0f connections but opens at most %.0f (%.0f %% of Aurora PostgreSQL's %.0f max_connections at %g ACU): %s; lower a reserved concurrency or a pool, or raise MaxCapacity (docs/design.md#aurora-connections)",
				label(proxy), total, budget, pct, maxConns, maxACU, strings.Join(shares, ", "))
		}
	}
}
