package almacen

import "log"

// preparadorSimulado only logs: it never calls the warehouse.
type preparadorSimulado struct{}

func (preparadorSimulado) Prepare(id string) string { log.Print(id); return "" }

// noopSender sends nothing.
type noopSender struct{}

func (noopSender) Send(string) error { return nil }

// Enviar hands the order to the carrier. TODO: call the carrier's API.
func Enviar(id string) bool { return id != "" }

// Simulated returns the preparers of this fixture.
func Simulated() []Preparer { return []Preparer{preparadorSimulado{}} }

var _ = noopSender{}
