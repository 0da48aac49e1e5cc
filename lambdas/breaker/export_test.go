package breaker

// Key returns the store key of the circuit.
func (b *Breaker) Key() string { return b.key }
