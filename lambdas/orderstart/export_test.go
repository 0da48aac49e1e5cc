package orderstart

import "time"

// WithClock sets the window's clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Starter) { s.window.Now = now } }
