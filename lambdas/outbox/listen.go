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
// are coalesced: one pending value stands for any number of commits. The
// channel is closed when ctx ends or the connection fails; Run then falls
// back to polling. conn must not be used by anyone else meanwhile.
func Listen(ctx context.Context, conn *pgx.Conn) (<-chan struct{}, error) {
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return nil, fmt.Errorf("outbox: listen: %w", err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		for {
			if _, err := conn.WaitForNotification(ctx); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, nil
}
