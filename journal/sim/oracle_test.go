package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/model"
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
// whether the engine is stopped and reopened or never stops. Six
// workloads (two under -race, the quick tier, see testtier; 200 with FUSEE_LONG=1).
func TestOracle(t *testing.T) {
	iters := 6
	if testing.Short() {
		iters = 2
	}
	if testtier.Long() {
		iters = 200
	}
	// In the quick tier (testtier.Quick) every third workload, from an offset
	// that changes daily, so three days of runs drive all six.
	trim, off := 1, 0
	if testtier.Quick() && !testing.Short() {
		trim, off = 3, testtier.Offset(t, 3)
		t.Logf("under -race: workloads %d, %d of 0-5 (FUSEE_RACE_FULL=1 drives all six)", off, off+3)
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
		// Drawn here, not in the subtest, so that skipped workloads leave
		// the others as they are.
		batchOps := 1 + rng.IntN(40)
		if it%trim != off {
			continue
		}
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
			// C: resharded by the product's reshard; D: by the test
			// reshard, which renumbers every run (the harsher test that
			// the engine never depends on run numbers).
			o.Shards, o.Config.BatchOps = n1, 0
			_, a3 := genMem(t, o)
			c := &memBackend{sh: realReshard(t, a2.sh, n3), cpNow: a2.cpNow}
			sameCanon(t, fmt.Sprintf("gen, resharded %d to %d", n1, n3), genCanon, logical(t, c.sh))
			verifyClean(t, fmt.Sprintf("resharded %d to %d", n1, n3), c.sh)
			d := &memBackend{sh: testReshard(a3.sh, n3, seed), cpNow: a3.cpNow}
			sameCanon(t, fmt.Sprintf("gen, renumbered %d to %d", n1, n3), genCanon, logical(t, d.sh))
			verifyClean(t, fmt.Sprintf("renumbered %d to %d", n1, n3), d.sh)

			// A: the engine never stops. A2, B, C: reopened.
			if err := eA.Drive(context.Background()); err != nil {
				t.Fatalf("drive A: %v", err)
			}
			driveBackend(t, a2, cfg)
			driveBackend(t, b, Config{Tick: cfg.Tick, BatchOps: batchOps})
			driveBackend(t, c, cfg)
			driveBackend(t, d, cfg)
			final := logical(t, a.sh)
			sameCanon(t, "driven: never stopped vs reopened", final, logical(t, a2.sh))
			sameCanon(t, fmt.Sprintf("driven: %d vs %d shards", n1, n2), final, logical(t, b.sh))
			sameCanon(t, fmt.Sprintf("driven: resharded %d to %d", n1, n3), final, logical(t, c.sh))
			sameCanon(t, fmt.Sprintf("driven: renumbered %d to %d", n1, n3), final, logical(t, d.sh))
		})
	}
}

// verifyClean fails the test if check.Verify finds a problem in shards
// produced by testReshard, other than the generation order it scrambles
// on purpose (the engine must not depend on it; the real reshard keeps
// it).
func verifyClean(t testing.TB, what string, shards []*model.Shard) {
	t.Helper()
	var bad []string
	for _, f := range check.Verify(check.FromShards(shards)) {
		if f.Problem() && f.Kind != check.KindGenOrder {
			bad = append(bad, f.String())
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s: verify finds %d problems:\n%s", what, len(bad), strings.Join(bad[:min(len(bad), 10)], "\n"))
	}
}

// TestOracleCatchesMisroutedDedup shows that the oracle needs the dedup
// entries where a reshard's routing puts them: a test reshard that puts
// each entry on the shard after its receiving workflow's makes repeats
// of the messages that were seen but not acknowledged look new, and the
// driven state differs from the one that was not resharded (Verify also
// names the misplaced entries). The correctly routed copy matches.
func TestOracleCatchesMisroutedDedup(t *testing.T) {
	cfg := Config{}
	o := GenOptions{Shards: 3, Runs: 400, Seed: 22, Config: cfg}
	_, a := genMem(t, o)
	if c := TakeCensus(a.sh); c.SeenUnacked == 0 {
		t.Fatalf("the workload left no message seen and unacknowledged: pick another seed")
	}
	const n = 4
	good := &memBackend{sh: testReshard(a.sh, n, 3), cpNow: a.cpNow}
	bad := &memBackend{sh: testReshardSeen(a.sh, n, 3, func(wf string) int { return (model.ShardOf(wf, n) + 1) % n }), cpNow: a.cpNow}
	verifyClean(t, "routed by workflow", good.sh)
	kinds := map[check.Kind]int{}
	for _, f := range check.Verify(check.FromShards(bad.sh)) {
		if f.Problem() && f.Kind != check.KindGenOrder {
			kinds[f.Kind]++
		}
	}
	if kinds[check.KindSeenWrongShard] == 0 || len(kinds) != 1 {
		t.Errorf("verify of the misrouted reshard: findings %v, want only %s", kinds, check.KindSeenWrongShard)
	}
	driveBackend(t, a, cfg)
	driveBackend(t, good, cfg)
	driveBackend(t, bad, cfg)
	final := logical(t, a.sh)
	sameCanon(t, "driven: routed by workflow", final, logical(t, good.sh))
	if slices.Equal(final, logical(t, bad.sh)) {
		t.Fatal("driven: the misrouted reshard reached the same state; the oracle does not see dedup routing")
	}
}

// longTests reports whether the long sweeps run (FUSEE_LONG=1).
