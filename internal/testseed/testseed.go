// Package testseed gives tests a seeded random source whose seed is printed,
// so a failure found by a random choice can be replayed: run the test again
// with MF_SEED=<seed>.
package testseed

import (
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// EnvSeed is the variable that fixes the seed of every test that uses this
// package.
const EnvSeed = "MF_SEED"

// Rand is a random source safe for concurrent use.
type Rand struct {
	mu   sync.Mutex
	r    *rand.Rand
	Seed uint64
}

// New returns a source seeded from MF_SEED, or from the clock when it is
// unset, and logs the seed on tb.
func New(tb testing.TB) *Rand {
	tb.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(EnvSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			tb.Fatalf("%s=%q: %v", EnvSeed, v, err)
		}
		seed = n
	}
	tb.Logf("seed %d (replay with %s=%d)", seed, EnvSeed, seed)
	return FromSeed(seed)
}

// FromSeed returns a source with a fixed seed.
func FromSeed(seed uint64) *Rand {
	return &Rand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), Seed: seed}
}

// Uint64 returns a pseudo-random 64-bit value.
func (r *Rand) Uint64() uint64 { r.mu.Lock(); defer r.mu.Unlock(); return r.r.Uint64() }

// IntN returns a pseudo-random int in [0, n).
func (r *Rand) IntN(n int) int { r.mu.Lock(); defer r.mu.Unlock(); return r.r.IntN(n) }

// Int64N returns a pseudo-random int64 in [0, n) (a retry.Rand).
func (r *Rand) Int64N(n int64) int64 { r.mu.Lock(); defer r.mu.Unlock(); return r.r.Int64N(n) }

// Float64 returns a pseudo-random number in [0, 1).
func (r *Rand) Float64() float64 { r.mu.Lock(); defer r.mu.Unlock(); return r.r.Float64() }

// Duration returns a pseudo-random duration in [0, d).
func (r *Rand) Duration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Duration(r.r.Int64N(int64(d)))
}
