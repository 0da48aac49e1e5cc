package cost

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

const kbPerGB = 1024 * 1024

// chargeMessaging prices SQS, SNS, EventBridge and Step Functions.
func (m *model) chargeMessaging() {
	for _, q := range m.app.Resources("AWS::SQS::Queue") {
		key, item := "sqs.request.standard", "requests, standard queues"
		if prop[bool](q, "FifoQueue") {
			key, item = "sqs.request.fifo", "requests, FIFO queues"
		}
		if n := m.queueSends[q]; n.total() > 0 {
			m.charge(item, key, n, "SQS")
		}
	}
	mappings, pollers := 0, m.u.SQS.ESMIdlePollers
	for _, esm := range m.app.Resources("AWS::Lambda::EventSourceMapping") {
		if e, ok := esm.Prop("Enabled").(bool); ok && !e {
			continue
		}
		q := m.app.Find(esm.Stack, esm.Prop("EventSourceArn"))
		if q == nil || q.Type != "AWS::SQS::Queue" {
			continue
		}
		mappings++
		key := "sqs.request.standard"
		if prop[bool](q, "FifoQueue") {
			key = "sqs.request.fifo"
		}
		polls := m.charge("idle long polls of the event source mappings", key, vol{fixed: pollers * m.secs / m.u.SQS.LongPollSeconds}, "SQS")
		polls.Detail = fmt.Sprintf("%d mappings × %g pollers × one %gs poll", mappings, pollers, m.u.SQS.LongPollSeconds) // the count so far: the last mapping's is the total
	}
	for _, t := range m.app.Resources("AWS::SNS::Topic") {
		if n := m.publishes[t]; n.total() > 0 {
			m.charge("publishes", "sns.publish", n, "SNS")
		}
	}
	for _, b := range m.app.Resources("AWS::Events::EventBus") {
		if n := m.busEvents[b]; n.total() > 0 {
			m.charge("custom events on "+m.label(b), "events.custom", n, "EventBridge")
		}
	}
	for _, a := range m.app.Resources("AWS::Events::Archive") {
		gb := m.archivedKB[a].scale(1.0 / kbPerGB)
		if gb.total() == 0 {
			continue
		}
		m.charge("archive, events archived", "events.archive.processing", gb, "EventBridge")
		months := synthesized.Number(a.Prop("RetentionDays"), 0) / 30.4375
		if months == 0 {
			months = 12
			m.note("%s keeps events forever: its storage counts one year of them", m.label(a))
		}
		m.charge("archive, storage", "events.archive.storage", gb.scale(months), "EventBridge").Detail = fmt.Sprintf("%.0f days of events", months*30.4375)
	}
	if m.apiDest.total() > 0 {
		m.charge("API destination invocations", "events.apidestination", m.apiDest, "EventBridge")
	}
	if m.pipeReqs.total() > 0 {
		m.charge("Pipes requests", "pipes.request", m.pipeReqs, "EventBridge")
	}
	if m.transitions.total() > 0 {
		m.charge("state transitions", "states.transition", m.transitions, "Step Functions").Detail = fmt.Sprintf("%.2f per execution, %g lines per order", m.tpe, m.u.LinesPerOrder)
	}
}

// chargeFunctions prices every function's compute and requests and what
// its usage entry says it does per message.
func (m *model) chargeFunctions() {
	m.tableReq = map[string][2]vol{}
	for _, fn := range m.app.Resources("AWS::Lambda::Function") {
		label := m.label(fn)
		fu, ok := m.u.Functions[label]
		if !ok {
			m.fail("function %s has no entry in the usage model (functions): say what one invocation costs, or deploy_only", label)
			continue
		}
		inv, msgs := m.fnInv[fn], m.fnMsgs[fn]
		if fu.DeployOnly {
			continue
		}
		if inv.total() == 0 {
			m.note("no modelled route invokes %s (the model follows the happy path and a declined charge)", label)
			continue
		}
		mem := synthesized.Number(fn.Prop("MemorySize"), 0)
		if mem == 0 {
			mem = 128
		}
		arch := "x86_64"
		if a, _ := fn.Prop("Architectures").([]any); len(a) == 1 {
			arch, _ = a[0].(string)
		}
		group := m.fixedOrOrder(inv)
		m.charge("compute, "+group, "lambda.gbs."+arch, inv.scale(fu.MS/1000*mem/1024), "")
		m.charge("requests", "lambda.request", inv, "")
		m.logKB[m.functionLogGroup(fn)] = m.logKB[m.functionLogGroup(fn)].add(inv.scale(fu.LogKB))
		if tc, _ := fn.Prop("TracingConfig").(map[string]any); tc["Mode"] == "Active" {
			m.traces = m.traces.add(inv.add(m.fnInTrace[fn].scale(-1)))
		}
		for _, table := range slices.Sorted(maps.Keys(fu.DynamoDB)) {
			a := fu.DynamoDB[table]
			if !m.hasTable(table) {
				m.fail("function %s writes table %s, which the templates do not have", label, table)
				continue
			}
			r := m.tableReq[table]
			m.tableReq[table] = [2]vol{r[0].add(msgs.scale(a.WRU)), r[1].add(msgs.scale(a.RRU))}
		}
		m.ecpu = m.ecpu.add(msgs.scale(fu.CacheECPU))
		m.emails = m.emails.add(msgs.scale(fu.SESEmails))
		m.secretCalls = m.secretCalls.add(msgs.scale(fu.SecretsCalls))
		if fu.EgressKB > 0 {
			gb := msgs.scale(fu.EgressKB / kbPerGB)
			m.egressGB = m.egressGB.add(gb)
			if fn.Prop("VpcConfig") != nil {
				m.natGB = m.natGB.add(gb)
			}
		}
	}
}

func (m *model) fixedOrOrder(v vol) string {
	if v.order == 0 {
		return "scheduled functions"
	}
	return "order-driven functions"
}

func (m *model) hasTable(label string) bool {
	for _, t := range m.app.Resources("AWS::DynamoDB::Table") {
		if m.label(t) == label {
			return true
		}
	}
	return false
}

// functionLogGroup is the label of the log group fn writes to.
func (m *model) functionLogGroup(fn *synthesized.Resource) string {
	if lg := m.app.Find(fn.Stack, synthesized.Dig(fn.Properties, "LoggingConfig", "LogGroup")); lg != nil {
		return m.label(lg)
	}
	name := m.app.String(fn.Stack, map[string]any{"Ref": fn.LogicalID})
	return "/aws/lambda/" + name
}

// chargeData prices DynamoDB, Aurora, RDS Proxy and ElastiCache.
func (m *model) chargeData() {
	hours := m.u.HoursPerMonth
	for _, t := range m.app.Resources("AWS::DynamoDB::Table") {
		label := m.label(t)
		tu := m.u.Tables[label]
		layer := ""
		if tu.Messaging {
			layer = "DynamoDB"
		}
		if prop[string](t, "BillingMode") != "PAY_PER_REQUEST" {
			m.fail("table %s is not on demand: the model prices on-demand tables only", label)
			continue
		}
		r := m.tableReq[label]
		wru := r[0].add(perOrder(m.orders, tu.WRUPerOrder))
		rru := r[1].add(perOrder(m.orders, tu.RRUPerOrder))
		if wru.total() > 0 {
			m.charge(label+", writes", "dynamodb.wru", wru, layer)
		}
		if rru.total() > 0 {
			m.charge(label+", reads", "dynamodb.rru", rru, layer)
		}
		if _, ok := m.u.Tables[label]; !ok {
			m.note("table %s has no storage figure in the usage model (tables)", label)
		}
		if tu.StorageGB > 0 {
			m.charge(label+", storage", "dynamodb.storage", vol{fixed: tu.StorageGB}, layer)
			if pitr, _ := t.Prop("PointInTimeRecoverySpecification").(map[string]any); pitr["PointInTimeRecoveryEnabled"] == true {
				m.charge(label+", point-in-time recovery", "dynamodb.pitr", vol{fixed: tu.StorageGB}, layer)
			}
		}
	}
	for _, c := range m.app.Resources("AWS::RDS::DBCluster") {
		label := m.label(c)
		scaling, _ := c.Prop("ServerlessV2ScalingConfiguration").(map[string]any)
		minACU := synthesized.Number(scaling["MinCapacity"], 0)
		instances := 0
		for _, i := range m.app.Resources("AWS::RDS::DBInstance") {
			if m.app.Find(i.Stack, i.Prop("DBClusterIdentifier")) == c {
				if prop[string](i, "DBInstanceClass") != "db.serverless" {
					m.fail("%s: instance class %s: the model prices Aurora Serverless v2 only", label, prop[string](i, "DBInstanceClass"))
					continue
				}
				instances++
			}
		}
		acuHours := float64(instances) * minACU * hours
		m.charge("Serverless v2 capacity at its minimum", "aurora.acu", vol{fixed: acuHours}, "").Detail = fmt.Sprintf("%d instance(s) × %g ACU × %g h", instances, minACU, hours)
		m.charge("storage", "aurora.storage", vol{fixed: m.u.Aurora.StorageGB}, "")
		m.charge("I/O", "aurora.io", perOrder(m.orders, m.u.Aurora.IOPerOrder), "")
		for _, p := range m.app.Resources("AWS::RDS::DBProxy") {
			if !m.proxyTargets(p, c) {
				continue
			}
			acu := math.Max(8, float64(instances)*minACU)
			m.charge("capacity", "rdsproxy.acu", vol{fixed: acu * hours}, "").Detail = fmt.Sprintf("the target's ACUs, at least 8: %g ACU × %g h", acu, hours)
		}
	}
	for _, c := range m.app.Resources("AWS::ElastiCache::ServerlessCache") {
		gb := math.Max(0.1, m.u.Cache.StorageGB)
		m.charge("Serverless storage (metered minimum 0.1 GB)", "elasticache."+prop[string](c, "Engine")+".storage", vol{fixed: gb * hours}, "")
		if m.ecpu.total() > 0 {
			m.charge("ECPUs", "elasticache."+prop[string](c, "Engine")+".ecpu", m.ecpu, "")
		}
	}
	if len(m.app.Resources("AWS::ElastiCache::ServerlessCache")) == 0 && m.ecpu.total() > 0 {
		m.note("the usage model has cache ECPUs but the templates have no serverless cache")
	}
}

func (m *model) proxyTargets(proxy, cluster *synthesized.Resource) bool {
	for _, tg := range m.app.Resources("AWS::RDS::DBProxyTargetGroup") {
		ids, _ := tg.Prop("DBClusterIdentifiers").([]any)
		if m.app.Find(tg.Stack, tg.Prop("DBProxyName")) == proxy && slices.ContainsFunc(ids, func(id any) bool { return m.app.Find(tg.Stack, id) == cluster }) {
			return true
		}
	}
	return false
}

// chargeNetwork prices NAT gateways, public IPv4 addresses, interface
// endpoints and internet egress.
func (m *model) chargeNetwork() {
	hours := m.u.HoursPerMonth
	if n := len(m.app.Resources("AWS::EC2::NatGateway")); n > 0 {
		m.charge("NAT gateways", "vpc.nat.hour", vol{fixed: float64(n) * hours}, "").Detail = fmt.Sprintf("%d × %g h", n, hours)
		if m.natGB.total() > 0 {
			m.charge("NAT data processed", "vpc.nat.gb", m.natGB, "")
		}
	} else if m.natGB.total() > 0 {
		m.note("functions in a VPC send data to the internet, but the templates have no NAT gateway")
	}
	if n := len(m.app.Resources("AWS::EC2::EIP")); n > 0 {
		m.charge("public IPv4 addresses", "vpc.ipv4.hour", vol{fixed: float64(n) * hours}, "").Detail = fmt.Sprintf("%d × %g h", n, hours)
	}
	azHours, endpoints := 0.0, 0
	for _, e := range m.app.Resources("AWS::EC2::VPCEndpoint") {
		if prop[string](e, "VpcEndpointType") != "Interface" {
			continue
		}
		subnets, _ := e.Prop("SubnetIds").([]any)
		endpoints++
		azHours += float64(len(subnets)) * hours
	}
	if endpoints > 0 {
		m.charge("interface endpoints", "vpc.endpoint.hour", vol{fixed: azHours}, "").Detail = fmt.Sprintf("%d endpoints × their zones × %g h", endpoints, hours)
		if m.endpointKB.total() > 0 {
			m.charge("endpoint data processed", "vpc.endpoint.gb", m.endpointKB.scale(1.0/kbPerGB), "")
		}
	}
	if m.egressGB.total() > 0 {
		m.charge("out to the internet", "internet.egress.gb", m.egressGB, "")
	}
}

// logSources adds the logs the templates imply beside those of functions
// and workflows: VPC flow logs, PostgreSQL's exported log, and the SES
// events of the sent emails that a rule of the default bus logs (and
// prices the emails).
func (m *model) logSources() {
	for _, f := range m.app.Resources("AWS::EC2::FlowLog") {
		if lg := m.app.Find(f.Stack, f.Prop("LogGroupName")); lg != nil {
			m.logKB[m.label(lg)] = m.logKB[m.label(lg)].add(vol{fixed: m.u.Logs.FlowLogsGB * kbPerGB})
		}
	}
	for label, lg := range m.logGroups {
		if name := prop[string](lg, "LogGroupName"); strings.HasPrefix(name, "/aws/rds/cluster/") && strings.HasSuffix(name, "/postgresql") {
			m.logKB[label] = m.logKB[label].add(vol{fixed: m.u.Logs.PostgresqlGB * kbPerGB})
		}
	}
	if m.emails.total() > 0 {
		m.charge("emails", "ses.email", m.emails, "")
		for _, r := range m.app.Resources("AWS::Events::Rule") {
			if bus := m.app.String(r.Stack, r.Prop("EventBusName")); bus != "" && bus != "default" {
				continue
			}
			pat, _ := json.Marshal(r.Prop("EventPattern"))
			if strings.Contains(string(pat), `"aws.ses"`) {
				m.ruleTargets(r, m.emails.scale(m.u.Logs.SESEventsPerEmail), m.u.Logs.SESEventKB, 0)
			}
		}
	}
}

// chargeSecurity prices KMS keys and requests and Secrets Manager.
func (m *model) chargeSecurity() {
	if n := len(m.app.Resources("AWS::KMS::Key")); n > 0 {
		m.charge("customer managed keys", "kms.key", vol{fixed: float64(n)}, "")
	}
	cache := m.u.KMSCacheSeconds
	reqs := vol{}
	periods := func(v vol, seconds float64) vol { return v.min(m.secs / seconds).scale(2) }
	for _, q := range m.app.Resources("AWS::SQS::Queue") {
		if q.Prop("KmsMasterKeyId") != nil {
			s := synthesized.Number(q.Prop("KmsDataKeyReusePeriodSeconds"), 0)
			if s == 0 {
				s = cache
			}
			reqs = reqs.add(periods(m.queueSends[q], s))
		}
	}
	for _, t := range m.app.Resources("AWS::SNS::Topic") {
		if t.Prop("KmsMasterKeyId") != nil {
			reqs = reqs.add(periods(m.publishes[t], cache))
		}
	}
	for _, t := range m.app.Resources("AWS::DynamoDB::Table") {
		if sse, _ := t.Prop("SSESpecification").(map[string]any); sse["SSEType"] == "KMS" {
			r := m.tableReq[m.label(t)]
			reqs = reqs.add(periods(r[0].add(r[1]).add(perOrder(m.orders, m.u.Tables[m.label(t)].WRUPerOrder)), cache))
		}
	}
	for label, kb := range m.logKB {
		if lg := m.logGroups[label]; lg != nil && lg.Prop("KmsKeyId") != nil {
			reqs = reqs.add(periods(kb, cache))
		}
	}
	for _, b := range m.app.Resources("AWS::Events::EventBus") {
		if b.Prop("KmsKeyIdentifier") != nil {
			reqs = reqs.add(periods(m.busEvents[b], cache))
		}
	}
	for _, sm := range m.app.Resources("AWS::StepFunctions::StateMachine") {
		if ec, _ := sm.Prop("EncryptionConfiguration").(map[string]any); ec["Type"] == "CUSTOMER_MANAGED_KMS_KEY" {
			reqs = reqs.add(periods(m.execs[sm], cache))
		}
	}
	reqs = reqs.add(m.secretCalls)
	if reqs.total() > 0 {
		m.charge("requests", "kms.request", reqs, "")
	}
	secrets := len(m.app.Resources("AWS::SecretsManager::Secret"))
	connections := len(m.app.Resources("AWS::Events::Connection"))
	if secrets+connections > 0 {
		m.charge("secrets", "secretsmanager.secret", vol{fixed: float64(secrets + connections)}, "").Detail = fmt.Sprintf("%d, and %d that EventBridge keeps for its API destination connections", secrets, connections)
	}
	if m.secretCalls.total() > 0 {
		m.charge("API calls", "secretsmanager.request", m.secretCalls, "")
	}
}

// alarmedMetric is one metric an alarm is billed for.
type alarmedMetric struct {
	namespace, name, dimensions any
	highResolution              bool
}

// alarmedMetrics returns the metrics an alarm is billed for: its one metric,
// or every MetricStat of a metric-math alarm (an expression is not billed).
// A metric is high resolution when its period is known and under 60 s; a
// period that is absent or a token counts as standard, the same for both
// kinds of alarm.
func alarmedMetrics(a *synthesized.Resource) []alarmedMetric {
	highResolution := func(period any) bool { p := synthesized.Number(period, 0); return p > 0 && p < 60 }
	list, _ := a.Prop("Metrics").([]any)
	if len(list) == 0 {
		return []alarmedMetric{{a.Prop("Namespace"), a.Prop("MetricName"), a.Prop("Dimensions"), highResolution(a.Prop("Period"))}}
	}
	var out []alarmedMetric
	for _, q := range list {
		if ms := synthesized.Dig(q, "MetricStat"); ms != nil {
			metric := func(k string) any { return synthesized.Dig(ms, "Metric", k) }
			out = append(out, alarmedMetric{metric("Namespace"), metric("MetricName"), metric("Dimensions"), highResolution(synthesized.Dig(ms, "Period"))})
		}
	}
	return out
}

// chargeMonitoring prices alarms, dashboards, custom metrics, logs, X-Ray
// and SES.
func (m *model) chargeMonitoring() {
	metrics := map[string]bool{}
	std, high := 0.0, 0.0
	for _, a := range m.app.Resources("AWS::CloudWatch::Alarm") {
		for _, am := range alarmedMetrics(a) {
			customMetric(metrics, am.namespace, am.name, am.dimensions)
			if am.highResolution {
				high++
			} else {
				std++
			}
		}
	}
	if std > 0 {
		m.charge("alarms", "cloudwatch.alarm", vol{fixed: std}, "").Detail = fmt.Sprintf("%g alarmed metrics", std)
	}
	if high > 0 {
		m.charge("alarms, high resolution", "cloudwatch.alarm.highres", vol{fixed: high}, "")
	}
	if n := len(m.app.Resources("AWS::CloudWatch::CompositeAlarm")); n > 0 {
		m.charge("composite alarms", "cloudwatch.alarm.composite", vol{fixed: float64(n)}, "")
	}
	if n := len(m.app.Resources("AWS::CloudWatch::Dashboard")); n > 0 {
		m.charge("dashboards", "cloudwatch.dashboard", vol{fixed: float64(n)}, "")
	}
	if len(metrics) > 0 {
		m.charge("custom metrics (those alarmed)", "cloudwatch.metric", vol{fixed: float64(len(metrics))}, "")
		m.note("custom metrics: only those an alarm names are counted; the code may emit more (EMF)")
	}
	ingest, stored := vol{}, vol{}
	for _, label := range slices.Sorted(maps.Keys(m.logKB)) {
		gb := m.logKB[label].scale(1.0 / kbPerGB)
		ingest = ingest.add(gb)
		months := 12.0
		if lg := m.logGroups[label]; lg != nil && synthesized.Number(lg.Prop("RetentionInDays"), 0) > 0 {
			months = synthesized.Number(lg.Prop("RetentionInDays"), 0) / 30.4375
		} else if gb.total() > 0 {
			m.note("log group %s never expires: its storage counts one year of logs", label)
		}
		stored = stored.add(gb.scale(m.u.Logs.CompressionRatio * months))
	}
	if ingest.total() > 0 {
		m.charge("logs ingested", "logs.ingest", ingest, "")
		m.charge("logs stored (at each group's retention)", "logs.storage", stored, "")
	}
	for _, sm := range m.app.Resources("AWS::StepFunctions::StateMachine") {
		if tc, _ := sm.Prop("TracingConfiguration").(map[string]any); tc["Enabled"] == true {
			m.traces = m.traces.add(m.execs[sm])
		}
	}
	if m.traces.total() > 0 {
		m.charge("traces recorded", "xray.trace", m.traces, "")
		m.note("X-Ray: below 1 request a second per function the default sampling rule records every request")
	}
}

func customMetric(set map[string]bool, ns, name, dims any) {
	n, _ := ns.(string)
	if n == "" || strings.HasPrefix(n, "AWS/") {
		return
	}
	d, _ := json.Marshal(dims)
	set[fmt.Sprintf("%s|%v|%s", n, name, d)] = true
}
