package checks

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// RuleReach: a function cannot reach what it calls (docs/design.md#reachability).
const RuleReach = "MF-REACH"

// Hops a path can miss, named in findings.
const (
	HopRoute      = "route"
	HopInternet   = "NAT gateway's internet route"
	HopEgress     = "security-group egress"
	HopIngress    = "endpoint security-group ingress"
	HopPrivateDNS = "private DNS"
	HopResolve    = "template reference"
)

// Call is one call of one function and how it is reached. What a function
// calls: each AWS service its role is granted (and its declared
// dependencies name) and each external host its configuration names (an
// http(s) URL in its environment); calls AWS makes for it (logs, X-Ray,
// ENIs, KMS on behalf of a service, the mapping's polling) are not its
// calls. From a VPC a call needs every hop: the subnet's route table (a
// NAT gateway with an internet gateway behind it, or a gateway endpoint on
// that route table), the function's security-group egress, the interface
// endpoint's ingress and private DNS (on the endpoint and on the VPC).
type Call struct {
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

	resource *synthesized.Resource
}

// OK reports whether the call is reachable.
func (r Call) OK() bool { return r.Missing == "" }

// Finding is the MF-REACH finding of an unreachable call.
func (r Call) Finding() Finding {
	stack, _, _ := strings.Cut(r.Path, "/")
	return Finding{Rule: RuleReach, Stack: stack, Path: r.Path,
		Message: fmt.Sprintf("function %s cannot reach %s: missing hop %q: %s", r.Function, r.Target, r.Missing, r.Detail)}
}

// lambdaService are IAM prefixes of actions AWS performs for the function
// (not through its network interface): Lambda writes logs and traces and
// manages the ENIs, KMS is called by the service that holds the data, and
// an RDS IAM token is signed locally.
var lambdaService = map[string]bool{"logs": true, "xray": true, "ec2": true, "kms": true, "rds-db": true}

// notCalls are actions the function's code does not call: the SQS actions
// of an event source mapping (Lambda's poller calls them), and
// elasticache:Connect, signed locally into a token the function presents
// to the Valkey cache it reaches through its security groups (the cache's
// IAM authentication).
var notCalls = map[string]bool{
	"sqs:receivemessage": true, "sqs:deletemessage": true, "sqs:changemessagevisibility": true,
	"sqs:getqueueattributes": true, "sqs:getqueueurl": true, "elasticache:connect": true,
}

// endpointService maps an IAM prefix to its endpoint service name where they differ.
var endpointService = map[string]string{"ses": "email"}

// Reach is every call of every function of app, and how it is reached.
func Reach(app *synthesized.App) []Call {
	w := &walker{app: app}
	var out []Call
	for _, fn := range app.Resources("AWS::Lambda::Function") {
		out = append(out, w.function(fn)...)
	}
	return out
}

type walker struct {
	app *synthesized.App
}

// refs are the resources a list names (nil for one that names none).
func (w *walker) refs(r *synthesized.Resource, v any) []*synthesized.Resource {
	var out []*synthesized.Resource
	for _, x := range listOf(v) {
		out = append(out, w.app.Find(r.Stack, x))
	}
	return out
}

// calls returns the services and hosts fn calls, sorted.
func (w *walker) calls(fn *synthesized.Resource) []string {
	set := map[string]bool{}
	addAction := func(a string) {
		prefix, _, ok := strings.Cut(a, ":")
		prefix = strings.ToLower(prefix)
		if !ok || prefix == "" || lambdaService[prefix] || notCalls[strings.ToLower(a)] {
			return
		}
		set[prefix] = true
	}
	addDoc := func(doc any) {
		stmts := listOf(synthesized.Dig(doc, "Statement"))
		if m, ok := synthesized.Dig(doc, "Statement").(map[string]any); ok {
			stmts = []any{m}
		}
		for _, s := range stmts {
			if synthesized.Dig(s, "Effect") != "Allow" {
				continue
			}
			switch a := synthesized.Dig(s, "Action").(type) {
			case string:
				addAction(a)
			case []any:
				for _, x := range a {
					addAction(str(x))
				}
			}
		}
	}
	if role := w.app.Find(fn.Stack, fn.Prop("Role")); role != nil {
		for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
			for _, p := range w.app.Resources(typ) {
				if slices.Contains(w.refs(p, p.Prop("Roles")), role) {
					addDoc(p.Prop("PolicyDocument"))
				}
			}
		}
		if role.Type == "AWS::IAM::Role" {
			for _, p := range listOf(role.Prop("Policies")) {
				addDoc(synthesized.Dig(p, "PolicyDocument"))
			}
		}
	}
	// Declared dependencies named "<service>:<what>".
	for _, d := range listOf(fn.Metadata[synthesized.MetadataDependencies]) {
		name := str(synthesized.Dig(d, "name"))
		if prefix, _, ok := strings.Cut(name, ":"); ok && !strings.Contains(prefix, " ") {
			addAction(name)
		}
	}
	// External hosts: the http(s) URLs of its configuration.
	vars, _ := synthesized.Dig(fn.Prop("Environment"), "Variables").(map[string]any)
	for _, v := range vars {
		s := str(v)
		if !(strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) {
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
	return slices.Sorted(maps.Keys(set))
}

func (w *walker) function(fn *synthesized.Resource) []Call {
	calls := w.calls(fn)
	vpc, inVPC := fn.Prop("VpcConfig").(map[string]any)
	base := Call{Function: fn.Path(), Path: fn.Path(), resource: fn}
	if n, ok := fn.Prop("FunctionName").(string); ok {
		base.Function = n
	}
	var out []Call
	if !inVPC {
		for _, c := range calls {
			r := base
			r.Target, r.Via = c, "outside the VPC"
			out = append(out, r)
		}
		return out
	}
	subnets := w.refs(fn, vpc["SubnetIds"])
	sgs := w.refs(fn, vpc["SecurityGroupIds"])
	unresolved := len(subnets) == 0 || slices.ContainsFunc(subnets, func(s *synthesized.Resource) bool { return s == nil || s.Type != "AWS::EC2::Subnet" })
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
func (w *walker) path(s *synthesized.Resource, sgs []*synthesized.Resource, target string) (via, missing, detail string) {
	vpc := w.app.Find(s.Stack, s.Prop("VpcId"))
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
		if w.app.Find(ep.Stack, ep.Prop("VpcId")) != vpc || strings.TrimPrefix(w.app.String(ep.Stack, ep.Prop("ServiceName")), "com.amazonaws."+w.app.Region+".") != svc {
			continue
		}
		switch typ := str(ep.Prop("VpcEndpointType")); typ {
		case "Interface":
			if ep.Prop("PrivateDnsEnabled") != true {
				privateOff = append(privateOff, ep.LogicalID)
				continue
			}
			via = "interface endpoint " + ep.LogicalID
			if vpc != nil && (vpc.Prop("EnableDnsSupport") == false || vpc.Prop("EnableDnsHostnames") != true) {
				return via, HopPrivateDNS, fmt.Sprintf("VPC %s needs EnableDnsSupport and EnableDnsHostnames for the private DNS of endpoint %s", vpc.LogicalID, ep.LogicalID)
			}
			epGroups := w.refs(ep, ep.Prop("SecurityGroupIds"))
			var epCIDRs []string
			for _, sub := range w.refs(ep, ep.Prop("SubnetIds")) {
				if sub != nil {
					epCIDRs = append(epCIDRs, str(sub.Prop("CidrBlock")))
				}
			}
			if !w.egressAllows(sgs, 443, func(rule egressTarget) bool {
				return slices.Contains(epGroups, rule.group) && rule.group != nil || coversAll(rule.cidr, epCIDRs)
			}) {
				return via, HopEgress, fmt.Sprintf("none of its security groups %s allows tcp 443 out to endpoint %s (its groups %s or subnets %v)", short(sgs), ep.LogicalID, short(epGroups), epCIDRs)
			}
			mine := str(s.Prop("CidrBlock"))
			for _, g := range epGroups {
				if w.ingressAdmits(g, 443, sgs, mine) {
					return via, "", ""
				}
			}
			return via, HopIngress, fmt.Sprintf("endpoint %s's security groups %s admit none of the function's groups %s (nor subnet %s) on tcp 443", ep.LogicalID, short(epGroups), short(sgs), mine)
		case "Gateway", "":
			if rtb == nil || !slices.Contains(w.refs(ep, ep.Prop("RouteTableIds")), rtb) {
				continue
			}
			via = "gateway endpoint " + ep.LogicalID
			if !w.egressAllows(sgs, 443, func(rule egressTarget) bool { return rule.prefixList || rule.cidr == "0.0.0.0/0" }) {
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

// defaultRoute is the resource the 0.0.0.0/0 route of route table rtb
// sends to through property (NatGatewayId, GatewayId), nil when none does.
func (w *walker) defaultRoute(rtb *synthesized.Resource, property string) *synthesized.Resource {
	var to *synthesized.Resource
	for _, rt := range w.app.Resources("AWS::EC2::Route") {
		if w.app.Find(rt.Stack, rt.Prop("RouteTableId")) == rtb && rt.Prop("DestinationCidrBlock") == "0.0.0.0/0" && rt.Prop(property) != nil {
			to = w.app.Find(rt.Stack, rt.Prop(property))
		}
	}
	return to
}

func (w *walker) viaNAT(s, rtb *synthesized.Resource, sgs []*synthesized.Resource, port int, target string) (via, missing, detail string) {
	if rtb == nil {
		return "", HopRoute, fmt.Sprintf("subnet %s has no route table association (the VPC's main route table has no NAT route)", s.LogicalID)
	}
	nat := w.defaultRoute(rtb, "NatGatewayId")
	if nat == nil {
		return "", HopRoute, fmt.Sprintf("subnet %s's route table %s has no 0.0.0.0/0 route to a NAT gateway", s.LogicalID, rtb.LogicalID)
	}
	via = "NAT gateway " + nat.LogicalID
	igw := false
	if natSubnet := w.app.Find(nat.Stack, nat.Prop("SubnetId")); natSubnet != nil {
		if prt := w.routeTable(natSubnet); prt != nil {
			g := w.defaultRoute(prt, "GatewayId")
			igw = g != nil && g.Type == "AWS::EC2::InternetGateway"
		}
	}
	if !igw {
		return via, HopInternet, fmt.Sprintf("NAT gateway %s's subnet has no 0.0.0.0/0 route to an internet gateway", nat.LogicalID)
	}
	if !w.egressAllows(sgs, port, func(rule egressTarget) bool { return rule.cidr == "0.0.0.0/0" }) {
		return via, HopEgress, fmt.Sprintf("none of its security groups %s allows tcp %d out to 0.0.0.0/0 (%s through %s)", short(sgs), port, target, nat.LogicalID)
	}
	return via, "", ""
}

func (w *walker) routeTable(s *synthesized.Resource) *synthesized.Resource {
	for _, a := range w.app.Resources("AWS::EC2::SubnetRouteTableAssociation") {
		if w.app.Find(a.Stack, a.Prop("SubnetId")) == s {
			return w.app.Find(a.Stack, a.Prop("RouteTableId"))
		}
	}
	return nil
}

type egressTarget struct {
	cidr       string
	group      *synthesized.Resource
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
	switch strings.ToLower(w.app.String(owner.Stack, p["IpProtocol"])) {
	case "-1", "all":
		return -1, -1, true
	case "tcp", "6":
	default:
		return 0, 0, false
	}
	from, err1 := strconv.Atoi(w.app.String(owner.Stack, p["FromPort"]))
	to, err2 := strconv.Atoi(w.app.String(owner.Stack, p["ToPort"]))
	return from, to, err1 == nil && err2 == nil
}

// rules are group's rules on port: its inline ones (property inline) and
// the standalone ones of type standalone.
func (w *walker) rules(group *synthesized.Resource, port int, inline, standalone string) []rule {
	var out []rule
	add := func(owner *synthesized.Resource, p map[string]any) {
		if from, to, ok := w.ports(owner, p); ok && (from == -1 || port >= from && port <= to) {
			out = append(out, rule{owner: owner, props: p, from: from, to: to})
		}
	}
	if group == nil {
		return nil
	}
	standaloneRules := 0
	for _, r := range w.app.Resources(standalone) {
		if w.app.Find(r.Stack, r.Prop("GroupId")) == group {
			add(r, r.Properties)
			standaloneRules++
		}
	}
	if group.Type == "AWS::EC2::SecurityGroup" {
		raw, present := group.Properties[inline]
		if !present && inline == "SecurityGroupEgress" && standaloneRules == 0 {
			// A group that lists no egress rule keeps EC2's default
			// allow-all egress. Once a standalone egress rule exists it may
			// have revoked that default (deployments show CloudFormation
			// doing so), so only the listed rules count
			// (docs/design.md#reachability).
			add(group, map[string]any{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0"})
		}
		for _, x := range listOf(raw) {
			if m, ok := x.(map[string]any); ok {
				add(group, m)
			}
		}
	}
	return out
}

func (w *walker) egressAllows(groups []*synthesized.Resource, port int, to func(egressTarget) bool) bool {
	for _, g := range groups {
		for _, r := range w.rules(g, port, "SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress") {
			t := egressTarget{
				cidr:       w.app.String(r.owner.Stack, r.props["CidrIp"]),
				group:      w.app.Find(r.owner.Stack, r.props["DestinationSecurityGroupId"]),
				prefixList: r.props["DestinationPrefixListId"] != nil,
			}
			if to(t) {
				return true
			}
		}
	}
	return false
}

func (w *walker) ingressAdmits(group *synthesized.Resource, port int, from []*synthesized.Resource, cidr string) bool {
	for _, r := range w.rules(group, port, "SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress") {
		if src := w.app.Find(r.owner.Stack, r.props["SourceSecurityGroupId"]); src != nil && slices.Contains(from, src) {
			return true
		}
		if c := w.app.String(r.owner.Stack, r.props["CidrIp"]); c != "" && coversAll(c, []string{cidr}) {
			return true
		}
	}
	return false
}

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

// short prints resources by their logical ids.
func short(rs []*synthesized.Resource) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		if r != nil {
			out[i] = r.LogicalID
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
