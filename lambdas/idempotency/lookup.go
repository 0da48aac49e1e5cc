package idempotency

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoResult is returned by Result when key has no COMPLETADO record (no
// record, an expired one, one still EN_CURSO, or a FALLIDO).
var ErrNoResult = errors.New("idempotency: no completed record")

// Result reads the result another operation recorded under key (a
// consistent read), for an operation that may act only on what that one
// did: the refund looks up the charge it refunds. It writes nothing.
func Result[T any](ctx context.Context, s *Store, key string) (T, error) {
	var zero T
	if err := validateKey(key); err != nil {
		return zero, err
	}
	item, err := s.read(ctx, key)
	if err != nil {
		return zero, fmt.Errorf("%w: read key %q: %w", ErrStore, key, err)
	}
	if len(item) == 0 {
		return zero, fmt.Errorf("%w: key %q has no record", ErrNoResult, key)
	}
	rec, err := decodeRecord(key, item)
	if err != nil {
		return zero, err
	}
	if rec.expired(s.cfg.Now()) || rec.status != StatusCompleted {
		return zero, fmt.Errorf("%w: key %q is %s", ErrNoResult, key, rec.status)
	}
	return decodeResult[T](key, rec)
}
