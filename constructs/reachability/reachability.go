// Package reachability proves, on the synthesized templates of one
// environment and before anything is deployed, that every Lambda function
// can reach what it calls: each AWS service its role is granted (and its
// declared dependencies name), and each external host its configuration
// names (an http(s) URL in its environment). For a function in a VPC a path
// needs every hop: the subnet's route table (a NAT gateway with an internet
// gateway behind it, or a gateway endpoint on that route table), the
// function's security-group egress, the interface endpoint's security-group
// ingress, and private DNS (on the endpoint and on the VPC). A function
// outside a VPC passes trivially: Lambda's own network reaches AWS and the
// internet. Calls made by AWS for the function (logs, X-Ray, ENIs, KMS on
// behalf of a service, the event source mapping's polling) are not its
// calls. Check returns a Result per call; Findings are the unreachable ones,
// which app.go turns into a failed synth (rule MF-REACH).
// docs/design.md#reachability.
package reachability

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// Rule is the message prefix of a finding.
const Rule = "MF-REACH"

// Hops a path can miss, named in findings.
const (
	HopRoute      = "route"
	HopInternet   = "NAT gateway's internet route"
	HopEgress     = "security-group egress"
	HopIngress    = "endpoint security-group ingress"
	HopPrivateDNS = "private DNS"
	HopResolve    = "template reference"
)

// Result is one call of one function and how it is reached.
type Result struct {
	// Function is the function's name (its construct path when unnamed).
	Function string
	// Path is the function's construct path.
	Path string
	// Target is the AWS service ("secretsmanager") or "https://host:port".
	Target string
	// Via is how the call leaves: "outside the VPC", "interface endpoint
	// <id>", "gateway endpoint <id>" or "NAT gateway <id>".
	Via string
	// Missing is the hop that has no path ("" when reachable); Detail says why.
	Missing, Detail string
}

// OK reports whether the call is reachable.
func (r Result) OK() bool { return r.Missing == "" }

// Finding is the synth error of an unreachable call.
func (r Result) Finding() string {
	return fmt.Sprintf("[%s] %s: function %s cannot reach %s: missing hop %q: %s", Rule, r.Path, r.Function, r.Target, r.Missing, r.Detail)
}

// Findings returns the findings of the unreachable results.
func Findings(results []Result) []string {
	var out []string
	for _, r := range results {
		if !r.OK() {
			out = append(out, r.Finding())
		}
	}
	return out
}

// lambdaService are IAM prefixes of actions AWS performs for the function
// (not through its network interface): Lambda writes logs and traces and
// manages the ENIs, KMS is called by the service that holds the data, and
// an RDS IAM token is signed locally.
var lambdaService = map[string]bool{"logs": true, "xray": true, "ec2": true, "kms": true, "rds-db": true}

// pollerActions are the SQS actions of an event source mapping (Lambda's
// poller calls them, not the function's code).
var pollerActions = map[string]bool{
	"sqs:receivemessage": true, "sqs:deletemessage": true, "sqs:changemessagevisibility": true,
	"sqs:getqueueattributes": true, "sqs:getqueueurl": true,
}

// localActions are signed locally into a token the function presents to a
// data store it reaches through its security groups, not calls to the
// service: elasticache:Connect is the Valkey cache's IAM authentication.
var localActions = map[string]bool{"elasticache:connect": true}

// endpointService maps an IAM prefix to its endpoint service name where they differ.
var endpointService = map[string]string{"ses": "email"}

// Check walks every function of app (one environment's templates).
func Check(app *synthesized.App) []Result {
	w := &walker{app: app}
	var out []Result
	for _, fn := range app.Resources("AWS::Lambda::Function") {
		out = append(out, w.function(fn)...)
	}
	return out
}

type walker struct {
	app *synthesized.App
}

func (w *walker) str(r *synthesized.Resource, v any) string {
	if v == nil {
		return ""
	}
	s, err := w.app.ResolveString(r.Stack, v, names{})
	if err != nil {
		return ""
	}
	return s
}

func (w *walker) strs(r *synthesized.Resource, v any) []string {
	xs, _ := v.([]any)
	var out []string
	for _, x := range xs {
		if s := w.str(r, x); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (w *walker) byKey(key string) *synthesized.Resource {
	stack, id, ok := strings.Cut(key, "/")
	if !ok {
		return nil
	}
	r, _ := w.app.Resource(stack, id)
	return r
}

func key(r *synthesized.Resource) string { return r.Stack + "/" + r.LogicalID }

// calls returns the services and hosts fn calls, sorted.
func (w *walker) calls(fn *synthesized.Resource) []string {
	set := map[string]bool{}
	role := w.str(fn, fn.Prop("Role"))
	addAction := func(a string) {
		prefix, _, ok := strings.Cut(a, ":")
		prefix = strings.ToLower(prefix)
		if !ok || prefix == "" || lambdaService[prefix] || pollerActions[strings.ToLower(a)] || localActions[strings.ToLower(a)] {
			return
		}
		set[prefix] = true
	}
	addDoc := func(doc any) {
		stmts, _ := cfnlocalGet(doc, "Statement").([]any)
		if m, ok := cfnlocalGet(doc, "Statement").(map[string]any); ok {
			stmts = []any{m}
		}
		for _, s := range stmts {
			sm, _ := s.(map[string]any)
			if sm["Effect"] != "Allow" {
				continue
			}
			switch a := sm["Action"].(type) {
			case string:
				addAction(a)
			case []any:
				for _, x := range a {
					if s, ok := x.(string); ok {
						addAction(s)
					}
				}
			}
		}
	}
	if role != "" {
		for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
			for _, p := range w.app.Resources(typ) {
				if slices.Contains(w.strs(p, p.Prop("Roles")), role) {
					addDoc(p.Prop("PolicyDocument"))
				}
			}
		}
		if r := w.byKey(role); r != nil && r.Type == "AWS::IAM::Role" {
			pols, _ := r.Prop("Policies").([]any)
			for _, p := range pols {
				addDoc(cfnlocalGet(p, "PolicyDocument"))
			}
		}
	}
	// Declared dependencies named "<service>:<what>".
	deps, _ := fn.Metadata[synthesized.MetadataDependencies].([]any)
	for _, d := range deps {
		name, _ := cfnlocalGet(d, "name").(string)
		if prefix, _, ok := strings.Cut(name, ":"); ok && !strings.Contains(prefix, " ") {
			addAction(name)
		}
	}
	// External hosts: the http(s) URLs of its configuration.
	vars, _ := cfnlocalGet(fn.Prop("Environment"), "Variables").(map[string]any)
	for _, v := range vars {
		s, ok := v.(string)
		if !ok || !(strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		set[u.Scheme+"://"+u.Hostname()+":"+port] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func cfnlocalGet(v any, k string) any {
	m, _ := v.(map[string]any)
	return m[k]
}

func label(fn *synthesized.Resource) string {
	if n, ok := fn.Prop("FunctionName").(string); ok {
		return n
	}
	return fn.Path()
}

func (w *walker) function(fn *synthesized.Resource) []Result {
	calls := w.calls(fn)
	vpc, inVPC := fn.Prop("VpcConfig").(map[string]any)
	var out []Result
	base := Result{Function: label(fn), Path: fn.Path()}
	if !inVPC {
		for _, c := range calls {
			r := base
			r.Target, r.Via = c, "outside the VPC"
			out = append(out, r)
		}
		return out
	}
	subnetKeys := w.strs(fn, vpc["SubnetIds"])
	sgs := w.strs(fn, vpc["SecurityGroupIds"])
	var subnets []*synthesized.Resource
	unresolved := len(subnetKeys) == 0
	for _, k := range subnetKeys {
		s := w.byKey(k)
		if s == nil || s.Type != "AWS::EC2::Subnet" {
			unresolved = true
			continue
		}
		subnets = append(subnets, s)
	}
	for _, c := range calls {
		r := base
		r.Target = c
		if unresolved {
			r.Missing, r.Detail = HopResolve, "its VpcConfig.SubnetIds do not all resolve to subnets of these templates"
			out = append(out, r)
			continue
		}
		// Every subnet must have a path: Lambda places the function's
		// interfaces in all of them.
		for i, s := range subnets {
			via, missing, detail := w.path(s, sgs, c)
			if i == 0 || missing != "" {
				r.Via, r.Missing, r.Detail = via, missing, detail
			}
			if missing != "" {
				r.Detail = fmt.Sprintf("from subnet %s: %s", s.LogicalID, detail)
				break
			}
		}
		out = append(out, r)
	}
	return out
}

// path finds how a call from subnet s with groups sgs reaches target.
func (w *walker) path(s *synthesized.Resource, sgs []string, target string) (via, missing, detail string) {
	vpcKey := w.str(s, s.Prop("VpcId"))
	rtb := w.routeTable(s)
	if strings.Contains(target, "://") {
		port, _ := strconv.Atoi(target[strings.LastIndex(target, ":")+1:])
		return w.viaNAT(s, rtb, sgs, port, target)
	}
	svc := target
	if e, ok := endpointService[svc]; ok {
		svc = e
	}
	var privateOff []string
	for _, ep := range w.app.Resources("AWS::EC2::VPCEndpoint") {
		if w.str(ep, ep.Prop("VpcId")) != vpcKey || w.endpointService(ep) != svc {
			continue
		}
		typ, _ := ep.Prop("VpcEndpointType").(string)
		if typ == "" {
			typ = "Gateway"
		}
		switch typ {
		case "Interface":
			if ep.Prop("PrivateDnsEnabled") != true {
				privateOff = append(privateOff, ep.LogicalID)
				continue
			}
			via = "interface endpoint " + ep.LogicalID
			if v := w.byKey(vpcKey); v != nil && (v.Prop("EnableDnsSupport") == false || v.Prop("EnableDnsHostnames") != true) {
				return via, HopPrivateDNS, fmt.Sprintf("VPC %s needs EnableDnsSupport and EnableDnsHostnames for the private DNS of endpoint %s", v.LogicalID, ep.LogicalID)
			}
			epGroups := w.strs(ep, ep.Prop("SecurityGroupIds"))
			epCIDRs := w.subnetCIDRs(ep, ep.Prop("SubnetIds"))
			if !w.egressAllows(sgs, 443, func(rule egressTarget) bool {
				return slices.Contains(epGroups, rule.group) || coversAll(rule.cidr, epCIDRs)
			}) {
				return via, HopEgress, fmt.Sprintf("none of its security groups %s allows tcp 443 out to endpoint %s (its groups %s or subnets %v)", short(sgs), ep.LogicalID, short(epGroups), epCIDRs)
			}
			mine := cidrOf(s)
			for _, g := range epGroups {
				if w.ingressAdmits(g, 443, sgs, mine) {
					return via, "", ""
				}
			}
			return via, HopIngress, fmt.Sprintf("endpoint %s's security groups %s admit none of the function's groups %s (nor subnet %s) on tcp 443", ep.LogicalID, short(epGroups), short(sgs), mine)
		case "Gateway":
			if rtb == nil || !slices.Contains(w.strs(ep, ep.Prop("RouteTableIds")), key(rtb)) {
				continue
			}
			via = "gateway endpoint " + ep.LogicalID
			if !w.egressAllows(sgs, 443, func(rule egressTarget) bool { return rule.prefixList || isAnywhere(rule.cidr) }) {
				return via, HopEgress, fmt.Sprintf("none of its security groups %s allows tcp 443 out to the service's prefix list (gateway endpoint %s on route table %s)", short(sgs), ep.LogicalID, rtb.LogicalID)
			}
			return via, "", ""
		}
	}
	via, missing, detail = w.viaNAT(s, rtb, sgs, 443, target)
	if missing == HopRoute {
		if len(privateOff) > 0 {
			return via, HopPrivateDNS, fmt.Sprintf("the VPC's %s endpoint %s has private DNS off, so the service's public name does not resolve to it, and %s", target, strings.Join(privateOff, ", "), detail)
		}
		detail += fmt.Sprintf(", and the VPC has no %s endpoint (interface, or gateway on that route table)", target)
	}
	return via, missing, detail
}

func (w *walker) viaNAT(s, rtb *synthesized.Resource, sgs []string, port int, target string) (via, missing, detail string) {
	if rtb == nil {
		return "", HopRoute, fmt.Sprintf("subnet %s has no route table association (the VPC's main route table has no NAT route)", s.LogicalID)
	}
	var nat *synthesized.Resource
	for _, rt := range w.app.Resources("AWS::EC2::Route") {
		if w.str(rt, rt.Prop("RouteTableId")) == key(rtb) && rt.Prop("DestinationCidrBlock") == "0.0.0.0/0" && rt.Prop("NatGatewayId") != nil {
			nat = w.byKey(w.str(rt, rt.Prop("NatGatewayId")))
		}
	}
	if nat == nil {
		return "", HopRoute, fmt.Sprintf("subnet %s's route table %s has no 0.0.0.0/0 route to a NAT gateway", s.LogicalID, rtb.LogicalID)
	}
	via = "NAT gateway " + nat.LogicalID
	natSubnet := w.byKey(w.str(nat, nat.Prop("SubnetId")))
	igw := false
	if natSubnet != nil {
		if prt := w.routeTable(natSubnet); prt != nil {
			for _, rt := range w.app.Resources("AWS::EC2::Route") {
				if w.str(rt, rt.Prop("RouteTableId")) != key(prt) || rt.Prop("DestinationCidrBlock") != "0.0.0.0/0" {
					continue
				}
				if g := w.byKey(w.str(rt, rt.Prop("GatewayId"))); g != nil && g.Type == "AWS::EC2::InternetGateway" {
					igw = true
				}
			}
		}
	}
	if !igw {
		return via, HopInternet, fmt.Sprintf("NAT gateway %s's subnet has no 0.0.0.0/0 route to an internet gateway", nat.LogicalID)
	}
	if !w.egressAllows(sgs, port, func(rule egressTarget) bool { return isAnywhere(rule.cidr) }) {
		return via, HopEgress, fmt.Sprintf("none of its security groups %s allows tcp %d out to 0.0.0.0/0 (%s through %s)", short(sgs), port, target, nat.LogicalID)
	}
	return via, "", ""
}

func (w *walker) endpointService(ep *synthesized.Resource) string {
	name := w.str(ep, ep.Prop("ServiceName"))
	prefix := "com.amazonaws." + w.app.Region + "."
	return strings.TrimPrefix(name, prefix)
}

func (w *walker) routeTable(s *synthesized.Resource) *synthesized.Resource {
	for _, a := range w.app.Resources("AWS::EC2::SubnetRouteTableAssociation") {
		if w.str(a, a.Prop("SubnetId")) == key(s) {
			return w.byKey(w.str(a, a.Prop("RouteTableId")))
		}
	}
	return nil
}

func cidrOf(s *synthesized.Resource) string {
	c, _ := s.Prop("CidrBlock").(string)
	return c
}

func (w *walker) subnetCIDRs(r *synthesized.Resource, ids any) []string {
	var out []string
	for _, k := range w.strs(r, ids) {
		if s := w.byKey(k); s != nil {
			out = append(out, cidrOf(s))
		}
	}
	return out
}

type egressTarget struct {
	cidr       string
	group      string
	prefixList bool
}

// rule is one security-group rule in the shape both inline and standalone
// rules share.
type rule struct {
	owner    *synthesized.Resource
	props    map[string]any
	from, to int // -1: any port
}

func (w *walker) ports(owner *synthesized.Resource, p map[string]any) (int, int, bool) {
	proto := strings.ToLower(w.str(owner, p["IpProtocol"]))
	switch proto {
	case "-1", "all":
		return -1, -1, true
	case "tcp", "6":
	default:
		return 0, 0, false
	}
	from, err1 := strconv.Atoi(w.str(owner, p["FromPort"]))
	to, err2 := strconv.Atoi(w.str(owner, p["ToPort"]))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return from, to, true
}

func (w *walker) rules(group, inline, standalone, groupProp string) []rule {
	var out []rule
	add := func(owner *synthesized.Resource, p map[string]any) {
		if from, to, ok := w.ports(owner, p); ok {
			out = append(out, rule{owner: owner, props: p, from: from, to: to})
		}
	}
	standaloneRules := 0
	for _, r := range w.app.Resources(standalone) {
		if w.str(r, r.Prop(groupProp)) == group {
			add(r, r.Properties)
			standaloneRules++
		}
	}
	if sg := w.byKey(group); sg != nil && sg.Type == "AWS::EC2::SecurityGroup" {
		raw, present := sg.Properties[inline]
		if !present && inline == "SecurityGroupEgress" && standaloneRules == 0 {
			// A group that lists no egress rule keeps EC2's default
			// allow-all egress. Once a standalone egress rule exists it may
			// have revoked that default (deployments show CloudFormation
			// doing so), so only the listed rules count
			// (docs/design.md#reachability).
			add(sg, map[string]any{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0"})
		}
		xs, _ := raw.([]any)
		for _, x := range xs {
			if m, ok := x.(map[string]any); ok {
				add(sg, m)
			}
		}
	}
	return out
}

func (w *walker) egressAllows(groups []string, port int, to func(egressTarget) bool) bool {
	for _, g := range groups {
		for _, r := range w.rules(g, "SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress", "GroupId") {
			if r.from != -1 && (port < r.from || port > r.to) {
				continue
			}
			t := egressTarget{
				cidr:       w.str(r.owner, r.props["CidrIp"]),
				group:      w.str(r.owner, r.props["DestinationSecurityGroupId"]),
				prefixList: r.props["DestinationPrefixListId"] != nil,
			}
			if to(t) {
				return true
			}
		}
	}
	return false
}

func (w *walker) ingressAdmits(group string, port int, from []string, cidr string) bool {
	for _, r := range w.rules(group, "SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress", "GroupId") {
		if r.from != -1 && (port < r.from || port > r.to) {
			continue
		}
		if src := w.str(r.owner, r.props["SourceSecurityGroupId"]); src != "" && slices.Contains(from, src) {
			return true
		}
		if c := w.str(r.owner, r.props["CidrIp"]); c != "" && coversAll(c, []string{cidr}) {
			return true
		}
	}
	return false
}

func isAnywhere(cidr string) bool { return cidr == "0.0.0.0/0" }

// coversAll reports whether cidr contains every one of inner (none: false).
func coversAll(cidr string, inner []string) bool {
	outer, err := netip.ParsePrefix(cidr)
	if err != nil || len(inner) == 0 {
		return false
	}
	for _, s := range inner {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Bits() < outer.Bits() || !outer.Contains(p.Addr()) {
			return false
		}
	}
	return true
}

// short prints resolved "stack/logical id" keys as logical ids.
func short(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		_, id, _ := strings.Cut(k, "/")
		out[i] = id
	}
	b, _ := json.Marshal(out)
	return string(b)
}
