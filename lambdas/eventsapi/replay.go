package eventsapi

import "time"

// Replay bounds of the order workflow's starter (lambdas/orderstart): Step
// Functions keeps an execution's name 90 days, so the starter refuses
// events older than StarterWindow and the bus archive may not keep events
// longer (docs/design.md#replay-windows, "The charge never runs twice").
const (
	// ExecutionNameRetention is how long Step Functions keeps an
	// execution's name: 90 days.
	ExecutionNameRetention = 90 * 24 * time.Hour
	// StarterWindow is how old (from its creado_en) a PedidoCreado may be
	// and still start an execution: 89 days. An execution starts after its
	// event was created, so its name is kept at least until
	// creado_en + 90 days; the day of margin covers the clocks (Aurora
	// stamps creado_en, Step Functions counts the 90 days).
	StarterWindow = ExecutionNameRetention - 24*time.Hour
	// KeyCreadoEn is the creation time's path in the starter buffer's body
	// (the EventBridge event: detail.creado_en, which the outbox publisher
	// sets from the row).
	KeyCreadoEn = "detail.creado_en"
)
