package outbox

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// CleanupConfig configures Cleanup. Zero fields take the defaults.
type CleanupConfig struct {
	// Retention is how long published rows are kept (for audit and manual
	// replay). Default 7 days.
	Retention time.Duration
	// BatchSize bounds each DELETE so it holds few locks, writes a bounded
	// amount of WAL and never runs into the Lambda timeout. Default 1000.
	BatchSize int
	// MaxBatches stops after this many batches (0 = until nothing is left
	// or ctx ends); the next run continues.
	MaxBatches int
}

// Cleanup deletes rows published more than Retention ago, in batches of
// BatchSize, oldest first, and returns how many it deleted. Unpublished
// rows, parked ones included, are never deleted: only rows with a
// publication date qualify. It stops between batches when ctx is done and
// then returns the rows deleted so far with an error wrapping ctx's error,
// so a caller can tell "nothing left" from "stopped early". It needs only
// DELETE and SELECT of id and publicado_en (docs/design.md#database-roles).
func Cleanup(ctx context.Context, db DB, cfg CleanupConfig) (int64, error) {
	cfg.Retention = cmp.Or(cfg.Retention, 7*24*time.Hour)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, 1000)
	if cfg.Retention < 0 || cfg.BatchSize < 0 || cfg.MaxBatches < 0 {
		return 0, fmt.Errorf("%w: negative cleanup setting", ErrInvalidConfig)
	}
	var total int64
	for n := 0; cfg.MaxBatches == 0 || n < cfg.MaxBatches; n++ {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("outbox: cleanup stopped after %d rows: %w", total, err)
		}
		tag, err := db.Exec(ctx, `
DELETE FROM outbox
WHERE id IN (
    SELECT id FROM outbox
    WHERE publicado_en IS NOT NULL
      AND publicado_en < now() - $1 * interval '1 millisecond'
    ORDER BY publicado_en
    LIMIT $2)`, cfg.Retention.Milliseconds(), cfg.BatchSize)
		if err != nil {
			return total, fmt.Errorf("outbox: cleanup: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(cfg.BatchSize) {
			return total, nil
		}
	}
	return total, nil
}
