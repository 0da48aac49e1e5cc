package cost

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/synthesized"
)

// Templates are the synthesized templates of one environment.
type Templates struct {
	Env string
	App *synthesized.App
}

// Load reads the templates of env ("<stack>-<env>.template.json") from dir:
// a cloud assembly (cdk.out) or the committed snapshots. The account comes
// from the assembly's manifest.json, or else from the ARNs the templates
// spell out.
func Load(dir, env string) (*Templates, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*-"+env+".template.json"))
	if err != nil {
		return nil, err
	}
	raws := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		raws[strings.TrimSuffix(filepath.Base(f), ".template.json")] = raw
	}
	account := manifestAccount(filepath.Join(dir, "manifest.json"), env)
	return FromTemplates(env, account, raws)
}

// FromTemplates builds Templates from raw templates by stack name. An empty
// account is inferred from the ARNs the templates spell out.
func FromTemplates(env, account string, raws map[string][]byte) (*Templates, error) {
	if len(raws) == 0 {
		return nil, fmt.Errorf("cost: no template of environment %q", env)
	}
	if account == "" {
		account = mostCommon(raws, arnAccount)
	}
	region := cmp.Or(mostCommon(raws, arnRegion), "eu-west-1")
	app := synthesized.New(env, account, region)
	for _, stack := range slices.Sorted(maps.Keys(raws)) {
		if err := app.Add(stack, raws[stack]); err != nil {
			return nil, err
		}
	}
	return &Templates{Env: env, App: app}, nil
}

func manifestAccount(path, env string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var m struct {
		Artifacts map[string]struct {
			Type        string `json:"type"`
			Environment string `json:"environment"`
		} `json:"artifacts"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for name, a := range m.Artifacts {
		if a.Type == "aws:cloudformation:stack" && strings.HasSuffix(name, "-"+env) {
			if acct, _, ok := strings.Cut(strings.TrimPrefix(a.Environment, "aws://"), "/"); ok && accountPattern.MatchString(acct) {
				return acct
			}
		}
	}
	return ""
}

var (
	accountPattern = regexp.MustCompile(`^[0-9]{12}$`)
	arnAccount     = regexp.MustCompile(`arn:aws:[a-z0-9-]+:[a-z0-9-]*:([0-9]{12}):`)
	arnRegion      = regexp.MustCompile(`arn:aws:[a-z0-9-]+:([a-z]{2}-[a-z]+-[0-9]):`)
)

// mostCommon is the value of re's first group most often found in raws
// ("" when none is; ties by the smallest value).
func mostCommon(raws map[string][]byte, re *regexp.Regexp) string {
	count := map[string]int{}
	for _, raw := range raws {
		for _, m := range re.FindAllSubmatch(raw, -1) {
			count[string(m[1])]++
		}
	}
	best := ""
	for _, k := range slices.Sorted(maps.Keys(count)) {
		if best == "" || count[k] > count[best] {
			best = k
		}
	}
	return best
}

// locals gives references their AWS meaning (synthesized.Physical) and, for
// the types Physical does not know (subnets, security groups, ...), a
// literal naming the resource: the cost model only compares ARNs of the
// types it prices, so such a value is never compared, only carried.
func (t *Templates) locals() synthesized.Literals {
	return synthesized.Literals{Physical: synthesized.Physical{App: t.App}, Placeholder: func(r *synthesized.Resource, attr string) string {
		if attr == "" {
			return "cfn:" + r.Stack + "/" + r.LogicalID
		}
		return "cfn:" + r.Stack + "/" + r.LogicalID + "." + attr
	}}
}

// resolve evaluates v, a property of a resource of stack.
func (t *Templates) resolve(stack string, v any) (any, error) {
	return t.App.Resolve(stack, v, t.locals())
}

func (t *Templates) resolveString(stack string, v any) (string, error) {
	return t.App.ResolveString(stack, v, t.locals())
}

// arnOf is the ARN (or, for a queue, also its URL) of r.
func (t *Templates) arnOf(r *synthesized.Resource) (string, error) {
	return synthesized.Physical{App: t.App}.GetAtt(r, "Arn")
}

// Part is the stack's part of the app: "Network" for
// "MercadoFresco-Network-prod".
func (t *Templates) Part(stack string) string {
	s := strings.TrimSuffix(stack, "-"+t.Env)
	if i := strings.LastIndex(s, "-"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// Label names r the same way in every environment: its SPEC name when it
// has a physical name ("mf-cobro", not "mf-cobro-dev"), otherwise its
// stack's part and construct path ("Network/Red/FlowLogs").
func (t *Templates) Label(r *synthesized.Resource) string {
	if prop, ok := nameProps[r.Type]; ok {
		if s, ok := r.Properties[prop].(string); ok && s != "" {
			return specName(s, t.Env)
		}
	}
	path := r.Path()
	if _, rest, ok := strings.Cut(path, "/"); ok {
		path = rest
	}
	path = strings.TrimSuffix(path, "/Resource")
	return t.Part(r.Stack) + "/" + path
}

var nameProps = map[string]string{
	"AWS::Lambda::Function": "FunctionName", "AWS::SQS::Queue": "QueueName", "AWS::SNS::Topic": "TopicName",
	"AWS::DynamoDB::Table": "TableName", "AWS::StepFunctions::StateMachine": "StateMachineName",
	"AWS::Logs::LogGroup": "LogGroupName", "AWS::Pipes::Pipe": "Name", "AWS::Events::EventBus": "Name",
	"AWS::Events::Rule": "Name", "AWS::ElastiCache::ServerlessCache": "ServerlessCacheName",
	"AWS::Events::ApiDestination": "Name",
}

// specName strips an environment's suffix from a physical name
// (catalog.PhysicalName: "-dev", ".fifo" kept last), or the token inside a
// name built from another one ("cola-mercadofresco-pedidos-dev-entrega-dlq").
func specName(name, env string) string {
	sfx := catalog.Suffix(env)
	if sfx == "" {
		return name
	}
	if stem, ok := strings.CutSuffix(name, ".fifo"); ok {
		return specName(stem, env) + ".fifo"
	}
	if stem, ok := strings.CutSuffix(name, sfx); ok {
		return stem
	}
	return strings.Replace(name, sfx+"-", "-", 1)
}
