package checks

import (
	"cmp"
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

// RuleReach: a function cannot reach what it calls, or a security group's
// egress reaches further than the calls of its resources
// (docs/design.md#reachability).
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
	// Function is the function's name (its construct path when unnamed),
	// or "security group <logical id>" for a call between groups.
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
	who := "function " + r.Function
	if strings.HasPrefix(r.Function, "security group ") {
		who = r.Function
	}
	return Finding{Rule: RuleReach, Stack: stack, Path: r.Path,
		Message: fmt.Sprintf("%s cannot reach %s: missing hop %q: %s", who, r.Target, r.Missing, r.Detail)}
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
	calls, _ := reach(app)
	return calls
}

// reach walks every call: of the functions, of the hosted secret
// rotations (SAR applications in the VPC, which call Secrets Manager) and
// between security groups (peers); then it returns the egress rules no
// call uses and those open to every protocol and address.
func reach(app *synthesized.App) ([]Call, []excess) {
	w := &walker{app: app, used: map[ruleKey]bool{}}
	var out []Call
	for _, fn := range app.Resources("AWS::Lambda::Function") {
		out = append(out, w.function(fn)...)
	}
	for _, a := range app.Resources("AWS::Serverless::Application") {
		p := a.Prop("Parameters")
		if sgs := synthesized.Dig(p, "vpcSecurityGroupIds"); sgs != nil {
			base := Call{Function: app.String(a.Stack, synthesized.Dig(p, "functionName")), Path: a.Path(), resource: a}
			out = append(out, w.inVPC(base, []string{"secretsmanager"}, w.refs(a, joined(synthesized.Dig(p, "vpcSubnetIds"))), w.refs(a, joined(sgs)))...)
		}
	}
	out = append(out, w.peers()...)
	return out, w.excess()
}

type walker struct {
	app  *synthesized.App
	used map[ruleKey]bool
}

// joined are the references of a comma-joined list (a SAR parameter), or v.
func joined(v any) []any {
	j, ok := synthesized.Dig(v, "Fn::Join").([]any)
	if !ok || len(j) != 2 {
		return []any{v}
	}
	var out []any
	for _, x := range listOf(j[1]) {
		if _, sep := x.(string); !sep {
			out = append(out, x)
		}
	}
	return out
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
		port := cmp.Or(u.Port(), map[string]string{"https": "443", "http": "80"}[u.Scheme])
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
	if inVPC {
		return w.inVPC(base, calls, w.refs(fn, vpc["SubnetIds"]), w.refs(fn, vpc["SecurityGroupIds"]))
	}
	var out []Call
	for _, c := range calls {
		r := base
		r.Target, r.Via = c, "outside the VPC"
		out = append(out, r)
	}
	return out
}

// inVPC is how calls from subnets with groups sgs are reached.
func (w *walker) inVPC(base Call, calls []string, subnets, sgs []*synthesized.Resource) []Call {
	var out []Call
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
			if !w.egress(sgs, 443, func(t egressTarget) bool { return t.group != nil && slices.Contains(epGroups, t.group) },
				func(t egressTarget) bool { return coversAll(t.cidr, epCIDRs) }) {
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
			if !w.egress(sgs, 443, func(t egressTarget) bool { return t.prefixList }, anywhere) {
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
	if !w.egress(sgs, port, anywhere) {
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

func anywhere(t egressTarget) bool { return t.cidr == "0.0.0.0/0" }

// rule is one security-group rule in the shape both inline and standalone
// rules share, with its tcp ports (-1: any protocol; tcp false: another
// protocol, or ports that cannot be read).
type rule struct {
	owner    *synthesized.Resource
	props    map[string]any
	from, to int
	tcp      bool
	key      ruleKey
}

// ruleKey names a rule: its owner and its index in the owner's inline
// list (-1: a standalone rule, -2: EC2's default egress).
type ruleKey struct {
	owner *synthesized.Resource
	i     int
}

func (r rule) on(port int) bool { return r.tcp && (r.from == -1 || port >= r.from && port <= r.to) }

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

// rules are group's rules: its inline ones (property inline) and the
// standalone ones of type standalone.
func (w *walker) rules(group *synthesized.Resource, inline, standalone string) []rule {
	var out []rule
	add := func(owner *synthesized.Resource, p map[string]any, i int) {
		from, to, tcp := w.ports(owner, p)
		out = append(out, rule{owner: owner, props: p, from: from, to: to, tcp: tcp, key: ruleKey{owner, i}})
	}
	if group == nil {
		return nil
	}
	for _, r := range w.app.Resources(standalone) {
		if w.app.Find(r.Stack, r.Prop("GroupId")) == group {
			add(r, r.Properties, -1)
		}
	}
	if group.Type == "AWS::EC2::SecurityGroup" {
		raw, present := group.Properties[inline]
		if !present && inline == "SecurityGroupEgress" && len(out) == 0 {
			// A group that lists no egress rule keeps EC2's default
			// allow-all egress. Once a standalone egress rule exists it may
			// have revoked that default (deployments show CloudFormation
			// doing so), so only the listed rules count
			// (docs/design.md#reachability).
			add(group, map[string]any{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0"}, -2)
		}
		for i, x := range listOf(raw) {
			if m, ok := x.(map[string]any); ok {
				add(group, m, i)
			}
		}
	}
	return out
}

// egress reports whether groups let tcp port out to a target one of tests
// accepts; the rules the first test that accepts any accepts serve the
// call (a narrower test first: a broader rule is not used where a narrower
// one serves).
func (w *walker) egress(groups []*synthesized.Resource, port int, tests ...func(egressTarget) bool) bool {
	for _, test := range tests {
		found := false
		for _, g := range groups {
			for _, r := range w.rules(g, "SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress") {
				t := egressTarget{
					cidr:       w.app.String(r.owner.Stack, r.props["CidrIp"]),
					group:      w.app.Find(r.owner.Stack, r.props["DestinationSecurityGroupId"]),
					prefixList: r.props["DestinationPrefixListId"] != nil,
				}
				if r.on(port) && test(t) {
					w.used[r.key], found = true, true
				}
			}
		}
		if found {
			return true
		}
	}
	return false
}

func (w *walker) ingressAdmits(group *synthesized.Resource, port int, from []*synthesized.Resource, cidr string) bool {
	for _, r := range w.rules(group, "SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress") {
		if !r.on(port) {
			continue
		}
		if src := w.app.Find(r.owner.Stack, r.props["SourceSecurityGroupId"]); src != nil && slices.Contains(from, src) {
			return true
		}
		if c := w.app.String(r.owner.Stack, r.props["CidrIp"]); c != "" && coversAll(c, []string{cidr}) {
			return true
		}
	}
	return false
}

// peers are the calls security groups declare to each other: a group's
// ingress rule that admits another group on a port is a call from that
// group's resources (to the database, its proxy, the cache); the
// endpoints' groups are left to the calls of their services.
func (w *walker) peers() []Call {
	endpoint := map[*synthesized.Resource]bool{}
	for _, ep := range w.app.Resources("AWS::EC2::VPCEndpoint") {
		for _, g := range w.refs(ep, ep.Prop("SecurityGroupIds")) {
			endpoint[g] = true
		}
	}
	var out []Call
	for _, g := range w.app.Resources("AWS::EC2::SecurityGroup") {
		for _, in := range w.rules(g, "SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress") {
			src := w.app.Find(in.owner.Stack, in.props["SourceSecurityGroupId"])
			if endpoint[g] || src == nil || !in.tcp || in.from == -1 {
				continue
			}
			c := Call{Function: "security group " + src.LogicalID, Path: src.Path(), Target: fmt.Sprintf("tcp %d to security group %s", in.from, g.LogicalID), Via: "its ingress " + in.owner.LogicalID, resource: src}
			if !w.egress([]*synthesized.Resource{src}, in.from, func(t egressTarget) bool { return t.group == g }, anywhere) {
				c.Missing, c.Detail = HopEgress, fmt.Sprintf("group %s admits it (%q), but it lets nothing out to that group on tcp %d", g.LogicalID, str(in.props["Description"]), in.from)
			}
			out = append(out, c)
		}
	}
	return out
}

// excess is an egress rule no call uses, or one open to every protocol and
// address, with the finding's message.
type excess struct {
	owner   *synthesized.Resource
	message string
}

// excess are the egress rules of every group that no call used (the CDK's
// placeholder of a group without egress allows nothing and is none) and
// those that allow every protocol to everywhere.
func (w *walker) excess() []excess {
	var out []excess
	for _, g := range w.app.Resources("AWS::EC2::SecurityGroup") {
		for _, r := range w.rules(g, "SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress") {
			s := func(k string) string { return w.app.String(r.owner.Stack, r.props[k]) }
			to := cmp.Or(s("CidrIp"), s("CidrIpv6"), s("DestinationPrefixListId"))
			if d := w.app.Find(r.owner.Stack, r.props["DestinationSecurityGroupId"]); d != nil {
				to = "security group " + d.LogicalID
			}
			what := fmt.Sprintf("security group %s's egress %q (%s %s-%s to %s)", g.LogicalID, s("Description"), s("IpProtocol"), s("FromPort"), s("ToPort"), to)
			placeholder := true
			for _, k := range []string{"CidrIp", "IpProtocol", "FromPort", "ToPort"} {
				placeholder = placeholder && s(k) == fmt.Sprint(synthesized.NoEgress[k])
			}
			switch {
			case placeholder:
			case r.from == -1 && r.tcp && (to == "0.0.0.0/0" || to == "::/0"):
				out = append(out, excess{r.owner, what + " allows every protocol to everywhere; list what its resources call instead"})
			case !w.used[r.key]:
				out = append(out, excess{r.owner, what + " serves no call of its resources; remove it, or make the call it is for visible (a grant, a URL, the peer's ingress)"})
			}
		}
	}
	return out
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
