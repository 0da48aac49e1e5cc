package sqsbatch

import "context"

// JSON returns a Handler that decodes each body into a T (unknown fields are
// ignored; a body that does not fit T is poison), then calls fn. What the
// consumer refuses in a body is its Config.Envelope.Content, checked before.
func JSON[T any](fn func(ctx context.Context, rec *Record, msg *T) error) Handler {
	return HandlerFunc(func(ctx context.Context, rec *Record) error {
		msg := new(T)
		if err := rec.Decode(msg); err != nil {
			return err
		}
		return fn(ctx, rec, msg)
	})
}
