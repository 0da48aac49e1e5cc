package sqsbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// BenchmarkProcess measures batch throughput (records/s) of the library:
// envelope check, JSON decode, logging, fan-out to workers and the response.
// The "io" cases give the handler 1 ms of simulated dependency latency to show
// what bounded parallelism buys.
func BenchmarkProcess(b *testing.B) {
	cases := []struct {
		name        string
		fifo        bool
		size        int
		latency     time.Duration
		concurrency int
	}{
		{"standard/10/cpu", false, 10, 0, 8},
		{"fifo-5groups/10/cpu", true, 10, 0, 8},
		{"standard/10/io-1ms/concurrency-1", false, 10, time.Millisecond, 1},
		{"standard/10/io-1ms/concurrency-8", false, 10, time.Millisecond, 8},
		{"fifo-5groups/10/io-1ms/concurrency-8", true, 10, time.Millisecond, 8},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p := mustNew(b, sqsbatch.Config{
				Logger: discard(), Concurrency: c.concurrency, Envelope: sqsbatch.EnvelopeRules{RequiredKeys: []string{"pedido_id"}}, IdempotencyKey: keyByPedido,
				Handler: sqsbatch.JSON(func(_ context.Context, rec *sqsbatch.Record, ped *pedido) error {
					if c.latency > 0 {
						time.Sleep(c.latency)
					}
					return nil
				}),
			})
			ev := events.SQSEvent{}
			for i := range c.size {
				if c.fifo {
					ev.Records = append(ev.Records, fifoMsg("m"+itoa(i), "G"+itoa(i%5), order("P"+itoa(i))))
				} else {
					ev.Records = append(ev.Records, msg("m"+itoa(i), order("P"+itoa(i))))
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				resp, err := p.Process(ctx, ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					b.Fatal(resp, err)
				}
			}
			b.ReportMetric(float64(b.N*c.size)/time.Since(start).Seconds(), "records/s")
		})
	}
}
