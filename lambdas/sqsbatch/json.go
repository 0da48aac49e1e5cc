package sqsbatch

import (
	"context"

	"github.com/mercadofresco/integration/lambdas/failure"
)

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
		msg, err := decodeJSON[T](rec.Message.Body)
		if err != nil {
			return err
		}
		return fn(ctx, rec, msg)
	})
}

// CheckJSON runs on body what JSON runs before its handler: it returns the
// poison error a consumer built with JSON[T] dead-letters the message with,
// or nil when the consumer would handle it (mf-dlq classify asks it).
func CheckJSON[T any](body string) error {
	_, err := decodeJSON[T](body)
	return err
}

func decodeJSON[T any](body string) (*T, error) {
	msg := new(T)
	if err := decodeBody(body, msg); err != nil {
		return nil, err
	}
	if v, ok := any(msg).(Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, failure.Poisonf("invalid message: %w", err)
		}
	}
	return msg, nil
}
