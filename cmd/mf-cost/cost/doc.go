// Package cost estimates an environment's monthly cost from its synthesized
// templates (a cloud assembly or the snapshots), a usage model (usage.json:
// the shop's volumes, each function's work per invocation) and a dated price
// table (prices-eu-west-1.json: each price with its source and basis). The
// routes come from the templates: the rules an event matches, the queues and
// subscriptions a message reaches, the functions their event source mappings
// invoke, an execution's state transitions from its definition. Compute prices
// an environment, separating fixed from order-driven cost; CompareTemplates is
// the monthly delta between two sets of templates (a change under review).
//
// Written here because the tools miss the bar of pricing `cdk synth` output
// offline: Infracost reads Terraform first, reaches CloudFormation only through
// its cloud pricing service, and has no CDK support; CloudFormation's
// EstimateTemplateCost needs AWS credentials, answers with a calculator URL
// instead of figures, and rejects the resource types it does not support.
package cost
