package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// DeployedTemplate is the synthesized prod template the "as deployed"
// strategy reads (the committed snapshot, test/testdata/snapshots).
const DeployedTemplate = "MercadoFresco-OrderFlow-prod.template.json"

// Deployed is what the "as deployed" strategy read, and from where.
type Deployed struct {
	// Cobrar's Retry on the gateway's errors.
	MaxAttempts               int
	IntervalSeconds, MaxDelay float64
	Jitter                    bool
	// The charging function: GATEWAY_MAX_ATTEMPTS, its reserved
	// concurrency (the ceiling on gateway calls in flight), and the
	// starter's event source MaximumConcurrency (the ceiling on executions
	// being started).
	ClientAttempts, Reserved, StarterConcurrency int
	// The breaker (BREAKER_FAILURE_THRESHOLD / BREAKER_OPEN_PERIOD when the
	// function sets them, lambdas/breaker's defaults otherwise).
	Threshold  int
	OpenPeriod time.Duration
}

// ReadDeployed reads the numbers of the deployed charge path from the prod
// templates in dir (the snapshots, or a cloud assembly) through package
// synthesized: mf-cobro's settings, the event source mappings' ceilings and
// the Retry on PasarelaNoDisponible of the Task state that invokes it.
func ReadDeployed(dir string) (Deployed, error) {
	d := Deployed{Threshold: breaker.DefaultFailureThreshold, OpenPeriod: breaker.DefaultOpenPeriod}
	app, err := synthesized.LoadEnv(dir, "prod")
	if err != nil {
		return d, err
	}
	var cobro *synthesized.Resource
	for _, r := range app.Resources("AWS::Lambda::Function") {
		if r.Prop("FunctionName") == "mf-cobro" {
			cobro = r
		}
	}
	if cobro == nil {
		return d, fmt.Errorf("%s: no function mf-cobro", DeployedTemplate)
	}
	env, _ := synthesized.Dig(cobro.Properties, "Environment", "Variables").(map[string]any)
	d.Reserved = int(synthesized.Number(cobro.Prop("ReservedConcurrentExecutions"), 0))
	if d.ClientAttempts = int(synthesized.Number(env[lambdaapi.EnvGatewayMaxAttempts], 0)); d.ClientAttempts <= 0 {
		return d, fmt.Errorf("mf-cobro has no %s", lambdaapi.EnvGatewayMaxAttempts)
	}
	if v := int(synthesized.Number(env[lambdaapi.EnvBreakerFailureThreshold], 0)); v > 0 {
		d.Threshold = v
	}
	if s, ok := env[lambdaapi.EnvBreakerOpenPeriod].(string); ok {
		if p, err := time.ParseDuration(s); err == nil {
			d.OpenPeriod = p
		}
	}
	for _, r := range app.Resources("AWS::Lambda::EventSourceMapping") {
		if r.Stack != cobro.Stack {
			continue // the starter is in the charge's stack
		}
		d.StarterConcurrency = max(d.StarterConcurrency, int(synthesized.Number(synthesized.Dig(r.Properties, "ScalingConfig", "MaximumConcurrency"), 0)))
	}
	for _, task := range app.To(cobro, synthesized.Task) {
		retries, _ := task.Settings["Retry"].([]any)
		for _, r := range retries {
			if errs, _ := synthesized.Dig(r, "ErrorEquals").([]any); d.MaxAttempts == 0 && slices.Contains(errs, any("PasarelaNoDisponible")) {
				d.MaxAttempts, d.IntervalSeconds, d.MaxDelay = 3, 1, 0 // Step Functions' defaults
				if v, ok := synthesized.Dig(r, "MaxAttempts").(float64); ok {
					d.MaxAttempts = int(v)
				}
				if v, ok := synthesized.Dig(r, "IntervalSeconds").(float64); ok {
					d.IntervalSeconds = v
				}
				if v, ok := synthesized.Dig(r, "MaxDelaySeconds").(float64); ok {
					d.MaxDelay = v
				}
				d.Jitter = synthesized.Dig(r, "JitterStrategy") == "FULL"
			}
		}
	}
	if d.MaxAttempts == 0 {
		return d, fmt.Errorf("%s: no Cobrar task invoking mf-cobro with a Retry", DeployedTemplate)
	}
	return d, nil
}

// Strategy is the "as deployed" strategy: the workflow invokes the
// function directly (no queue between them: 1 receive), Cobrar's Retry,
// the client's attempts with lambdas/retry's default waits and budget,
// the function's reserved concurrency as the ceiling (the starter's
// MaximumConcurrency when none is reserved), and the shared breaker.
func (d Deployed) Strategy() Strategy {
	ceiling := d.Reserved
	if ceiling <= 0 {
		ceiling = d.StarterConcurrency
	}
	maxDelay := time.Duration(d.MaxDelay * float64(time.Second))
	if maxDelay <= 0 {
		maxDelay = time.Hour
	}
	return Strategy{
		Name: fmt.Sprintf("as deployed (Cobrar %d+1 × GATEWAY_MAX_ATTEMPTS %d, ceiling %d, breaker %d/%s)",
			d.MaxAttempts, d.ClientAttempts, ceiling, d.Threshold, d.OpenPeriod),
		Attempts: d.ClientAttempts, Receives: 1, WorkflowAttempts: d.MaxAttempts + 1,
		AttemptBase: lambdaapi.DefaultBackoffBase, AttemptCap: lambdaapi.DefaultBackoffCap, Visibility: 400 * time.Second,
		WorkflowInterval: time.Duration(d.IntervalSeconds * float64(time.Second)), WorkflowMaxDelay: maxDelay,
		Jitter: d.Jitter, QueueJitter: true, Pollers: ceiling, MaxPollers: ceiling, Budget: true, Breaker: true,
		Threshold: d.Threshold, OpenPeriod: d.OpenPeriod, CallBudget: lambdaapi.MaxGatewayCallsPerOperation,
	}
}
