package sqsbatch

import "context"

// Validator is implemented by message types that check their own content;
// JSON calls it after decoding and treats an error as poison.
type Validator interface {
	Validate() error
}

// JSON returns a Handler that decodes each body into a T (unknown fields are
// ignored; a body that does not fit T is poison), runs T's Validate method if
// *T or T implements Validator (an error is poison), then calls fn.
func JSON[T any](fn func(ctx context.Context, rec *Record, msg *T) error) Handler {
	return HandlerFunc(func(ctx context.Context, rec *Record) error {
		msg := new(T)
		if err := rec.Decode(msg); err != nil {
			return err
		}
		if v, ok := any(msg).(Validator); ok {
			if err := v.Validate(); err != nil {
				return Poisonf("invalid message: %w", err)
			}
		}
		return fn(ctx, rec, msg)
	})
}
