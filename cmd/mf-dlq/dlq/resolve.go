package dlq

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/config/catalog"
)

// QueueRef is a resolved queue.
type QueueRef struct {
	Name, URL, ARN string
	// Attrs are its attributes (GetQueueAttributes All) at resolution.
	Attrs map[string]string
}

// MaxReceiveCount returns the maxReceiveCount of the queue's redrive
// policy, 0 when it has none.
func (q QueueRef) MaxReceiveCount() int {
	rp, ok := parseRedrive(q.Attrs[string(types.QueueAttributeNameRedrivePolicy)])
	if !ok {
		return 0
	}
	return rp.MaxReceiveCount
}

// Target is a dead-letter queue with the queues that dead-letter into it.
type Target struct {
	DLQ QueueRef
	// Sources are the queues whose redrive policy names DLQ (empty for the
	// DLQ of an SNS subscription or EventBridge target).
	Sources []QueueRef
	// Env is the environment the names belong to ("" when unknown).
	Env string
	// Catalog is the queue's entry in config/catalog, nil when the
	// queue is not one of the project's.
	Catalog *catalog.Queue
}

type redrivePolicy struct {
	DeadLetterTargetArn string
	MaxReceiveCount     int
}

func parseRedrive(s string) (redrivePolicy, bool) {
	if s == "" {
		return redrivePolicy{}, false
	}
	var raw struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(s), &raw) != nil || raw.DeadLetterTargetArn == "" {
		return redrivePolicy{}, false
	}
	// SQS returns the count as a number or a string, depending on how it was set.
	n, _ := strconv.Atoi(strings.Trim(string(raw.MaxReceiveCount), `"`))
	return redrivePolicy{DeadLetterTargetArn: raw.DeadLetterTargetArn, MaxReceiveCount: n}, true
}

// Resolve finds the dead-letter queue meant by spec: a queue URL, an ARN, a
// physical name, or, with env set, a logical name from config/catalog
// ("Pedidos") or its catalogue name ("mercadofresco-pedidos-fallidos"). Naming a
// source queue resolves to its DLQ.
func (t *Tool) Resolve(ctx context.Context, spec, env string) (*Target, error) {
	if spec == "" {
		return nil, fmt.Errorf("%w: name the queue (a URL, a name, or a logical name such as Pedidos with -e dev|staging|prod)", ErrUsage)
	}
	url, err := t.urlOf(ctx, spec, env)
	if err != nil {
		return nil, err
	}
	ref, err := t.ref(ctx, url)
	if err != nil {
		return nil, err
	}
	target := &Target{DLQ: ref, Env: env}
	sources, err := t.deadLetterSources(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("list the queues that dead-letter into %s: %w", ref.Name, err)
	}
	if rp, ok := parseRedrive(ref.Attrs[string(types.QueueAttributeNameRedrivePolicy)]); ok && len(sources) == 0 {
		// A source queue: work on its DLQ.
		name, err := queueName(rp.DeadLetterTargetArn)
		if err != nil {
			return nil, err
		}
		dlqURL, err := t.queueURL(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("%s names %s as its dead-letter queue, which cannot be found: %w", ref.Name, name, err)
		}
		if target.DLQ, err = t.ref(ctx, dlqURL); err != nil {
			return nil, err
		}
		if sources, err = t.deadLetterSources(ctx, dlqURL); err != nil {
			return nil, fmt.Errorf("list the queues that dead-letter into %s: %w", name, err)
		}
	}
	for _, u := range sources {
		s, err := t.ref(ctx, u)
		if err != nil {
			return nil, err
		}
		target.Sources = append(target.Sources, s)
	}
	if q, e, _, ok := catalog.FindPhysical(target.DLQ.Name); ok {
		target.Catalog = &q
		target.Env = cmp.Or(target.Env, e)
	}
	return target, nil
}

func (t *Tool) urlOf(ctx context.Context, spec, env string) (string, error) {
	switch {
	case strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://"):
		return spec, nil
	case strings.HasPrefix(spec, "arn:"):
		name, err := queueName(spec)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrUsage, err)
		}
		spec = name
	}
	name := spec
	q, _, inCatalog := catalog.Find(spec)
	if env != "" {
		if err := catalog.ValidEnvironment(env); err != nil {
			return "", fmt.Errorf("%w: %w", ErrUsage, err)
		}
		if !inCatalog {
			return "", fmt.Errorf("%w: with -e, name a queue of config/catalog: a logical name (%s) or its catalogue name; %q is neither (for any other queue pass its physical name or URL without -e)",
				ErrQueueNotFound, strings.Join(catalog.Logicals(), ", "), spec)
		}
		name = catalog.PhysicalName(q.DLQName, env)
	} else if inCatalog && strings.EqualFold(spec, q.Logical) {
		return "", fmt.Errorf("%w: %q is a logical name: add -e dev|staging|prod to say which environment's queue", ErrUsage, spec)
	}
	url, err := t.queueURL(ctx, name)
	if errors.Is(err, ErrQueueNotFound) {
		hint := "check the name, the account (--profile) and the region (--region)"
		if env == "" {
			if _, e, _, ok := catalog.FindPhysical(name); !ok {
				hint += fmt.Sprintf("; the queues of config/catalog can be named by logical name with -e (%s)", strings.Join(catalog.Logicals(), ", "))
			} else {
				hint += " (the name is " + e + "'s)"
			}
		}
		return "", fmt.Errorf("queue %q does not exist: %s: %w", name, hint, err)
	}
	if err != nil {
		return "", fmt.Errorf("find queue %q: %w", name, err)
	}
	return url, nil
}

func (t *Tool) ref(ctx context.Context, url string) (QueueRef, error) {
	attrs, err := t.queueAttributes(ctx, url)
	if err != nil {
		return QueueRef{}, fmt.Errorf("read the attributes of %s: %w", url, err)
	}
	ref := QueueRef{URL: url, ARN: attrs[string(types.QueueAttributeNameQueueArn)], Attrs: attrs}
	if name, err := queueName(ref.ARN); err == nil {
		ref.Name = name
	} else {
		ref.Name = url[strings.LastIndex(url, "/")+1:]
	}
	return ref, nil
}
