package dlq_test

import (
	"cmp"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// scenarios are the data sets generate makes, each one way messages end up
// in mercadofresco-pedidos-fallidos: 120 orders of a 30-minute burst of
// gateway timeouts moved by SQS (transient-burst); a 3-day drip of 40
// orders with badSKU, which has no warehouse location, half refused as
// permanent by the consumer (data-drip); 340 "version": 2 orders sent
// between 22:04 and 23:51 after a producer deploy (deploy-v2); 25 payloads
// that are no order event (malformed); a burst, a drip and malformed ones
// together (mixture); 12 orders confirmed 50 days ago that the consumer
// refused as older than its 45-day window (expired).
var scenarios = []string{"transient-burst", "data-drip", "deploy-v2", "malformed", "mixture", "expired"}

// badSKU is the SKU behind the data drip.
const badSKU = "7501031311309"

// prodSource is the DeadLetterQueueSourceArn of generate's redriven
// messages in the tests: prod's cola-mercadofresco-pedidos.
const prodSource = "arn:aws:sqs:eu-west-1:333333333333:cola-mercadofresco-pedidos"

// generate returns the messages of a scenario as SQS shows them on their
// first receive from the DLQ (system attributes, and the mf-* attributes
// lambdas/sqsbatch writes), the last sent before end, those SQS moved from
// the queue source (its ARN, maxReceiveCount 4). The same arguments give
// the same messages.
func generate(scenario string, seed uint64, end time.Time, source string) ([]types.Message, error) {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), source: source}
	switch scenario {
	case "transient-burst":
		g.transientBurst(end.Add(-6*time.Hour), 120)
	case "data-drip":
		g.dataDrip(end.Add(-72*time.Hour), 40)
	case "deploy-v2":
		day := end.Add(-24 * time.Hour).Truncate(24 * time.Hour)
		g.deployV2(day.Add(22*time.Hour+4*time.Minute), day.Add(23*time.Hour+51*time.Minute), 340)
	case "malformed":
		g.malformed(end.Add(-48*time.Hour), 48*time.Hour, 25)
	case "mixture":
		g.transientBurst(end.Add(-6*time.Hour), 80)
		g.dataDrip(end.Add(-72*time.Hour), 30)
		g.malformed(end.Add(-48*time.Hour), 48*time.Hour, 10)
	case "expired":
		g.expired(end.Add(-48*time.Hour), end.Add(-50*24*time.Hour), 12)
	default:
		return nil, fmt.Errorf("unknown scenario %q (known: %v)", scenario, scenarios)
	}
	sent := func(m types.Message) int64 {
		n, _ := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
		return n
	}
	slices.SortStableFunc(g.out, func(a, b types.Message) int { return cmp.Compare(sent(a), sent(b)) })
	return g.out, nil
}

type gen struct {
	r      *rand.Rand
	source string
	out    []types.Message
	n      int
}

func (g *gen) at(start time.Time, span time.Duration) time.Time {
	return start.Add(time.Duration(g.r.Int64N(int64(span))))
}

func (g *gen) transientBurst(start time.Time, n int) {
	for range n {
		sent := g.at(start, 30*time.Minute)
		g.redriven(sent, g.order(1, "", confirmedAt(sent)))
	}
}

func (g *gen) dataDrip(start time.Time, n int) {
	for i := range n {
		sent := g.at(start, 72*time.Hour)
		if body := g.order(1, badSKU, confirmedAt(sent)); i%2 == 0 {
			g.consumerSent(sent, body, failure.KindPermanent, "permanent failure: warehouse: sku "+badSKU+" has no location in almacén MAD-1 (HTTP 422)")
		} else {
			g.redriven(sent, body)
		}
	}
}

func (g *gen) deployV2(from, to time.Time, n int) {
	for i := range n {
		sent := g.at(from, to.Sub(from))
		if i == 0 || i == n-1 { // the first and last at 22:04 and 23:51
			sent = map[bool]time.Time{true: from, false: to}[i == 0]
		}
		g.redriven(sent, g.order(2, "", confirmedAt(sent)))
	}
}

func (g *gen) malformed(start time.Time, span time.Duration, n int) {
	for i := range n {
		sent := g.at(start, span)
		var body, reason string
		switch i % 5 {
		case 0:
			full := g.order(1, "", confirmedAt(sent))
			body = full[:len(full)/2]
			reason = "poison message: malformed JSON at byte " + strconv.Itoa(len(body)) + ": unexpected end of JSON input"
		case 1:
			inner := g.order(1, "", confirmedAt(sent))
			b, _ := json.Marshal(map[string]string{"Type": "Notification", "TopicArn": "arn:aws:sns:eu-west-1:333333333333:mercadofresco-pedido-confirmado", "Message": inner})
			body = string(b)
			reason = "poison message: body is an SNS notification envelope, not the event: enable raw message delivery on the subscription"
		case 2:
			body = `[` + g.order(1, "", confirmedAt(sent)) + `]`
			reason = "poison message: malformed message: body is a JSON array, want an object"
		case 3:
			body = "PedidoConfirmado " + g.pedidoID()
			reason = "poison message: malformed JSON at byte 1: invalid character 'P' looking for beginning of value"
		default:
			body = fmt.Sprintf(`{"version":1,"tipo":"PedidoConfirmado","pedido_id":%q,"confirmado_en":%q}`, g.pedidoID(), confirmedAt(sent).Format(time.RFC3339))
			reason = "poison message: order has no lines"
		}
		g.consumerSent(sent, body, failure.KindPoison, reason)
	}
}

// expired appends n orders confirmed at confirmed, dead-lettered by the
// consumer within two days of start as older than its replay window.
func (g *gen) expired(start, confirmed time.Time, n int) {
	for range n {
		sent := g.at(start, 48*time.Hour)
		body := g.order(1, "", confirmed)
		var ev map[string]any
		_ = json.Unmarshal([]byte(body), &ev)
		age := int(sent.Sub(confirmed).Hours() / 24)
		g.consumerSent(sent, body, failure.KindPermanent, fmt.Sprintf("permanent: %s: preparacion:%s: confirmado_en %s is %d days old, beyond the %s window",
			lambdaapi.ReasonExpiredWindow, ev["pedido_id"], ev["confirmado_en"], age, sqsbatch.Days(lambdaapi.WindowPreparacion)))
	}
}

// redriven appends a message SQS moved after maxReceiveCount receives: the
// original SentTimestamp, the first receive shortly after, receive count
// maxReceiveCount+1 on this first receive from the DLQ.
func (g *gen) redriven(sent time.Time, body string) {
	first := sent.Add(time.Duration(50+g.r.IntN(900)) * time.Millisecond)
	m := g.message(body, sent, first, 5)
	m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] = g.source
	g.out = append(g.out, m)
}

// consumerSent appends a message lambdas/sqsbatch sent to the DLQ itself:
// a new message (sent at the failure), received once from the DLQ.
func (g *gen) consumerSent(sent time.Time, body string, class failure.Kind, reason string) {
	m := g.message(body, sent, sent.Add(time.Duration(1+g.r.IntN(20))*time.Minute), 1)
	m.MessageAttributes = map[string]types.MessageAttributeValue{
		sqsbatch.AttrFailureReason:     sqsbatch.StringAttribute(reason),
		sqsbatch.AttrFailureClass:      sqsbatch.StringAttribute(class.String()),
		sqsbatch.AttrConsumerVersion:   sqsbatch.StringAttribute("sha256:4f1c2ab09e7d"),
		sqsbatch.AttrOriginalMessageID: sqsbatch.StringAttribute(g.uuid()),
		sqsbatch.AttrReceiveCount:      sqsbatch.NumberAttribute(1),
	}
	g.out = append(g.out, m)
}

func (g *gen) message(body string, sent, first time.Time, receives int) types.Message {
	sum := md5.Sum([]byte(body))
	return types.Message{
		MessageId:     aws.String(g.uuid()),
		ReceiptHandle: aws.String("generated-" + strconv.Itoa(g.n)),
		Body:          aws.String(body),
		MD5OfBody:     aws.String(hex.EncodeToString(sum[:])),
		Attributes: map[string]string{
			string(types.MessageSystemAttributeNameSentTimestamp):                    strconv.FormatInt(sent.UnixMilli(), 10),
			string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp): strconv.FormatInt(first.UnixMilli(), 10),
			string(types.MessageSystemAttributeNameApproximateReceiveCount):          strconv.Itoa(receives),
			string(types.MessageSystemAttributeNameSenderId):                         "AROAEXAMPLEPRODUCER:mf-orquestador",
		},
	}
}

// order returns a PedidoConfirmado body of the given version, confirmed at
// confirmed; with sku set, one of its lines is that SKU.
func (g *gen) order(version int, sku string, confirmed time.Time) string {
	type linea struct {
		SKU      string `json:"sku"`
		Cantidad int    `json:"cantidad"`
	}
	lines := make([]linea, 1+g.r.IntN(4))
	for i := range lines {
		lines[i] = linea{SKU: strconv.Itoa(7500000000000 + g.r.IntN(3400)*7919), Cantidad: 1 + g.r.IntN(3)}
	}
	if sku != "" {
		lines[g.r.IntN(len(lines))].SKU = sku
	}
	total := float64(500+g.r.IntN(15000)) / 100
	ev := map[string]any{
		"version": version, "tipo": "PedidoConfirmado", "pedido_id": g.pedidoID(),
		"cliente_id": fmt.Sprintf("CLI-%06d", g.r.IntN(900000)), "importe": total, "moneda": "EUR", "lineas": lines,
		"confirmado_en": confirmed.UTC().Format(time.RFC3339),
	}
	if version == 2 {
		ev["entrega"] = map[string]string{"franja": "20:00-22:00"} // the field the v2 producer added
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// confirmedAt is when an order sent at sent was confirmed: the fan-out
// delivers within a second.
func confirmedAt(sent time.Time) time.Time { return sent.Add(-time.Second).UTC() }

func (g *gen) pedidoID() string { return fmt.Sprintf("PED-2026-%06d", g.r.IntN(1000000)) }

func (g *gen) uuid() string {
	g.n++
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
