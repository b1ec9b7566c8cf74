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
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/model"
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
	return dumpDir(t, dir, check.DumpOptions{})
}

// dumpDir reads dir through the engine's own recovery and dumps it.
func dumpDir(t testing.TB, dir string, opts check.DumpOptions) string {
	t.Helper()
	st, err := check.Load(vfs.Default, dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	var b bytes.Buffer
	if err := check.WriteDump(&b, st.Shards, opts); err != nil {
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
	t.Cleanup(func() { rep.Close() })
	return rep
}

// TestReshardKeepsLogicalState: random directories, random old and new
// counts: after a reshard verify is clean and the logical dump is the
// same.
func TestReshardKeepsLogicalState(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var seen []string
	defer func() { requireEveryKind(t, seen) }()
	iters := 4 // fewer would not hold every kind between them
	if testtier.Long() {
		iters = 40
	}
	for it := range iters {
		oldN, newN := 1+rng.IntN(9), 1+rng.IntN(12)
		if oldN == newN {
			newN++
		}
		seed := rng.Uint64()
		t.Run(fmt.Sprintf("%d/%d->%d", it, oldN, newN), func(t *testing.T) {
			dir := genDir(t, oldN, 300+rng.IntN(300), seed)
			seen = append(seen, kindsIn(t, dir)...)
			before := logicalDump(t, dir)
			rep := doReshard(t, dir, newN, reshard.Options{})
			if rep.Outcome != reshard.OutcomeDone {
				t.Fatalf("outcome %s", rep.Outcome)
			}
			verifyClean(t, dir)
			sameDump(t, "after reshard", before, logicalDump(t, dir))
			t.Logf("renumbered %d (unfinished %d), moved %d, refs %d, dangling %d, tokens %d",
				rep.Counts.RunsRenumbered, rep.Renumbered.Len(), rep.Counts.RunsMoved, rep.Counts.RefsRewritten, rep.Counts.DanglingRefs, rep.Tokens.Len())
		})
	}
}

// everyKind is every state and every kind of journal record, outbox
// message and reference a directory can hold.
func everyKind() []string {
	var all []string
	for _, s := range []string{"running", "parked", "finished", "tombstone"} {
		all = append(all, "state "+s)
	}
	for k := model.KindStart; k <= model.KindDone; k++ {
		all = append(all, "record "+k.String())
	}
	for k := model.MsgStartChild; k <= model.MsgUpdateResult; k++ {
		all = append(all, "message "+k.String())
	}
	for _, r := range []string{sim.RefParent, sim.RefPred, sim.RefNext, sim.RefCancelBy, sim.RefSignalBy, sim.RefKey,
		sim.RefToken, sim.RefCaller, sim.RefMsgFrom, sim.RefMsgParent} {
		all = append(all, "reference "+r)
	}
	return append(all, "dedup entries")
}

// kindsIn lists which of everyKind the directory holds.
func kindsIn(t testing.TB, dir string) []string {
	t.Helper()
	st, err := check.Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := sim.TakeCensus(st.Shards)
	var have []string
	for _, k := range everyKind() {
		kind, name, _ := strings.Cut(k, " ")
		n := 0
		switch kind {
		case "state":
			n = c.States[name]
		case "record":
			n = c.Records[name]
		case "message":
			n = c.Messages[name]
		case "reference":
			n = c.Refs[name]
		default:
			n = c.Seen
		}
		if n > 0 {
			have = append(have, k)
		}
	}
	return have
}

// requireEveryKind fails unless the directories a property test resharded
// held, between them, every kind: a test over workloads missing one would
// prove nothing about it.
func requireEveryKind(t testing.TB, seen []string) {
	t.Helper()
	have := map[string]bool{}
	for _, k := range seen {
		have[k] = true
	}
	var missing []string
	for _, k := range everyKind() {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("no resharded directory held %v: change the workload, or the test shows nothing about them", missing)
	}
}
