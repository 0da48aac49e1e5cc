// Package cost estimates an environment's monthly cost from its synthesized
// templates (a cloud assembly or the snapshots), a usage model (usage.json:
// the shop's volumes, each function's work per invocation) and a dated price
// table (prices-eu-west-1.json: each price with its source and basis). The
// routes come from the templates: the rules an event matches, the queues and
// subscriptions a message reaches, the functions their event source mappings
// invoke, an execution's state transitions from its definition. Compute prices
// an environment, separating fixed from order-driven cost; CompareTemplates is
// the monthly delta between two sets of templates (a change under review).
// Why not an existing tool: docs/cost.md#why-a-tool-of-our-own.
package cost
