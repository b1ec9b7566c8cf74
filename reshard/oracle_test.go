package reshard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/reshard"
)

// scaled is a test directory's run count: halved under the race detector.
func scaled(runs int) int {
	if testtier.Race {
		return runs / 2
	}
	return runs
}

// physicalDump is the dump with run numbers, shards and sequence numbers:
// equal physical dumps mean the same layout, not only the same content.
func physicalDump(t testing.TB, dir string) string {
	t.Helper()
	return dumpDir(t, dir, check.DumpOptions{Physical: true})
}

func drive(t testing.TB, dir string) {
	t.Helper()
	rep, err := sim.Drive(context.Background(), vfs.Default, dir, sim.DriveOptions{NoSync: true})
	if err != nil {
		t.Fatalf("drive %s: %v", dir, err)
	}
	if n := rep.Census.States["running"] + rep.Census.States["parked"]; n != 0 {
		t.Fatalf("drive %s left %d runs unfinished", dir, n)
	}
}

// TestReshardDriveOracle: one workload generated twice; one copy is
// resharded (and for round trips resharded back), then both are driven to
// completion by the simulated engine. The final logical states must be
// equal: the engine cannot tell that the runs moved and were renumbered.
func TestReshardDriveOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	iters := 3
	if testtier.Long() {
		iters = 30
	}
	picked := map[int]bool{}
	for _, it := range testtier.Pick(t, iters, 2) { // half of them in the quick tier
		picked[it] = true
	}
	for it := range iters {
		oldN, newN := 1+rng.IntN(8), 1+rng.IntN(12)
		if oldN == newN {
			newN = oldN + 1
		}
		seed, runs := rng.Uint64(), scaled(200+rng.IntN(300))
		if !picked[it] {
			continue
		}
		roundTrip := it%2 == 1
		t.Run(fmt.Sprintf("%d->%d/roundtrip=%v", oldN, newN, roundTrip), func(t *testing.T) {
			a := genDir(t, oldN, runs, seed)
			b := genDir(t, oldN, runs, seed)
			before := logicalDump(t, b)
			doReshard(t, b, newN, reshard.Options{})
			verifyClean(t, b)
			sameDump(t, "after reshard", before, logicalDump(t, b))
			if roundTrip {
				doReshard(t, b, oldN, reshard.Options{})
				verifyClean(t, b)
				sameDump(t, "after the round trip", before, logicalDump(t, b))
			}
			drive(t, a)
			drive(t, b)
			verifyClean(t, b)
			sameDump(t, "driven to completion", logicalDump(t, a), logicalDump(t, b))
		})
	}
}

// TestReshardExtremes: to one shard and to 1024 (the largest count).
func TestReshardExtremes(t *testing.T) {
	pairs := [][2]int{{5, 1}, {1, 64}}
	if testtier.Long() {
		pairs = append(pairs, [2]int{3, 1024}, [2]int{1024, 7})
	}
	for _, p := range testtier.Subset(t, pairs, 2) { // one a day in the quick tier
		t.Run(fmt.Sprintf("%d->%d", p[0], p[1]), func(t *testing.T) {
			dir := genDir(t, p[0], scaled(400), 11)
			before := logicalDump(t, dir)
			doReshard(t, dir, p[1], reshard.Options{})
			verifyClean(t, dir)
			sameDump(t, "after reshard", before, logicalDump(t, dir))
		})
	}
}

// TestGrowToMultipleRenumbersNothing: each new shard draws from exactly
// one old shard, so every run keeps its number.
func TestGrowToMultipleRenumbersNothing(t *testing.T) {
	for _, p := range [][2]int{{1, 3}, {3, 6}, {4, 12}} {
		dir := genDir(t, p[0], scaled(500), 5)
		rep := doReshard(t, dir, p[1], reshard.Options{})
		if rep.Counts.RunsRenumbered != 0 || rep.Renumbered.Len() != 0 {
			t.Errorf("%d->%d renumbered %d runs, want none", p[0], p[1], rep.Counts.RunsRenumbered)
		}
		verifyClean(t, dir)
	}
	// The control: an odd change does renumber (or this test proves nothing).
	dir := genDir(t, 3, 500, 5)
	if rep := doReshard(t, dir, 2, reshard.Options{}); rep.Counts.RunsRenumbered == 0 {
		t.Errorf("3->2 renumbered nothing: the workload has no collisions, so the test above shows nothing")
	}
}

// TestTinyBudgetSameResult: with a budget of one byte the run map goes to
// pass 1's run files and the paged run map, the sort to chunks and the
// lists to scratch stores; the result must be the same layout, byte for
// byte in the physical dump.
func TestTinyBudgetSameResult(t *testing.T) {
	a := genDir(t, 5, scaled(400), 21)
	b := genDir(t, 5, scaled(400), 21)
	ra := doReshard(t, a, 3, reshard.Options{})
	rb := doReshard(t, b, 3, reshard.Options{Memory: 1})
	if ra.Spilled || !rb.Spilled {
		t.Fatalf("spilled: default budget %v (want false), tiny budget %v (want true)", ra.Spilled, rb.Spilled)
	}
	sameDump(t, "tiny budget vs default", physicalDump(t, a), physicalDump(t, b))
	verifyClean(t, b)
}

// TestGrowDirectSameResult: a grow to a multiple writes each new store
// while reading its one old shard, without the sort; the stores must hold
// exactly what the sorted path writes (physical dump: every key and value).
func TestGrowDirectSameResult(t *testing.T) {
	for _, p := range testtier.Subset(t, [][2]int{{2, 4}, {3, 9}}, 2) { // one a day in the quick tier
		a := genDir(t, p[0], scaled(400), 23)
		b := genDir(t, p[0], scaled(400), 23)
		ra := doReshard(t, a, p[1], reshard.Options{})
		old := reshard.SetDirectWrite(false)
		rb := doReshard(t, b, p[1], reshard.Options{})
		reshard.SetDirectWrite(old)
		// BytesRead is the old stores' size on disk, which two generations
		// of the same workload need not share (pebble compacts in the
		// background, when it gets to it); every other count is logical.
		ca, cb := ra.Counts, rb.Counts
		ca.BytesRead, cb.BytesRead = 0, 0
		if !reflect.DeepEqual(ca, cb) {
			t.Errorf("%d->%d: counts direct %+v, sorted %+v", p[0], p[1], ra.Counts, rb.Counts)
		}
		sameDump(t, fmt.Sprintf("%d->%d direct vs sorted", p[0], p[1]), physicalDump(t, a), physicalDump(t, b))
		verifyClean(t, a)
	}
}

// snapshot lists every file and directory under dir with the hash of each
// file's bytes.
func snapshot(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			out = append(out, "dir "+rel+" "+info.Mode().String())
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("file %s %s %d %s", rel, info.Mode(), info.Size(), hex.EncodeToString(h.Sum(nil))))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestDryRunChangesNothing: every file's bytes and every directory are the
// same after a dry run, and its report equals the real run's plan.
func TestDryRunChangesNothing(t *testing.T) {
	dir := genDir(t, 4, 400, 9)
	scratch := t.TempDir()
	before := snapshot(t, dir)
	dry := doReshard(t, dir, 3, reshard.Options{DryRun: true, Scratch: scratch, Memory: 1})
	if got := snapshot(t, dir); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Fatalf("dry run changed the directory:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(got, "\n"))
	}
	if names, _ := os.ReadDir(scratch); len(names) != 2 || !strings.HasPrefix(names[0].Name(), "fusee-reshard-report-") {
		t.Errorf("dry run left %d entries in its scratch directory, want only its report's two spilled lists: %v", len(names), names)
	}
	if dry.Outcome != reshard.OutcomePlanned || dry.SpaceNeeded <= 0 {
		t.Errorf("dry run: outcome %s, space needed %d", dry.Outcome, dry.SpaceNeeded)
	}
	real := doReshard(t, dir, 3, reshard.Options{})
	dc, rc := dry.Counts, real.Counts
	dc.BytesRead, rc.BytesRead = 0, 0
	// The dry run does not write the new stores' headers (they name the
	// new log's position): a few dozen bytes per shard.
	if d := rc.BytesWritten - dc.BytesWritten; d < 0 || d > 100*int64(real.NewShards) {
		t.Errorf("bytes written: dry run %d, real run %d", dc.BytesWritten, rc.BytesWritten)
	}
	dc.BytesWritten, rc.BytesWritten = 0, 0
	if fmt.Sprint(dc) != fmt.Sprint(rc) || fmt.Sprint(dry.Renumbered.All()) != fmt.Sprint(real.Renumbered.All()) ||
		fmt.Sprint(dry.Tokens.All()) != fmt.Sprint(real.Tokens.All()) {
		t.Errorf("the dry run's report differs from the real run's:\ndry:  %+v %v\nreal: %+v %v", dc, dry.Renumbered.All(), rc, real.Renumbered.All())
	}
	if dry.Renumbered.Len() == 0 || dry.Tokens.Len() == 0 {
		t.Errorf("the dry run reports %d renumbered runs and %d token changes: the workload tests nothing", dry.Renumbered.Len(), dry.Tokens.Len())
	}
	// The report's lists outlive the reshard (the command prints them
	// after); with a one-byte budget they spilled under the scratch
	// directory, and closing the report deletes them.
	if err := dry.Close(); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(scratch); len(names) != 0 {
		t.Errorf("dry run left %d entries in its scratch directory after its report was closed", len(names))
	}
}

// TestOutcomes: same count, no count, leftovers.
func TestOutcomes(t *testing.T) {
	dir := genDir(t, 3, 100, 1)
	if rep := doReshard(t, dir, 3, reshard.Options{}); rep.Outcome != reshard.OutcomeNothingToDo {
		t.Errorf("same count: %s", rep.Outcome)
	}
	if rep := doReshard(t, dir, 0, reshard.Options{}); rep.Outcome != reshard.OutcomeNothingToDo {
		t.Errorf("no count: %s", rep.Outcome)
	}
	if err := os.MkdirAll(filepath.Join(dir, reshard.NewDirName, "shards"), 0o755); err != nil {
		t.Fatal(err)
	}
	if rep := doReshard(t, dir, 0, reshard.Options{}); rep.Outcome != reshard.OutcomeCleanedUp || len(rep.CleanedUp) != 1 {
		t.Errorf("leftover reshard.new: %s %v", rep.Outcome, rep.CleanedUp)
	}
	if _, err := os.Stat(filepath.Join(dir, reshard.NewDirName)); !os.IsNotExist(err) {
		t.Errorf("reshard.new still there: %v", err)
	}
	_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: 2000})
	if _, ok := err.(*reshard.CountError); !ok {
		t.Errorf("2000 shards: %v, want a CountError", err)
	}
}

// TestStaleTokenRefused: after a reshard, a pending completion answered
// with its new token (from the report) completes; the old token is
// refused and changes nothing.
func TestStaleTokenRefused(t *testing.T) {
	dir := genDir(t, 3, 400, 77)
	rep := doReshard(t, dir, 5, reshard.Options{})
	if rep.Tokens.Len() == 0 {
		t.Fatal("no pending tokens in the workload: the test shows nothing")
	}
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := sim.NewEngine(db, sim.Config{})
	for _, tc := range rep.Tokens.All()[:min(5, rep.Tokens.Len())] {
		if tc.Old == tc.New {
			t.Fatalf("token %s did not change", tc.Old)
		}
		if err := e.Complete(tc.Old, []byte("stale")); err == nil {
			t.Fatalf("the old token %s was accepted after the reshard", tc.Old)
		}
		if err := e.Complete(tc.New, []byte("fresh")); err != nil {
			t.Fatalf("the new token %s (was %s) was refused: %v", tc.New, tc.Old, err)
		}
	}
}

// TestNewFilesGetOwnerAndMode: the files and directories a reshard creates
// get the data directory's owner, the directories its mode and the files
// the mode of its fusee.meta (needs root to give files away).
func TestNewFilesGetOwnerAndMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change owners")
	}
	dir := genDir(t, 2, 100, 3)
	const uid, gid = 65534, 65534
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "fusee.meta"), 0o640); err != nil {
		t.Fatal(err)
	}
	doReshard(t, dir, 3, reshard.Options{})
	n := 0
	for _, sub := range []string{"wal", "shards", "fusee.meta"} {
		err := filepath.Walk(filepath.Join(dir, sub), func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			n++
			st := info.Sys().(*syscall.Stat_t)
			want := os.FileMode(0o640)
			if info.IsDir() {
				want = 0o750
			}
			if st.Uid != uid || st.Gid != gid || info.Mode().Perm() != want {
				t.Errorf("%s: owner %d:%d mode %v, want %d:%d %v", p, st.Uid, st.Gid, info.Mode().Perm(), uid, gid, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 10 {
		t.Fatalf("only %d files checked", n)
	}
}
