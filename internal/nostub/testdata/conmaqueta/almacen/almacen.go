// Package almacen is a fixture of the nostub test: a deployed package with
// a stand-in implementation.
package almacen

// Preparer prepares orders.
type Preparer interface{ Prepare(id string) string }

// stubPreparer stands in for the warehouse integration.
type stubPreparer struct{}

func (stubPreparer) Prepare(id string) string { return "prep-" + id }

// New returns the preparer.
func New() Preparer { return stubPreparer{} }

// Reservar is a stub: it reserves nothing yet.
func Reservar(id string) bool { return id != "" }
