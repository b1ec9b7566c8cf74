package check

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"pgregory.net/rapid"
)

// The dump of a directory on disk, streamed in key order through the
// templates and the reference join (dumprun.go), is byte for byte the
// whole-memory dump (oracle_test.go) of the same directory recovered
// whole, with and without physical fields: on generated directories of
// random size, shard count, share of finished runs and log tail, with
// budgets from one byte (every map spills at its first entry) to more
// than the directory needs. Generating a directory takes a while: 12
// cases by default (5 in the quick tier), rapid's 100 with FUSEE_LONG=1 (a failing case is
// reported as drawn, not shrunk, when the cases are cut short).
func TestDumpDirMatchesWholeMemory(t *testing.T) {
	ctx := context.Background()
	cases, limit := 0, 12
	if testtier.Quick() {
		limit = 5
	}
	rapid.Check(t, func(rt *rapid.T) {
		if cases++; cases > limit && !testtier.Long() {
			return
		}
		dir := filepath.Join(t.TempDir(), "d")
		opts := sim.GenOptions{
			Shards:       rapid.IntRange(1, 9).Draw(rt, "shards"),
			Runs:         rapid.IntRange(1, 250).Draw(rt, "runs"),
			Seed:         rapid.Uint64().Draw(rt, "seed"),
			FinishedFrac: rapid.SampledFrom([]float64{0, 0.5, 0.95}).Draw(rt, "finished"),
			TailRounds:   rapid.IntRange(0, 4).Draw(rt, "tail"),
		}
		if _, err := sim.Generate(ctx, vfs.Default, dir, opts); err != nil {
			rt.Fatal(err)
		}
		st, err := Load(vfs.Default, dir)
		if err != nil {
			rt.Fatal(err)
		}
		d, err := OpenDir(ctx, vfs.Default, dir)
		if err != nil {
			rt.Fatal(err)
		}
		defer d.Close()
		budget := rapid.SampledFrom([]int64{1, 512, 4096, 64 << 10, 0}).Draw(rt, "budget")
		// Spilled maps in many sealed runs (see store.SpillMap) or in one.
		seal := rapid.SampledFrom([]int64{0, 1, 4096}).Draw(rt, "sealEvery")
		for _, phys := range []bool{false, true} {
			var want, got bytes.Buffer
			if err := oldWriteDumpContext(ctx, &want, st.Shards, DumpOptions{Physical: phys}); err != nil {
				rt.Fatal(err)
			}
			if err := d.WriteDump(ctx, &got, DumpOptions{Physical: phys, Options: Options{Memory: budget, Scratch: t.TempDir(), sealEvery: seal}}); err != nil {
				rt.Fatal(err)
			}
			if want.String() != got.String() {
				rt.Fatalf("dump (physical %v) differs from the whole-memory dump: %s", phys, firstDiff(want.String(), got.String()))
			}
		}
	})
}

// The same on states built in memory with references the join must
// answer without a read or with "dangling": runs gone, numbers never
// issued, NoSuchRun, shards that do not exist, and damage (runs stored
// under another number or on the wrong shard: the odd runs of keyRef).
// In the quick tier, fewer of rapid's cases (testtier.Main).
func TestDumpJoinMatchesWholeMemory(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<20).Draw(rt, "seed")
		w := randomWorlds(t, seed, rapid.IntRange(20, 200).Draw(rt, "steps"), rapid.IntRange(1, 5).Draw(rt, "shards"))[0]
		runs := w.idents()
		if len(runs) == 0 {
			return
		}
		if rapid.Bool().Draw(rt, "damaged") {
			damage(rt, w, runs)
		}
		dangle(rt, w, runs)
		misplace(rt, w, runs)
		opts := Options{Memory: rapid.SampledFrom([]int64{0, 1, 2048}).Draw(rt, "budget"), Scratch: t.TempDir(),
			sealEvery: rapid.SampledFrom([]int64{0, 1, 4096}).Draw(rt, "sealEvery")}
		for _, phys := range []bool{false, true} {
			var want, got bytes.Buffer
			if err := oldWriteDumpContext(ctx, &want, w.shards, DumpOptions{Physical: phys}); err != nil {
				rt.Fatal(err)
			}
			if err := shardsView(w.shards, opts).dump(ctx, &got, phys); err != nil {
				rt.Fatal(err)
			}
			if want.String() != got.String() {
				rt.Fatalf("dump (physical %v) differs: %s", phys, firstDiff(want.String(), got.String()))
			}
		}
	})
}

// misplace makes odd runs (runs the home shard of their workflow ID does
// not answer for under their number): a copy on another shard, a run
// moved to another shard, a run stored under another number. A Ctx::key
// naming one resolves through the odd runs (or dangles when two match).
func misplace(rt *rapid.T, w *world, runs []ident) {
	for i := range rapid.IntRange(0, 4).Draw(rt, "misplaces") {
		x := rapid.SampledFrom(runs).Draw(rt, "mrun")
		s, r := w.shard(x), w.run(x)
		if r == nil {
			continue
		}
		label := "m" + itoa(i)
		other := w.shards[rapid.IntRange(0, w.n-1).Draw(rt, label+"-shard")]
		switch rapid.IntRange(0, 2).Draw(rt, label) {
		case 0: // a copy elsewhere under the same number
			if _, taken := other.Runs[r.No]; !taken {
				c := *r
				other.Runs[r.No] = &c
			}
		case 1: // moved elsewhere under the same number
			if _, taken := other.Runs[r.No]; !taken && other != s {
				delete(s.Runs, r.No)
				other.Runs[r.No] = r
			}
		case 2: // stored under a number of its own shard that is not its own
			key := r.No + model.RunNo(rapid.IntRange(1, 50).Draw(rt, label+"-key"))
			if _, taken := s.Runs[key]; !taken {
				delete(s.Runs, r.No)
				s.Runs[key] = r
			}
		}
	}
}
