package reshard_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/reshard"
)

func genDir(t testing.TB, shards, runs int, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := sim.Generate(context.Background(), vfs.Default, dir, sim.GenOptions{Shards: shards, Runs: runs, Seed: seed}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	return dir
}

// logicalDump is the renumbering-invariant oracle: the logical dump of the
// directory, read through the engine's own recovery.
func logicalDump(t testing.TB, dir string) string {
	t.Helper()
	st, err := check.Load(vfs.Default, dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	var b bytes.Buffer
	if err := check.WriteLogicalDump(&b, st.Shards); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func verifyClean(t testing.TB, dir string) {
	t.Helper()
	st, err := check.Load(vfs.Default, dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	var problems []string
	for _, f := range check.Verify(st) {
		if f.Problem() {
			problems = append(problems, fmt.Sprintf("%+v", f))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("verify %s: %d problems:\n%s", dir, len(problems), strings.Join(problems[:min(20, len(problems))], "\n"))
	}
}

func sameDump(t testing.TB, what, a, b string) {
	t.Helper()
	if a == b {
		return
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var diffs []string
	for i := 0; i < max(len(al), len(bl)) && len(diffs) < 10; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			diffs = append(diffs, fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y))
		}
	}
	t.Fatalf("%s: logical dumps differ (%d vs %d lines):\n%s", what, len(al), len(bl), strings.Join(diffs, "\n"))
}

func doReshard(t testing.TB, dir string, n int, opts reshard.Options) *reshard.Report {
	t.Helper()
	opts.Shards = n
	rep, err := reshard.Reshard(context.Background(), vfs.Default, dir, opts)
	if err != nil {
		t.Fatalf("reshard %s to %d: %v", dir, n, err)
	}
	return rep
}

// TestReshardKeepsLogicalState: random directories, random old and new
// counts: after a reshard verify is clean and the logical dump is the
// same.
func TestReshardKeepsLogicalState(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 4
	if testing.Short() {
		iters = 2
	}
	for it := range iters {
		oldN, newN := 1+rng.IntN(9), 1+rng.IntN(12)
		if oldN == newN {
			newN++
		}
		seed := rng.Uint64()
		t.Run(fmt.Sprintf("%d/%d->%d", it, oldN, newN), func(t *testing.T) {
			dir := genDir(t, oldN, 300+rng.IntN(300), seed)
			before := logicalDump(t, dir)
			rep := doReshard(t, dir, newN, reshard.Options{})
			if rep.Outcome != reshard.OutcomeDone {
				t.Fatalf("outcome %s", rep.Outcome)
			}
			verifyClean(t, dir)
			sameDump(t, "after reshard", before, logicalDump(t, dir))
			t.Logf("renumbered %d (unfinished %d), moved %d, refs %d, dangling %d, tokens %d",
				rep.Counts.RunsRenumbered, len(rep.Renumbered), rep.Counts.RunsMoved, rep.Counts.RefsRewritten, rep.Counts.DanglingRefs, len(rep.Tokens))
		})
	}
}
