package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// NotifyChannel is the channel the 0003 migration's trigger notifies once
// per inserting transaction, at commit.
const NotifyChannel = "outbox_pendiente"

// Listen issues LISTEN on conn (a dedicated connection straight to
// PostgreSQL: not one from a pool, and not through RDS Proxy, where LISTEN
// pins the connection) and returns a channel that receives a value soon
// after a transaction that added events commits. Pass it to Run to publish
// with milliseconds of lag instead of up to PollInterval. Notifications
// are coalesced: one pending value stands for any number of commits.
//
// The channel is closed when ctx ends, when stop is called or when the
// connection fails; Run then falls back to polling. conn belongs to the
// listener until stop returns: stop ends the listening goroutine and waits
// for it, after which the caller may use or close conn. Call stop exactly
// once, in every case (it is safe after ctx has ended).
func Listen(ctx context.Context, conn *pgx.Conn) (wake <-chan struct{}, stop func(), err error) {
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return nil, nil, fmt.Errorf("outbox: listen: %w", err)
	}
	lctx, cancel := context.WithCancel(ctx)
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			if _, err := conn.WaitForNotification(lctx); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, func() { cancel(); <-done }, nil
}
