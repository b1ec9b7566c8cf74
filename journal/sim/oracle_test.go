package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// driveBackend drives in-memory shards to completion with a fresh engine,
// the way `fusee sim drive` drives a reopened directory.
func driveBackend(t testing.TB, b *memBackend, cfg Config) *memBackend {
	t.Helper()
	e := reopenMem(b, cfg)
	if err := e.Drive(context.Background()); err != nil {
		t.Fatalf("drive: %v", err)
	}
	return b
}

// TestOracle is the determinism oracle: one workload generated into
// directories with different shard counts — and one of them resharded
// (every run renumbered) before driving — must reach the same logical
// state when stopped and when driven to completion, and the same state
// whether the engine is stopped and reopened or never stops.
func TestOracle(t *testing.T) {
	iters := 6
	if testing.Short() {
		iters = 2
	}
	if longTests() {
		iters = 200
	}
	rng := rand.New(rand.NewPCG(uint64(len(t.Name())), 7))
	for it := 0; it < iters; it++ {
		seed := rng.Uint64()
		runs := 150 + rng.IntN(400)
		n1, n2, n3 := 1+rng.IntN(12), 1+rng.IntN(12), 1+rng.IntN(12)
		frac := 0.2 + 0.7*rng.Float64()
		// Coarse ticks make many events of one run fall due in the same
		// round, where their order decides the outcome.
		cfg := Config{Tick: []int64{1000, 5000, 30000, 120000}[rng.IntN(4)]}
		t.Run(fmt.Sprintf("seed=%d/runs=%d/shards=%d,%d,%d/tick=%d", seed, runs, n1, n2, n3, cfg.Tick), func(t *testing.T) {
			o := GenOptions{Runs: runs, Seed: seed, FinishedFrac: frac, Config: cfg}
			o.Shards = n1
			eA, a := genMem(t, o)
			_, a2 := genMem(t, o)
			// Batch boundaries are physical: B flushes after every event
			// (strictly sequential), the others batch freely.
			o.Shards = n2
			o.Config.BatchOps = 1
			_, b := genMem(t, o)
			genCanon := logical(t, a.sh)
			sameCanon(t, "gen, same shard count", genCanon, logical(t, a2.sh))
			sameCanon(t, fmt.Sprintf("gen, %d vs %d shards", n1, n2), genCanon, logical(t, b.sh))
			c := &memBackend{sh: testReshard(a2.sh, n3, seed), cpNow: a2.cpNow}
			sameCanon(t, fmt.Sprintf("gen, resharded %d to %d", n1, n3), genCanon, logical(t, c.sh))

			// A: the engine never stops. A2, B, C: reopened.
			if err := eA.Drive(context.Background()); err != nil {
				t.Fatalf("drive A: %v", err)
			}
			driveBackend(t, a2, cfg)
			driveBackend(t, b, Config{Tick: cfg.Tick, BatchOps: 1 + rng.IntN(40)})
			driveBackend(t, c, cfg)
			final := logical(t, a.sh)
			sameCanon(t, "driven: never stopped vs reopened", final, logical(t, a2.sh))
			sameCanon(t, fmt.Sprintf("driven: %d vs %d shards", n1, n2), final, logical(t, b.sh))
			sameCanon(t, fmt.Sprintf("driven: resharded %d to %d", n1, n3), final, logical(t, c.sh))
		})
	}
}

// longTests reports whether the long sweeps run (FUSEE_LONG=1).
func longTests() bool { return os.Getenv("FUSEE_LONG") == "1" }
