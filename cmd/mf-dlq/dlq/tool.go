// Package dlq is the DLQ runbook (docs/runbooks/dlq.md) as code, behind
// cmd/mf-dlq: each step is a method of Tool (Contain, Inspect, Classify,
// Redrive, Verify) over the SDK's SQS, Lambda and CloudWatch clients
// narrowed to the calls it makes, and a retry.Clock, so tests run on
// internal/localaws in virtual time. Classify gives a DLQ's messages a
// verdict with its evidence (classify.go).
//
// Inspect and Classify never delete: they receive with a 5 s visibility
// timeout, make every message visible again, and refuse a queue with a
// redrive policy of its own. Redrive needs the operator's word that the
// cause is fixed, moves only the verdicts named when poison or data are
// among them, leaves expired messages unless re-admitted, sends each
// message before deleting it, and holds a rate. Verify answers yes only
// when every check passed. The numbers: docs/design.md#dlq-tool.
package dlq

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// The errors cmd/mf-dlq turns into its exit codes; any other is an error.
var (
	ErrUsage         = errors.New("usage")
	ErrEmpty         = errors.New("the dead-letter queue is empty")
	ErrRefused       = errors.New("refused") // a rail of the runbook stopped the command
	ErrNotVerified   = errors.New("not verified")
	ErrQueueNotFound = errors.New("the queue does not exist")
	errPermission    = errors.New("missing permission")
)

// SQS is the part of *sqs.Client the runbook uses.
type SQS interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListDeadLetterSourceQueues(context.Context, *sqs.ListDeadLetterSourceQueuesInput, ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// Lambda is the part of *lambda.Client the runbook uses: the consumers'
// event source mappings.
type Lambda interface {
	ListEventSourceMappings(context.Context, *lambda.ListEventSourceMappingsInput, ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	UpdateEventSourceMapping(context.Context, *lambda.UpdateEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

// CloudWatch is the part of *cloudwatch.Client the runbook uses.
type CloudWatch interface {
	GetMetricData(context.Context, *cloudwatch.GetMetricDataInput, ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// Tool runs the runbook steps. SQS and Clock are required; without Lambda
// or CloudWatch the checks that need them are unknown.
type Tool struct {
	SQS        SQS
	Lambda     Lambda
	CloudWatch CloudWatch
	Clock      retry.Clock
	// Out receives results, Log progress and warnings (default: discarded).
	Out, Log io.Writer
	// Connection are the --endpoint-url, --profile and --region flags as
	// given: every command the tool suggests repeats them.
	Connection []string
}

// Command is the mf-dlq command line of args with the Connection flags.
func (t *Tool) Command(args ...string) string {
	parts := []string{"mf-dlq"}
	for _, a := range append(args, t.Connection...) {
		if a == "" || strings.ContainsAny(a, " \t'\"$*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func (t *Tool) out() io.Writer { return cmp.Or(t.Out, io.Discard) }
func (t *Tool) log() io.Writer { return cmp.Or(t.Log, io.Discard) }

// QueueRef is a resolved queue with its attributes at resolution.
type QueueRef struct {
	Name, URL, ARN string
	Attrs          map[string]string
}

// redrivePolicy returns the queue's redrive policy; ok is false without one.
func (q QueueRef) redrivePolicy() (dlqARN string, maxReceives int, ok bool) {
	var raw struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if json.Unmarshal([]byte(q.Attrs[string(types.QueueAttributeNameRedrivePolicy)]), &raw) != nil || raw.DeadLetterTargetArn == "" {
		return "", 0, false
	}
	// SQS returns the count as a number or a string, depending on how it was set.
	n, _ := strconv.Atoi(strings.Trim(string(raw.MaxReceiveCount), `"`))
	return raw.DeadLetterTargetArn, n, true
}

// Target is a DLQ with the queues that dead-letter into it and its entry
// in config/catalog (nil for a queue of another project).
type Target struct {
	DLQ     QueueRef
	Sources []QueueRef
	Env     string
	Catalog *catalog.Queue
}

// Consumer is the registry's entry of the function that reads the target's
// queue, if the catalogue names one.
func (tg *Target) Consumer() (consumers.Consumer, bool) {
	if tg.Catalog == nil {
		return consumers.Consumer{}, false
	}
	return consumers.Find(tg.Catalog.Function)
}

// Resolve finds the DLQ meant by spec: a URL, an ARN, a name, or with env
// a name of config/catalog ("Pedidos"); a source stands for its DLQ.
func (t *Tool) Resolve(ctx context.Context, spec, env string) (*Target, error) {
	if spec == "" {
		return nil, fmt.Errorf("%w: name the queue (a URL, a name, or a logical name such as Pedidos with -e dev|staging|prod)", ErrUsage)
	}
	url, err := t.urlOf(ctx, spec, env)
	if err != nil {
		return nil, err
	}
	tg := &Target{Env: env}
	if tg.DLQ, err = t.ref(ctx, url); err != nil {
		return nil, err
	}
	sources, err := t.deadLetterSources(ctx, tg.DLQ)
	if dlqARN, _, ok := tg.DLQ.redrivePolicy(); ok && err == nil && len(sources) == 0 {
		// A source queue: work on its DLQ.
		name, err := queueName(dlqARN)
		if err != nil {
			return nil, err
		}
		dlqURL, err := t.queueURL(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("%s names %s as its dead-letter queue, which cannot be found: %w", tg.DLQ.Name, name, err)
		}
		if tg.DLQ, err = t.ref(ctx, dlqURL); err != nil {
			return nil, err
		}
		if sources, err = t.deadLetterSources(ctx, tg.DLQ); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	for _, u := range sources {
		s, err := t.ref(ctx, u)
		if err != nil {
			return nil, err
		}
		tg.Sources = append(tg.Sources, s)
	}
	if q, e, _, ok := catalog.FindPhysical(tg.DLQ.Name); ok {
		tg.Catalog, tg.Env = &q, cmp.Or(tg.Env, e)
	}
	return tg, nil
}

func (t *Tool) urlOf(ctx context.Context, spec, env string) (string, error) {
	if strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://") {
		return spec, nil
	}
	if strings.HasPrefix(spec, "arn:") {
		name, err := queueName(spec)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrUsage, err)
		}
		spec = name
	}
	name := spec
	q, _, inCatalog := catalog.Find(spec)
	logicals := strings.Join(catalog.Logicals(), ", ")
	if env != "" {
		if err := catalog.ValidEnvironment(env); err != nil {
			return "", fmt.Errorf("%w: %w", ErrUsage, err)
		}
		if !inCatalog {
			return "", fmt.Errorf("%w: with -e, name a queue of config/catalog: a logical name (%s) or its catalogue name; %q is neither (for any other queue pass its physical name or URL without -e)", ErrQueueNotFound, logicals, spec)
		}
		name = catalog.PhysicalName(q.DLQName, env)
	} else if inCatalog && strings.EqualFold(spec, q.Logical) {
		return "", fmt.Errorf("%w: %q is a logical name: add -e dev|staging|prod to say which environment's queue", ErrUsage, spec)
	}
	url, err := t.queueURL(ctx, name)
	if errors.Is(err, ErrQueueNotFound) {
		hint := "check the name, the account (--profile) and the region (--region)"
		if _, e, _, ok := catalog.FindPhysical(name); env == "" && ok {
			hint += " (the name is " + e + "'s)"
		} else if env == "" {
			hint += "; the queues of config/catalog can be named by logical name with -e (" + logicals + ")"
		}
		return "", fmt.Errorf("queue %q does not exist: %s: %w", name, hint, err)
	}
	return url, err
}

func (t *Tool) ref(ctx context.Context, url string) (QueueRef, error) {
	attrs, err := t.attributes(ctx, url)
	if err != nil {
		return QueueRef{}, fmt.Errorf("read the attributes of %s: %w", url, err)
	}
	ref := QueueRef{URL: url, ARN: attrs[string(types.QueueAttributeNameQueueArn)], Attrs: attrs, Name: url[strings.LastIndex(url, "/")+1:]}
	if name, err := queueName(ref.ARN); err == nil {
		ref.Name = name
	}
	return ref, nil
}

func (t *Tool) queueURL(ctx context.Context, name string) (string, error) {
	out, err := t.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return "", awsError("sqs:GetQueueUrl", err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// attributes reads the queue's attributes names (all without names).
func (t *Tool) attributes(ctx context.Context, url string, names ...types.QueueAttributeName) (map[string]string, error) {
	if len(names) == 0 {
		names = []types.QueueAttributeName{types.QueueAttributeNameAll}
	}
	out, err := t.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: names})
	if err != nil {
		return nil, awsError("sqs:GetQueueAttributes", err)
	}
	return out.Attributes, nil
}

// depth is the queue's visible, in-flight and delayed message counts.
func (t *Tool) depth(ctx context.Context, url string) (visible, inflight, delayed int, err error) {
	a, err := t.attributes(ctx, url, types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	return atoi(a[string(types.QueueAttributeNameApproximateNumberOfMessages)]), atoi(a[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]),
		atoi(a[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)]), err
}

func (t *Tool) deadLetterSources(ctx context.Context, q QueueRef) ([]string, error) {
	var urls []string
	p := sqs.NewListDeadLetterSourceQueuesPaginator(t.SQS, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &q.URL})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the queues that dead-letter into %s: %w", q.Name, awsError("sqs:ListDeadLetterSourceQueues", err))
		}
		urls = append(urls, out.QueueUrls...)
	}
	return urls, nil
}

// moveTask is the latest message move task of the DLQ, nil when none.
func (t *Tool) moveTask(ctx context.Context, q QueueRef) (*types.ListMessageMoveTasksResultEntry, error) {
	out, err := t.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: &q.ARN, MaxResults: aws.Int32(1)})
	if err != nil || len(out.Results) == 0 {
		return nil, awsError("sqs:ListMessageMoveTasks", err)
	}
	return &out.Results[0], nil
}

func queueName(queueARN string) (string, error) {
	a, err := arn.Parse(queueARN)
	if err != nil || a.Service != "sqs" || a.Resource == "" {
		return "", fmt.Errorf("%q is not an SQS queue ARN", queueARN)
	}
	return a.Resource, nil
}

// Mapping is a Lambda event source mapping: a queue's consumer.
type Mapping struct {
	UUID        string `json:"uuid"`
	FunctionARN string `json:"function_arn"`
	State       string `json:"state"` // Enabled, Disabled, Enabling, Disabling, ...
}

// consumers lists the event source mappings that read the queue, or says
// why it cannot.
func (t *Tool) consumers(ctx context.Context, q QueueRef) ([]Mapping, error) {
	if t.Lambda == nil {
		return nil, errors.New("not available (no Lambda client)")
	}
	var out []Mapping
	p := lambda.NewListEventSourceMappingsPaginator(t.Lambda, &lambda.ListEventSourceMappingsInput{EventSourceArn: &q.ARN})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("Lambda API unavailable: %s", err)
		}
		for _, m := range page.EventSourceMappings {
			out = append(out, Mapping{UUID: aws.ToString(m.UUID), FunctionARN: aws.ToString(m.FunctionArn), State: aws.ToString(m.State)})
		}
	}
	return out, nil
}

// metric is an AWS/SQS metric of the queue in one-minute periods from
// since to now, latest first, or says why it cannot.
func (t *Tool) metric(ctx context.Context, queue, name string, stat cwtypes.Statistic, since time.Time) ([]float64, error) {
	if t.CloudWatch == nil {
		return nil, errors.New("not available (no CloudWatch client)")
	}
	out, err := t.CloudWatch.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(since.Truncate(time.Minute)), EndTime: aws.Time(t.Clock.Now().Truncate(time.Minute).Add(time.Minute)), ScanBy: cwtypes.ScanByTimestampDescending,
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("m"), MetricStat: &cwtypes.MetricStat{Period: aws.Int32(60), Stat: aws.String(string(stat)),
			Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SQS"), MetricName: &name, Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: &queue}}}}}},
	})
	if err != nil {
		return nil, fmt.Errorf("unknown: CloudWatch unavailable: %s", err)
	}
	var vs []float64
	for _, r := range out.MetricDataResults {
		vs = append(vs, r.Values...)
	}
	return vs, nil
}

// awsError names the action of a failed AWS call, and the missing
// permission when it was denied.
func awsError(action string, err error) error {
	var api smithy.APIError
	if err == nil {
		return nil
	} else if errors.As(err, &api) {
		switch strings.TrimPrefix(api.ErrorCode(), "AWS.SimpleQueueService.") {
		case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation":
			return fmt.Errorf("%w: the caller lacks %s: %w", errPermission, action, err)
		case "QueueDoesNotExist", "NonExistentQueue", "ResourceNotFoundException":
			return fmt.Errorf("%s: %w: %w", action, ErrQueueNotFound, err)
		}
	}
	return fmt.Errorf("%s: %w", action, err)
}

// PeekVisibility is the visibility timeout of inspection receives: if the
// tool dies, the messages are back in 5 seconds by themselves.
const PeekVisibility = 5 * time.Second

// peek receives up to max distinct messages of q without deleting any, and
// makes every one visible again before it returns, also when ctx is done.
// It refuses a queue with a redrive policy: each receive would count.
func (t *Tool) peek(ctx context.Context, q QueueRef, max int) ([]types.Message, error) {
	if to, n, ok := q.redrivePolicy(); ok {
		return nil, fmt.Errorf("%w: %s has a redrive policy (maxReceiveCount %d, to %s): every receive counts towards it and could move messages on; look at its dead-letter queue instead", ErrRefused, q.Name, n, to)
	}
	var out []types.Message
	handles := map[string]string{} // message id -> latest receipt handle
	defer func() { t.release(ctx, q.URL, handles) }()
	for waited := false; ; waited = true {
		// Receive until max are held, two receives come back empty, or a
		// budget of receives is spent (a queue that keeps handing back messages).
		idle, budget, reported := 0, 2*(max+len(out))/10+10, len(out)
		for ; len(out) < max && idle < 2 && budget > 0; budget-- {
			if len(out)-reported >= 100 {
				reported = len(out)
				fmt.Fprintf(t.log(), "received %d messages of %s so far (at most %d)…\n", reported, q.Name, max)
			}
			got, err := t.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q.URL, MaxNumberOfMessages: int32(min(10, max-len(out))),
				VisibilityTimeout: int32(PeekVisibility / time.Second), WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			if err != nil {
				return out, fmt.Errorf("receive from %s: %w", q.Name, awsError("sqs:ReceiveMessage", err))
			}
			idle++
			for _, m := range got.Messages {
				if _, seen := handles[aws.ToString(m.MessageId)]; !seen {
					out = append(out, m)
				}
				handles[aws.ToString(m.MessageId)], idle = aws.ToString(m.ReceiptHandle), 0
			}
		}
		if len(out) >= max || waited {
			return out, nil
		}
		// A receive whose answer was lost leaves its messages in flight:
		// release ours and, if some still are, wait once for them.
		t.release(ctx, q.URL, handles)
		_, inflight, _, err := t.depth(ctx, q.URL)
		if err != nil || inflight == 0 {
			return out, nil
		}
		fmt.Fprintf(t.log(), "%d messages of %s are in flight (another receiver, or a receive whose answer was lost); waiting %s for them\n", inflight, q.Name, PeekVisibility+time.Second)
		if err := t.Clock.Sleep(ctx, PeekVisibility+time.Second); err != nil {
			return out, err
		}
	}
}

// release makes the messages visible again at once, even after Ctrl-C. A
// handle whose visibility already ran out is fine.
func (t *Tool) release(ctx context.Context, url string, handles map[string]string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for id, h := range handles {
		_, err := t.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: &h})
		var notInflight *types.MessageNotInflight
		var badHandle *types.ReceiptHandleIsInvalid
		if err != nil && !errors.As(err, &notInflight) && !errors.As(err, &badHandle) {
			fmt.Fprintf(t.log(), "warning: could not release message %s (it comes back by itself within %s): %v\n", id, PeekVisibility, err)
		}
	}
}

// emptyError explains an empty DLQ, naming messages in flight.
func (t *Tool) emptyError(ctx context.Context, q QueueRef) error {
	visible, inflight, _, err := t.depth(ctx, q.URL)
	msg := fmt.Sprintf("%s returned no message (ApproximateNumberOfMessages %d)", q.Name, visible)
	if err == nil && inflight > 0 {
		msg += fmt.Sprintf("; %d are in flight: someone else is receiving them (another inspection, a redrive in progress?); they come back when their visibility timeout ends", inflight)
	}
	return fmt.Errorf("%w: %s", ErrEmpty, msg)
}

// WriteMessages writes msgs as JSON lines in the shape of
// `aws sqs receive-message --attribute-names All --message-attribute-names All`.
func WriteMessages(w io.Writer, msgs []types.Message) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range msgs {
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	return nil
}

// ReadMessages reads messages saved by WriteMessages or by the AWS CLI
// (one or more receive-message documents, {"Messages": [...]}).
func ReadMessages(r io.Reader) ([]types.Message, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var out []types.Message
	for n := 1; ; n++ {
		var v struct {
			Messages *[]types.Message
			types.Message
		}
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("JSON value %d: %w (want JSON lines of messages or receive-message output)", n, err)
		}
		switch {
		case v.Messages != nil:
			out = append(out, *v.Messages...)
		case v.Body != nil:
			out = append(out, v.Message)
		default:
			return nil, fmt.Errorf("JSON value %d is neither a message (no Body) nor a receive-message document (no Messages)", n)
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
