package reshard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// newUpgradeCase is the representative directory of newCrashCase written
// in log format 2 (journal.WriteV2): its stores at their checkpoints, each
// shard's log tail in its own log. before is the logical dump of the
// format 3 directory it was written from, which the format 2 one must
// recover to as well.
func newUpgradeCase(t testing.TB, shards, runs int, seed uint64, memory int64) *crashCase {
	t.Helper()
	base := representativeDir(t, shards, runs, seed)
	before, err := memDump(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := journal.WriteV2(context.Background(), base, memDir); err != nil {
		t.Fatalf("writing log format 2: %v", err)
	}
	if d, err := memDumpV2(cloneNow(base, vfs.CrashCloneCfg{})); err != nil || d != before {
		t.Fatalf("the format 2 directory does not recover to the original after a crash: %v", err)
	}
	c := &crashCase{base: base, before: before, oldN: shards, newN: shards, memory: memory, upgrade: true}
	c.lists = dryRunLists(t, c)
	return c
}

// TestUpgradeRandomWorkloads: over random workloads, shard counts and
// seeds, a format 2 directory recovers to the same logical dump as the
// format 3 directory it was written from, and `fusee upgrade` turns it
// into a format 3 directory with that same dump, verify clean, every store
// one generation newer, every pending token in the report; a second run
// has nothing to do. The seed of a failing case is in the failure.
func TestUpgradeRandomWorkloads(t *testing.T) {
	cases := 6
	if testtier.Long() {
		cases = 40
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
	for i := range cases {
		shards, runs, seed := 1+rng.IntN(5), 5+rng.IntN(80), rng.Uint64N(1<<20)
		frac := 0.45 + 0.5*rng.Float64()
		name := fmt.Sprintf("shards=%d,runs=%d,seed=%d,finished=%.2f", shards, runs, seed, frac)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			mem := vfs.NewMem()
			ctx := context.Background()
			if _, err := sim.Generate(ctx, mem, memDir, sim.GenOptions{Shards: shards, Runs: runs, Seed: seed, FinishedFrac: frac}); err != nil {
				t.Fatalf("%s: gen: %v", name, err)
			}
			before, err := memDump(mem)
			if err != nil {
				t.Fatal(err)
			}
			gens := storeGens(t, mem, shards)
			if err := journal.WriteV2(ctx, mem, memDir); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d, err := memDumpV2(mem); err != nil || d != before {
				t.Fatalf("%s: the format 2 directory recovers to another dump (%v)", name, err)
			}
			if _, err := memDump(mem); !errors.Is(err, meta.ErrOldLog) {
				t.Fatalf("%s: opening format 2 = %v, want ErrOldLog", name, err)
			}
			rep, err := reshard.Upgrade(ctx, mem, memDir, reshard.UpgradeOptions{})
			if err != nil {
				t.Fatalf("%s: upgrade: %v", name, err)
			}
			if rep.Outcome != reshard.OutcomeDone || rep.OldLog != 2 || rep.NewLog != 3 || rep.Counts.RunsMoved != 0 || rep.Counts.RunsRenumbered != 0 {
				t.Fatalf("%s: report %+v", name, rep)
			}
			if rep.Tokens.Len() != rep.Counts.PendingTokens {
				t.Errorf("%s: %d token changes for %d pending tokens", name, rep.Tokens.Len(), rep.Counts.PendingTokens)
			}
			m, err := meta.Read(mem, memDir)
			if err != nil || m != (meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: shards}) {
				t.Fatalf("%s: fusee.meta after upgrade %+v, %v", name, m, err)
			}
			after, err := memVerifyDump(mem)
			if err != nil || after != before {
				t.Fatalf("%s: after upgrade the dump differs or verify fails: %v", name, err)
			}
			for j, g := range storeGens(t, mem, shards) {
				if g != gens[j]+1 {
					t.Errorf("%s: shard %d store generation %d, want %d", name, j, g, gens[j]+1)
				}
			}
			for _, left := range []string{reshard.NewDirName, reshard.OldDirName} {
				if _, err := mem.Stat(mem.PathJoin(memDir, left)); err == nil {
					t.Errorf("%s: %s left behind", name, left)
				}
			}
			if rep, err := reshard.Upgrade(ctx, mem, memDir, reshard.UpgradeOptions{}); err != nil || rep.Outcome != reshard.OutcomeNothingToDo {
				t.Fatalf("%s: second upgrade: %v, %v", name, rep, err)
			}
		})
	}
}

func storeGens(t *testing.T, fs vfs.FS, shards int) []uint64 {
	t.Helper()
	out := make([]uint64, shards)
	for i := range out {
		h, err := store.ReadHeader(fs, memDir, i, shards)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = h.Gen
	}
	return out
}

// TestUpgradeInterruptedIsRefused: with the switch begun, every opener
// refuses the directory and names `fusee upgrade <dir>` — the engine,
// the checker, reshard — and upgrade finishes it. A dry run on the
// format 2 directory changes nothing.
func TestUpgradeInterruptedIsRefused(t *testing.T) {
	c := newUpgradeCase(t, 3, 40, 5, 0)
	mem := c.fresh()
	snap := func() string {
		var s string
		for _, p := range []string{"fusee.meta", "shards/0000/log", "shards/0000/store"} {
			names, _ := mem.List(mem.PathJoin(memDir, p))
			slices.Sort(names)
			s += fmt.Sprint(p, names)
		}
		return s
	}
	was := snap()
	rep, err := reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{DryRun: true})
	if err != nil || rep.Outcome != reshard.OutcomePlanned {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if snap() != was {
		t.Fatalf("the dry run changed the directory:\n%s\n%s", was, snap())
	}
	stop := errors.New("power cut")
	reshard.SetTestHook(func(step string) error {
		if step == "new-wal-in" {
			return stop
		}
		return nil
	})
	_, err = reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{})
	reshard.SetTestHook(nil)
	if !errors.Is(err, stop) {
		t.Fatalf("upgrade = %v, want the hook's stop", err)
	}
	want := memDir + ": an interrupted upgrade (log format 2 to 3) must be finished before anything can open the directory: run `fusee upgrade " + memDir + "` to finish it"
	_, _, err = journal.Open(mem, memDir, journal.OpenOptions{})
	if err == nil || err.Error() != want {
		t.Errorf("journal.Open = %v\nwant %s", err, want)
	}
	if _, err := check.Load(mem, memDir); err == nil || err.Error() != want {
		t.Errorf("check.Load = %v", err)
	}
	if _, err := journal.ReadV2(mem, memDir); err == nil || err.Error() != want {
		t.Errorf("journal.ReadV2 = %v", err)
	}
	for _, shards := range []int{0, 3, 4} {
		if _, err := reshard.Reshard(context.Background(), mem, memDir, reshard.Options{Shards: shards}); err == nil || err.Error() != want {
			t.Errorf("reshard %d = %v", shards, err)
		}
	}
	if _, err := reshard.ReadStatus(mem, memDir); err == nil || err.Error() != want {
		t.Errorf("ReadStatus = %v", err)
	}
	rep, err = reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{DryRun: true})
	if err != nil || rep.Outcome != reshard.OutcomeFinished {
		t.Fatalf("dry run of the finish: %+v, %v", rep, err)
	}
	if _, _, err := journal.Open(mem, memDir, journal.OpenOptions{}); err == nil {
		t.Fatal("the dry run finished the switch")
	}
	rep, err = reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{})
	if err != nil || rep.Outcome != reshard.OutcomeFinished {
		t.Fatalf("finishing: %+v, %v", rep, err)
	}
	if err := c.checkDone(mem); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeRefusesReshardSwitch: upgrade does not touch a directory
// whose reshard was interrupted; it says to finish the reshard.
func TestUpgradeRefusesReshardSwitch(t *testing.T) {
	c := newCrashCase(t, 2, 3, 30, 3, 0)
	mem := c.fresh()
	stop := errors.New("power cut")
	reshard.SetTestHook(func(step string) error {
		if step == "meta-switching" {
			return stop
		}
		return nil
	})
	_, err := reshard.Reshard(context.Background(), mem, memDir, reshard.Options{Shards: 3})
	reshard.SetTestHook(nil)
	if !errors.Is(err, stop) {
		t.Fatal(err)
	}
	want := memDir + ": an interrupted reshard (from 2 to 3 shards) must be finished before anything can open the directory: run `fusee reshard " + memDir + "` to finish the interrupted reshard"
	if _, err := reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{}); err == nil || err.Error() != want {
		t.Fatalf("upgrade = %v\nwant %s", err, want)
	}
}

// TestUpgradeCrashAtEveryStep cuts power before every filesystem step of
// one upgrade of the representative directory in log format 2 (three
// shards, a dangling reference, log tails in the per-shard logs) and
// recovers as an operator would: the directory opens as it was (with the
// engine build that reads format 2: its recovered dump must be the
// original), or upgraded, or it is refused with `fusee upgrade <dir>`;
// the operator reruns `fusee upgrade <dir>`; verify is then clean and the
// dump the original. Further sweeps keep random parts of unsynced data;
// power is cut again during finishing runs (a sample; every step with
// FUSEE_LONG=1) and during a sample of reruns before the switch.
func TestUpgradeCrashAtEveryStep(t *testing.T) {
	t.Parallel() // see sample_test.go
	seeds := []uint64{1, 2}
	unsyncedStride, doubleStride, beforeStride := 4, 5, 50
	if testtier.Long() {
		seeds = []uint64{1, 2, 3, 4}
		unsyncedStride, doubleStride, beforeStride = 1, 1, 10
	} else if testtier.Race {
		unsyncedStride = 2 * raceStride
	}
	start := time.Now()
	c := newUpgradeCase(t, 3, 50, 7, 0)
	ct := &crashTally{saw: map[string]int{}}
	double := func(first, second int) bool { return (first+second)%doubleStride == 0 }
	before := func(first, second int) bool { return first%beforeStride == 0 && second%beforeStride == 0 }
	var sample func(int) bool
	if testtier.Race && !testtier.Long() {
		off := testtier.Offset(t, raceStride)
		sample = func(step int) bool { return (step+off)%raceStride == 0 }
		before = func(first, second int) bool { return (first+off)%(13*raceStride) == 0 && second%beforeStride == 0 }
	}
	steps := c.sweep(t, ct, 0, sample, double, before)
	synced := ct.points
	off := testtier.Offset(t, unsyncedStride)
	for i, seed := range seeds {
		c.sweep(t, ct, seed, func(step int) bool { return (step+i+off)%unsyncedStride == 0 }, nil, nil)
	}
	for _, f := range ct.failures {
		t.Error(f)
	}
	t.Logf("upgrade of 3 shards from log format 2: %d filesystem steps; %d power cuts recovered from: %d at every step keeping only synced data, %d keeping random parts of the unsynced data (%d seeds); %d second power cuts during a finishing run (of up to %d steps), %d during a rerun before the switch; the operator saw %v; %v",
		steps, ct.points, synced, ct.points-synced, len(seeds), ct.doubles, ct.finish, ct.reruns, ct.saw, time.Since(start).Round(time.Millisecond))
}

// TestUpgradeFaultAtEveryStep injects ENOSPC, EIO on a write, EIO on an
// fsync and a failed rename at every operation of one upgrade they can
// happen at (with the maps in memory): each must end in an error naming
// the operation and the file, a failed fsync never retried, and the
// directory must open as it was or be finished by `fusee upgrade <dir>`,
// verify clean, dump equal.
func TestUpgradeFaultAtEveryStep(t *testing.T) {
	t.Parallel() // see sample_test.go
	stride := 1
	if testtier.Race && !testtier.Long() {
		stride = raceStride
	}
	start := time.Now()
	c := newUpgradeCase(t, 3, 50, 7, 0)
	total, injected := c.faultSweep(t, stride)
	t.Logf("upgrade of 3 shards: %d faults injected %v, each a clean error and a directory that opens as it was or is finished by a rerun; %v",
		total, injected, time.Since(start).Round(time.Millisecond))
}

// TestUpgradeSwitchStateChecked: a format=upgrade directory whose new
// shards are gone (reshard.new removed by hand) still has shards of the
// right count — the old ones, of log format 2 — and finishing would give
// a format 3 directory the old stores: it is refused and nothing changes.
// Likewise a format=upgrade written by hand over an untouched format 2
// directory.
func TestUpgradeSwitchStateChecked(t *testing.T) {
	c := newUpgradeCase(t, 2, 30, 9, 0)
	for _, tc := range []struct {
		name string
		hook string // "": fusee.meta rewritten by hand
	}{{name: "new-removed", hook: "meta-switching"}, {name: "meta-by-hand"}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := c.fresh()
			if tc.hook != "" {
				stop := errors.New("power cut")
				reshard.SetTestHook(func(step string) error {
					if step == tc.hook {
						return stop
					}
					return nil
				})
				_, err := reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{})
				reshard.SetTestHook(nil)
				if !errors.Is(err, stop) {
					t.Fatal(err)
				}
				if err := mem.RemoveAll(mem.PathJoin(memDir, reshard.NewDirName)); err != nil {
					t.Fatal(err)
				}
			} else {
				d, err := meta.Open(mem, memDir, meta.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Write(meta.Meta{Format: meta.Upgrading, Log: meta.LogShared, Shards: 2}); err != nil {
					t.Fatal(err)
				}
				d.Close()
			}
			_, err := reshard.Upgrade(context.Background(), mem, memDir, reshard.UpgradeOptions{})
			want := memDir + ": fusee.meta says an upgrade of 2 shards to log format 3 was interrupted, but " + memDir + "/shards does not hold 2 new shards (" + memDir + "/shards/0000/log is a log format 2 shard's log); refusing to finish it, nothing was changed: was fusee.meta or reshard.new changed by hand? Restore the directory from a backup"
			var se *reshard.SwitchStateError
			if !errors.As(err, &se) || err.Error() != want {
				t.Fatalf("upgrade = %v\nwant %s", err, want)
			}
			if _, err := mem.Stat(mem.PathJoin(memDir, "shards", "0000", "log")); err != nil {
				t.Fatalf("the old shards moved: %v", err)
			}
			if m, _ := meta.ReadAny(mem, memDir); !m.Upgrading() {
				t.Fatalf("fusee.meta changed: %+v", m)
			}
		})
	}
}
