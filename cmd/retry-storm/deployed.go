package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// ReadDeployed reads the numbers of the deployed charge path from the
// OrderFlow prod template in dir.
func ReadDeployed(dir string) (Deployed, error) {
	raw, err := os.ReadFile(filepath.Join(dir, DeployedTemplate))
	if err != nil {
		return Deployed{}, err
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		return Deployed{}, fmt.Errorf("%s: %w", DeployedTemplate, err)
	}
	d := Deployed{Threshold: breaker.DefaultFailureThreshold, OpenPeriod: breaker.DefaultOpenPeriod}
	var cobroID string
	var cobroEnv map[string]any
	for id, r := range tpl.Resources {
		if r.Type == "AWS::Lambda::Function" && r.Properties["FunctionName"] == "mf-cobro" {
			cobroID = id
			cobroEnv, _ = dig(r.Properties, "Environment", "Variables").(map[string]any)
			d.Reserved = num(r.Properties["ReservedConcurrentExecutions"])
		}
	}
	if cobroID == "" {
		return d, fmt.Errorf("%s: no function mf-cobro", DeployedTemplate)
	}
	if d.ClientAttempts = num(cobroEnv[lambdaapi.EnvGatewayMaxAttempts]); d.ClientAttempts <= 0 {
		return d, fmt.Errorf("mf-cobro has no %s", lambdaapi.EnvGatewayMaxAttempts)
	}
	if v := num(cobroEnv[lambdaapi.EnvBreakerFailureThreshold]); v > 0 {
		d.Threshold = v
	}
	if s, ok := cobroEnv[lambdaapi.EnvBreakerOpenPeriod].(string); ok {
		if p, err := time.ParseDuration(s); err == nil {
			d.OpenPeriod = p
		}
	}
	for _, r := range tpl.Resources {
		switch r.Type {
		case "AWS::Lambda::EventSourceMapping":
			d.StarterConcurrency = max(d.StarterConcurrency, num(dig(r.Properties, "ScalingConfig", "MaximumConcurrency")))
		case "AWS::StepFunctions::StateMachine":
			if err := d.readCobrar(r.Properties["DefinitionString"], cobroID); err != nil {
				return d, err
			}
		}
	}
	if d.MaxAttempts == 0 {
		return d, fmt.Errorf("%s: no Cobrar task invoking mf-cobro with a Retry", DeployedTemplate)
	}
	return d, nil
}

// readCobrar finds the Task state that invokes the charging function and
// reads its Retry on PasarelaNoDisponible. References are rendered as their
// logical id (an import as "").
func (d *Deployed) readCobrar(def any, cobroID string) error {
	text, err := synthesized.Render(def, func(r synthesized.Reference) (string, error) { return r.LogicalID, nil })
	if err != nil {
		return fmt.Errorf("the state machine definition: %w", err)
	}
	var asl struct {
		States map[string]struct {
			Type       string
			Resource   string
			Parameters map[string]any
			Retry      []struct {
				ErrorEquals     []string
				MaxAttempts     *int
				IntervalSeconds *float64
				MaxDelaySeconds *float64
				JitterStrategy  string
			}
		}
	}
	if err := json.Unmarshal([]byte(text), &asl); err != nil {
		return fmt.Errorf("the state machine definition: %w", err)
	}
	for _, st := range asl.States {
		target := st.Resource + fmt.Sprint(st.Parameters["FunctionName"])
		if st.Type != "Task" || !strings.Contains(target, cobroID) {
			continue
		}
		for _, r := range st.Retry {
			for _, e := range r.ErrorEquals {
				if e != "PasarelaNoDisponible" {
					continue
				}
				d.MaxAttempts, d.IntervalSeconds, d.MaxDelay = 3, 1, 0 // Step Functions' defaults
				if r.MaxAttempts != nil {
					d.MaxAttempts = *r.MaxAttempts
				}
				if r.IntervalSeconds != nil {
					d.IntervalSeconds = *r.IntervalSeconds
				}
				if r.MaxDelaySeconds != nil {
					d.MaxDelay = *r.MaxDelaySeconds
				}
				d.Jitter = r.JitterStrategy == "FULL"
				return nil
			}
		}
	}
	return nil
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
		Jitter: d.Jitter, Pollers: ceiling, MaxPollers: ceiling, Budget: true, Breaker: true,
		Threshold: d.Threshold, OpenPeriod: d.OpenPeriod,
	}
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func num(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return 0
}
