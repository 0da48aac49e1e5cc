// Package fakealmacen is a fixture of the nostub test: a test double that a
// main must never import.
package fakealmacen

// Prepare answers without a warehouse.
func Prepare(id string) string { return "prep-" + id }
