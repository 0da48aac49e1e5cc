package metrics

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// SQS message attributes the queue-wait measurement reads (Lambda's SQS
// event carries them on every record).
const (
	AttrSentTimestamp         = "SentTimestamp"
	AttrFirstReceiveTimestamp = "ApproximateFirstReceiveTimestamp"
	AttrReceiveCount          = "ApproximateReceiveCount"
)

// QueueWait is how long a message waited in its queue before its first
// receive (ApproximateFirstReceiveTimestamp - SentTimestamp), and whether
// this receive is that first one (a redelivery has waited on a visibility
// timeout, not in the queue). ok is false when an attribute is missing or
// malformed.
func QueueWait(attrs map[string]string) (wait time.Duration, first, ok bool) {
	sent, err1 := strconv.ParseInt(attrs[AttrSentTimestamp], 10, 64)
	recv, err2 := strconv.ParseInt(attrs[AttrFirstReceiveTimestamp], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false, false
	}
	wait = max(time.Duration(recv-sent)*time.Millisecond, 0)
	return wait, attrs[AttrReceiveCount] == "1", true
}

// QueueWaits writes the second objective's record of one batch, given each
// message's attributes: MensajesRecibidos (messages on their first
// receive), MensajesEsperaExcedida (those that waited longer than
// lambdaapi.SLOQueueWait) and EsperaColaSegundos (the longest wait). A
// batch with no first receive writes nothing.
func QueueWaits(e Emitter, attrs ...map[string]string) error {
	var received, late float64
	var longest time.Duration
	for _, a := range attrs {
		wait, first, ok := QueueWait(a)
		if !ok || !first {
			continue
		}
		received++
		if wait > lambdaapi.SLOQueueWait {
			late++
		}
		longest = max(longest, wait)
	}
	if received == 0 {
		return nil
	}
	return e.Write(
		Metric{Name: lambdaapi.MetricMessagesReceived, Unit: UnitCount, Value: received},
		Metric{Name: lambdaapi.MetricMessagesLate, Unit: UnitCount, Value: late},
		Metric{Name: lambdaapi.MetricQueueWaitSeconds, Unit: UnitSeconds, Value: longest.Seconds()},
	)
}

// Confirmation writes the first objective's record of one confirmed order
// from the times its confirmation carries (RFC 3339): PedidosConfirmados 1,
// PedidosConfirmadosTarde 1 when confirmadoEn is more than
// lambdaapi.SLOConfirmation after creadoEn (else 0), and
// PedidoConfirmacionSegundos. ok is false, and nothing is written, when a
// time is missing or malformed.
func Confirmation(e Emitter, creadoEn, confirmadoEn string) (ok bool, err error) {
	created, err1 := time.Parse(time.RFC3339Nano, creadoEn)
	confirmed, err2 := time.Parse(time.RFC3339Nano, confirmadoEn)
	if err1 != nil || err2 != nil {
		return false, nil
	}
	took := max(confirmed.Sub(created), 0)
	late := 0.0
	if took > lambdaapi.SLOConfirmation {
		late = 1
	}
	return true, e.Write(
		Metric{Name: lambdaapi.MetricOrdersConfirmed, Unit: UnitCount, Value: 1},
		Metric{Name: lambdaapi.MetricOrdersConfirmedLate, Unit: UnitCount, Value: late},
		Metric{Name: lambdaapi.MetricConfirmationSeconds, Unit: UnitSeconds, Value: took.Seconds()},
	)
}

// Confirmations writes Confirmation's record for each body (a
// PedidoConfirmado message) whose attributes say it is on its first
// receive, so a redelivered confirmation counts once. Bodies without both
// times are skipped.
func Confirmations(e Emitter, bodies []string, attrs []map[string]string) error {
	for i, b := range bodies {
		if i < len(attrs) {
			if _, first, ok := QueueWait(attrs[i]); ok && !first {
				continue
			}
		}
		var times struct {
			CreadoEn     string `json:"creado_en"`
			ConfirmadoEn string `json:"confirmado_en"`
		}
		if json.Unmarshal([]byte(b), &times) != nil {
			continue
		}
		if _, err := Confirmation(e, times.CreadoEn, times.ConfirmadoEn); err != nil {
			return err
		}
	}
	return nil
}
