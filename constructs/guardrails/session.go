package guardrails

import (
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/mercadofresco/integration/constructs/cfnindex"
)

// The guardrails ask jsii as little as they can: each question is a round
// trip to the Node process, and an environment has about a thousand
// constructs (docs/design.md#performance). What Go itself recorded (which
// stacks were checked, what was acknowledged) is kept in Go; the tree is
// listed and resolved once per app and shared by the aspects of one Apply.
// The jsii runtime hands back the same Go value for the same construct, so
// constructs are map keys.

// session is the state the aspects of one Apply share: the tree of each app
// they have indexed, by stack.
type session struct {
	mu    sync.Mutex
	trees map[awscdk.Stack]*cfnindex.Tree
}

func newSession() *session { return &session{trees: map[awscdk.Stack]*cfnindex.Tree{}} }

// tree returns the indexed tree of c's app, listing it on first use: c is
// a stack (found again by its Go value), or any construct of the app.
func (s *session) tree(c constructs.IConstruct) *cfnindex.Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stack, ok := c.(awscdk.Stack); ok {
		if t := s.trees[stack]; t != nil {
			return t
		}
	}
	t := cfnindex.NewTree(c.Node().Root())
	for _, ix := range t.Indexes {
		s.trees[ix.Stack] = t
	}
	return t
}

// once reports whether key is seen for the first time in set: a stack is
// checked once even when the aspects are added to both the app and a stack.
func once(set *sync.Map, key awscdk.Stack) bool {
	_, seen := set.LoadOrStore(key, true)
	return !seen
}

var (
	messagingChecked, contractsChecked sync.Map // awscdk.Stack -> true
)

// acknowledgements are the Acknowledge calls, by app root and construct
// path (paths repeat across the apps of one test binary).
var acknowledgements = struct {
	sync.Mutex
	byRoot map[constructs.IConstruct]map[string][]ack
}{byRoot: map[constructs.IConstruct]map[string][]ack{}}

type ack struct{ rule, reason string }

func recordAcknowledgement(c constructs.IConstruct, rule, reason string) {
	root, path := c.Node().Root(), *c.Node().Path()
	acknowledgements.Lock()
	defer acknowledgements.Unlock()
	m := acknowledgements.byRoot[root]
	if m == nil {
		m = map[string][]ack{}
		acknowledgements.byRoot[root] = m
	}
	m[path] = append(m[path], ack{rule, reason})
}

// acknowledgedReason is the reason of the acknowledgement of rule on r's
// construct or an ancestor ("" when there is none); as in the construct
// tree's scopes, the outermost acknowledgement comes first.
func acknowledgedReason(root constructs.IConstruct, r *resource, rule string) string {
	acknowledgements.Lock()
	defer acknowledgements.Unlock()
	m := acknowledgements.byRoot[root]
	if len(m) == 0 {
		return ""
	}
	path := r.Path()
	scopes := []string{""} // the app
	for i, c := range path {
		if c == '/' {
			scopes = append(scopes, path[:i])
		}
	}
	for _, p := range append(scopes, path) {
		for _, a := range m[p] {
			if a.rule == rule {
				return a.reason
			}
		}
	}
	return ""
}
