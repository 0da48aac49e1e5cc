package checks

import (
	"strings"
	"testing"
)

// Every route from a producer to a consumer is followed: through a bus
// rule (its pattern), an SNS subscription (its filter policy), a queue's
// mapping, a rule's input transformer (which produces the new shape), an
// API destination; and the producer's stack must deploy after the
// consumer's.
func TestContractRoutes(t *testing.T) {
	tests := []struct {
		name string
		// want are substrings of the one finding expected (nil: none).
		want []string
	}{
		{"ContractBusV2ToV1", []string{"[MF-CONTRACT]", "Consumers-ContractBusV2ToV1/Shop/Resource", "PedidoCreado version 2", "rule ", "Consumers-ContractBusV2ToV1/Starter/Resource", "accepts version 1 only"}},
		{"ContractBusV2Accepted", nil},
		// A filter that keeps a declared version from every consumer on its
		// route (a rule pattern, a subscription's filter policy, an event
		// source mapping's filter) loses those events unless acknowledged.
		{"ContractBusVersionPattern", []string{"[MF-CONTRACT]", "Consumers-ContractBusVersionPattern/PedidoRule/Resource", "keeps PedidoCreado version 2", "Consumers-ContractBusVersionPattern/Shop/Resource", "from consumer Consumers-ContractBusVersionPattern/Starter/Resource"}},
		{"ContractVersionFilterAcknowledged", nil},
		{"ContractMappingFilter", []string{"[MF-CONTRACT]", "Consumers-ContractMappingFilter/Starter/SqsEventSource:", "keeps PedidoCreado version 2", "from consumer Consumers-ContractMappingFilter/Starter/Resource"}},
		{"ContractUnsupportedPattern", []string{"[MF-CONTRACT]", "Consumers-ContractUnsupportedPattern/PedidoRule/Resource", "cannot evaluate its filter", "unsupported operator"}},
		{"ContractBusOtherType", nil},
		{"ContractTopicNoFilter", []string{"[MF-CONTRACT]", "Consumers-ContractTopicNoFilter/Workflow/Resource", "PedidoConfirmado version 2", "subscription", "Consumers-ContractTopicNoFilter/Prep/Resource"}},
		{"ContractTopicFilter", []string{"[MF-CONTRACT]", "Consumers-ContractTopicFilter/PrepQueue/ConsumersContractTopicFilterTopic", "keeps PedidoConfirmado version 2", "from consumer Consumers-ContractTopicFilter/Prep/Resource"}},
		{"ContractTransformerV2", []string{"[MF-CONTRACT]", "Consumers-ContractTransformerV2/ERPRule/Resource", "AvisoPedidoERP version 2", "Consumers-ContractTransformerV2/ERP/Resource", "rewriting events of Consumers-ContractTransformerV2/Shop/Resource"}},
		{"ContractTransformerUndeclared", []string{"[MF-CONTRACT]", "Consumers-ContractTransformerUndeclared/ERPRule/Resource", "input transformer but declares no contract"}},
		{"ContractConsumerUndeclared", []string{"[MF-CONTRACT]", "Consumers-ContractConsumerUndeclared/Prep/Resource", "declares no accepted versions"}},
		{"ContractApiDestination", []string{"[MF-CONTRACT]", "Consumers-ContractApiDestination/ERPRule/Resource", "AvisoPedidoERP version 2", "Consumers-ContractApiDestination/Dest/ApiDestination", "accepts version 1 only"}},
		// A producer that may deploy before its consumer; declaring the
		// dependency, or referencing the consumer's resources (an export),
		// puts the consumers first.
		{"ContractOrderMissing", []string{"[MF-CONTRACT-ORDER]", "Producers-ContractOrderMissing/Workflow/Resource", "Producers-ContractOrderMissing.AddStackDependency(Consumers-ContractOrderMissing)"}},
		{"ContractOrderDeclared", nil},
		{"ContractOrderReferenced", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var found []string
			for _, f := range Check(caseApp(t, tc.name)) {
				if strings.HasPrefix(f.Rule, RuleContract) {
					found = append(found, f.String())
				}
			}
			if tc.want == nil {
				for _, f := range found {
					t.Errorf("unexpected finding: %s", f)
				}
				return
			}
			if len(found) != 1 {
				t.Fatalf("want one finding with %q, got %d: %v", tc.want, len(found), found)
			}
			requireContains(t, found, tc.want...)
		})
	}
}
