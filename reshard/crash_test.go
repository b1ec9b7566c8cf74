package reshard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// crashCase is one reshard whose every step a power cut may interrupt:
// the directory before it, its logical dump, and the counts.
type crashCase struct {
	base       *vfs.MemFS // the directory, before the reshard; never changed
	before     string     // its logical dump
	oldN, newN int
	memory     int64 // reshard.Options.Memory (1: every map spills)
	// upgrade: the operation is `fusee upgrade` of the same directory in
	// log format 2 (base holds it; before is the dump of the format 3
	// directory it was written from), not a reshard.
	upgrade bool
	// keepOld: the reshard keeps the old layout (--keep-old), and a
	// recovered directory must undo to the original, byte for byte.
	keepOld bool
	files   string // the original's files with their hashes (hashFiles)
	// lists are the report's two lists as the dry run gives them
	// (reportLists): every report of the operation, interrupted or not,
	// finished by a rerun or read back from reshard-reports, must have
	// them, list for list.
	lists string
	// compared counts the reports found to have those lists.
	compared *atomic.Int64
}

// run is the operation under test, as the operator starts it, or (finish)
// as the operator finishes it when told to: `fusee reshard <dir> <n>` or
// `fusee reshard <dir>`; `fusee upgrade <dir>` either way.
func (c *crashCase) run(fs vfs.FS, finish bool) (*reshard.Report, error) {
	if c.upgrade {
		return reshard.Upgrade(context.Background(), fs, memDir, reshard.UpgradeOptions{Memory: c.memory})
	}
	opts := reshard.Options{Shards: c.newN, Memory: c.memory, KeepOld: c.keepOld}
	if finish {
		opts.Shards = 0
	}
	return reshard.Reshard(context.Background(), fs, memDir, opts)
}

// switching reports whether m is the state of c's operation interrupted
// after its switch began.
func (c *crashCase) switching(m meta.Meta) bool {
	if c.upgrade {
		return m.Upgrading()
	}
	return m.Switching()
}

func newCrashCase(t testing.TB, oldN, newN, runs int, seed uint64, memory int64) *crashCase {
	t.Helper()
	base := representativeDir(t, oldN, runs, seed)
	before, err := memDump(base)
	if err != nil {
		t.Fatal(err)
	}
	// A crash of the directory as it stands keeps it whole: everything
	// gen and the dangling run's commit wrote was synced.
	if d, err := memDump(cloneNow(base, vfs.CrashCloneCfg{})); err != nil || d != before {
		t.Fatalf("the directory does not survive a crash before the reshard: %v", err)
	}
	// The original is what survives a power cut: pebble removes obsolete
	// files without syncing their directory, and a cut brings them back.
	files, err := hashFiles(cloneNow(base, vfs.CrashCloneCfg{}), memDir)
	if err != nil {
		t.Fatal(err)
	}
	c := &crashCase{base: base, before: before, oldN: oldN, newN: newN, memory: memory, files: files, compared: new(atomic.Int64)}
	c.lists = dryRunLists(t, c)
	return c
}

// dryRunLists is the report's lists of a dry run of c's operation.
func dryRunLists(t testing.TB, c *crashCase) string {
	t.Helper()
	var rep *reshard.Report
	var err error
	if c.upgrade {
		rep, err = reshard.Upgrade(context.Background(), c.fresh(), memDir, reshard.UpgradeOptions{Memory: c.memory, DryRun: true})
	} else {
		rep, err = reshard.Reshard(context.Background(), c.fresh(), memDir, reshard.Options{Shards: c.newN, Memory: c.memory, DryRun: true})
	}
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	defer rep.Close()
	lists, err := reportLists(rep)
	if err != nil {
		t.Fatal(err)
	}
	return lists
}

// fresh is a copy of the directory before the reshard.
func (c *crashCase) fresh() *vfs.MemFS { return cloneNow(c.base, vfs.CrashCloneCfg{}) }

// How a directory looked to the operator after a power cut.
const (
	sawOld       = "opened as it was"
	sawNew       = "opened with the new layout"
	sawSwitching = "refused: finish the switch"
)

// recoverDir does what an operator does after a power cut, on the crash
// image img: open the directory; if it opens, its logical dump must be
// the original one, and the operator runs the reshard again (the same
// command, which also removes leftovers); if it is refused with
// meta.ErrSwitching, `fusee reshard <dir>` (no count) finishes it. The
// recovery run goes through errorfs with step (nil: not counted), so that
// a caller can crash it too. It returns what the operator saw; the
// directory is then checked by checkDone.
func (c *crashCase) recoverDir(img *vfs.MemFS, step *stepCounter) (string, error) {
	m, err := meta.ReadAny(img, memDir)
	if err != nil {
		return "", fmt.Errorf("reading fusee.meta: %w", err)
	}
	saw, finish := sawOld, false
	dump, err := memDump(img)
	if c.upgrade && errors.Is(err, meta.ErrOldLog) {
		dump, err = memDumpV2(img) // the old engine build opens it
	}
	switch {
	case errors.Is(err, meta.ErrSwitching):
		if !c.switching(m) {
			return "", fmt.Errorf("opening: %w, but fusee.meta is %+v", err, m)
		}
		saw, finish = sawSwitching, true
	case err != nil:
		return "", fmt.Errorf("opening: %w", err)
	case dump != c.before:
		return "", fmt.Errorf("the directory opens (fusee.meta %+v) but its logical dump differs from the original", m)
	case c.upgrade && m.Log == meta.LogShared, !c.upgrade && m.Shards == c.newN:
		saw = sawNew
	case m.Shards != c.oldN:
		return "", fmt.Errorf("the directory opens with %d shards, neither %d nor %d", m.Shards, c.oldN, c.newN)
	}
	var fs vfs.FS = img
	if step != nil {
		fs = errorfs.Wrap(guardLinks(img), step)
	}
	rep, err := c.run(fs, finish)
	if err != nil {
		return saw, fmt.Errorf("%s, then reshard: %w", saw, err)
	}
	defer rep.Close()
	want := map[string][]reshard.Outcome{
		sawOld: {reshard.OutcomeDone},
		// A cut after the final fusee.meta and before the report was
		// named: the rerun ends the cleanup and reports the reshard.
		sawNew:       {reshard.OutcomeNothingToDo, reshard.OutcomeCleanedUp, reshard.OutcomeFinished},
		sawSwitching: {reshard.OutcomeFinished},
	}[saw]
	if !slices.Contains(want, rep.Outcome) {
		return saw, fmt.Errorf("%s, then reshard: outcome %s, want %v", saw, rep.Outcome, want)
	}
	if rep.Outcome == reshard.OutcomeDone || rep.Outcome == reshard.OutcomeFinished {
		if err := c.sameLists(rep, "the rerun's report"); err != nil {
			return saw, fmt.Errorf("%s, then reshard (%s): %w", saw, rep.Outcome, err)
		}
	}
	return saw, nil
}

// sameLists checks that rep has the dry run's lists.
func (c *crashCase) sameLists(rep *reshard.Report, what string) error {
	got, err := reportLists(rep)
	if err != nil {
		return err
	}
	if got != c.lists {
		return fmt.Errorf("%s's lists differ from the dry run's:\n%s", what, lineDiff(c.lists, got))
	}
	if c.compared != nil {
		c.compared.Add(1)
	}
	return nil
}

// checkReports checks what a finished operation leaves of its report: it
// is named in reshard-reports (nothing pending), it has the dry run's
// lists, and no temporary file of fusee.meta or of a report is left.
func (c *crashCase) checkReports(fs vfs.FS) error {
	rep, err := reshard.OpenReport(fs, memDir, "", "", 1<<20)
	if err != nil {
		return err
	}
	defer rep.Close()
	if err := c.sameLists(rep, "the kept report"); err != nil {
		return err
	}
	list, err := reshard.ListReports(fs, memDir)
	if err != nil {
		return err
	}
	for _, r := range list {
		if r.Pending {
			return fmt.Errorf("%s is still pending", r.Path)
		}
	}
	for _, d := range []string{memDir, fs.PathJoin(memDir, reshard.ReportsDirName)} {
		names, _ := fs.List(d)
		for _, n := range names {
			if strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp") {
				return fmt.Errorf("a temporary file %s is left", fs.PathJoin(d, n))
			}
		}
	}
	return nil
}

// checkDone checks a directory after the operator's recovery: the new
// count, no leftovers, verify clean, the original logical dump.
func (c *crashCase) checkDone(fs vfs.FS) error {
	m, err := meta.ReadAny(fs, memDir)
	if err != nil {
		return err
	}
	if m.Format != meta.FormatLocal || m.Log != meta.LogShared || m.Shards != c.newN {
		return fmt.Errorf("fusee.meta is %+v, want local, log 3, %d shards", m, c.newN)
	}
	for _, left := range []string{reshard.NewDirName, reshard.OldDirName} {
		if _, err := fs.Stat(fs.PathJoin(memDir, left)); err == nil {
			return fmt.Errorf("%s left behind", left)
		}
	}
	dump, err := memVerifyDump(fs)
	if err != nil {
		return err
	}
	if dump != c.before {
		return errors.New("the logical dump differs from the original")
	}
	if err := c.checkReports(fs); err != nil {
		return err
	}
	if !c.keepOld {
		return nil
	}
	// The kept layout is whole: undone, the directory is the original,
	// file for file.
	undone, err := reshard.Undo(context.Background(), fs, memDir)
	if err != nil {
		return fmt.Errorf("undoing the kept reshard: %w", err)
	}
	defer undone.Close()
	if got, err := reportLists(undone); err != nil || got != reversedLists(c.lists) {
		return fmt.Errorf("the undo's report is not the reshard's reversed (%v):\n%s", err, lineDiff(reversedLists(c.lists), got))
	}
	return c.sameFiles(fs, "after undoing the kept reshard")
}

// sameFiles checks that the directory on fs has the original's files,
// byte for byte, and nothing else.
func (c *crashCase) sameFiles(fs vfs.FS, what string) error {
	files, err := hashFiles(fs, memDir, reshard.ReportsDirName)
	if err != nil {
		return err
	}
	if files != c.files {
		return fmt.Errorf("%s: the files differ from the original's:\n%s", what, lineDiff(c.files, files))
	}
	return nil
}

// crashImage is the state a power cut at one step leaves.
type crashImage struct {
	step     int
	op       errorfs.Op
	unsynced int // CrashCloneCfg.UnsyncedDataPercent
	fs       *vfs.MemFS
}

func (im crashImage) String() string {
	return fmt.Sprintf("power cut before step %d (%s %s), %d%% of unsynced data kept", im.step, opName(im.op.Kind), im.op.Path, im.unsynced)
}

func opName(k errorfs.OpKind) string {
	return map[errorfs.OpKind]string{
		errorfs.OpCreate: "create", errorfs.OpLink: "link", errorfs.OpRemove: "remove", errorfs.OpRemoveAll: "remove-all",
		errorfs.OpRename: "rename", errorfs.OpReuseForWrite: "reuse", errorfs.OpMkdirAll: "mkdir",
		errorfs.OpFileWrite: "write", errorfs.OpFileWriteAt: "write-at", errorfs.OpFileSync: "sync",
		errorfs.OpFileSyncData: "sync-data", errorfs.OpFileSyncTo: "sync-to", errorfs.OpFilePreallocate: "preallocate",
	}[k]
}

// cutEverywhere runs fn (one reshard or recovery, on the filesystem it is
// given) over errorfs on mem and, before each of its steps, cuts power:
// it hands check a crash clone keeping only what was synced or, when
// unsyncedRNG is set, one keeping a random share of what was not. check
// runs right there, while fn waits (the clones are not kept: one per step
// would not fit in memory). sample, when not nil, says which steps to
// cut at. It returns fn's error and the number of steps.
func cutEverywhere(mem *vfs.MemFS, unsyncedRNG *rand.Rand, sample func(step int) bool,
	fn func(fs vfs.FS) error, check func(im crashImage)) (int, error) {
	c := &stepCounter{}
	c.onStep = func(k int, op errorfs.Op) error {
		if sample != nil && !sample(k) {
			return nil
		}
		if unsyncedRNG == nil {
			check(crashImage{step: k, op: op, fs: cloneNow(mem, vfs.CrashCloneCfg{})})
			return nil
		}
		pct := 1 + unsyncedRNG.IntN(99)
		check(crashImage{step: k, op: op, unsynced: pct, fs: cloneNow(mem, vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: unsyncedRNG})})
		return nil
	}
	err := fn(errorfs.Wrap(guardLinks(mem), c))
	return c.n, err
}

// crashTally counts what a sweep exercised.
type crashTally struct {
	mu       sync.Mutex
	points   int            // single power cuts recovered from
	doubles  int            // power cuts during a finishing run, recovered from again
	reruns   int            // power cuts during a rerun before the switch, likewise
	finish   int            // steps of the longest finishing run
	saw      map[string]int // what the operator saw after the first cut
	failures []string
}

func (ct *crashTally) fail(format string, args ...any) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.failures = append(ct.failures, fmt.Sprintf(format, args...))
}

// A crashScenario is an operation whose every step a power cut may
// interrupt, and how an operator recovers from such a cut.
type crashScenario struct {
	start func() *vfs.MemFS  // a copy of the directory before the operation
	run   func(vfs.FS) error // the operation
	// recover recovers the crash image img as an operator would, through
	// errorfs with step when it is not nil (so that a caller can cut power
	// again), and says what the operator saw.
	recover func(img *vfs.MemFS, step *stepCounter) (string, error)
	done    func(vfs.FS) error // checks the directory once recovered
	// switching reports whether fusee.meta m is the operation's state
	// interrupted after its switch began (nil: m.Switching()).
	switching func(m meta.Meta) bool
}

func (s crashScenario) switched(m meta.Meta) bool {
	if s.switching != nil {
		return s.switching(m)
	}
	return m.Switching()
}

// reshardScenario is one reshard of c.
func (c *crashCase) reshardScenario() crashScenario {
	return crashScenario{start: c.fresh, recover: c.recoverDir, done: c.checkDone, switching: c.switching, run: func(fs vfs.FS) error {
		_, err := c.run(fs, false)
		return err
	}}
}

// sweep cuts power at every step of one reshard of c that sample picks
// (see sweepScenario).
func (c *crashCase) sweep(t *testing.T, ct *crashTally, unsyncedSeed uint64, sample func(step int) bool, double, doubleBefore func(first, second int) bool) int {
	return sweepScenario(t, ct, c.reshardScenario(), unsyncedSeed, sample, double, doubleBefore)
}

// sweepScenario cuts power at every step of s's operation that sample
// picks (nil: all of them) and recovers from each cut. unsyncedSeed, when
// not zero, keeps random parts of the unsynced data. After a cut that
// left a switch begun (the operator is told to finish it), it also cuts
// power at the steps of the finishing run that double picks, and recovers
// from that second cut; after a cut before the switch, at the steps of the
// rerun that doubleBefore picks. It returns the operation's step count.
func sweepScenario(t *testing.T, ct *crashTally, s crashScenario, unsyncedSeed uint64, sample func(step int) bool, double, doubleBefore func(first, second int) bool) int {
	var rng *rand.Rand
	if unsyncedSeed != 0 {
		rng = rand.New(rand.NewPCG(unsyncedSeed, 1))
	}
	steps, err := cutEverywhere(s.start(), rng, sample, s.run, func(first crashImage) {
		if len(ct.failures) > 10 {
			return
		}
		ct.points++
		m, err := meta.ReadAny(first.fs, memDir)
		if err != nil {
			ct.fail("%s: reading fusee.meta: %v", first, err)
			return
		}
		pick := doubleBefore
		if s.switched(m) {
			pick = double
		}
		// Recover from the first cut, cutting power again during the
		// recovery at the picked steps.
		img := cloneNow(first.fs, vfs.CrashCloneCfg{})
		second := &stepCounter{}
		second.onStep = func(k int, op errorfs.Op) error {
			if pick == nil || !pick(first.step, k) {
				return nil
			}
			if s.switched(m) {
				ct.doubles++
			} else {
				ct.reruns++
			}
			im2 := crashImage{step: k, op: op, fs: cloneNow(img, vfs.CrashCloneCfg{})}
			if _, err := s.recover(im2.fs, nil); err != nil {
				ct.fail("%s, then during the recovery a %s: %v", first, im2, err)
				return nil
			}
			if err := s.done(im2.fs); err != nil {
				ct.fail("%s, then during the recovery a %s: after recovering again: %v", first, im2, err)
			}
			return nil
		}
		saw, err := s.recover(img, second)
		if err != nil {
			ct.fail("%s: %v", first, err)
			return
		}
		ct.saw[saw]++
		if s.switched(m) {
			ct.finish = max(ct.finish, second.n)
		}
		if err := s.done(img); err != nil {
			ct.fail("%s: %s, then recovered: %v", first, saw, err)
		}
	})
	if err != nil {
		t.Fatalf("the operation itself failed: %v", err)
	}
	return steps
}

// TestCrashAtEveryStep cuts power before every filesystem step of one
// reshard of a representative directory (three shards to five: runs move
// and are renumbered, a dangling reference, a log tail) and recovers as an
// operator would; see docs/reshard.md, "Crash safety, tested". Every cut
// keeps what was synced (every step; every raceStride-th under the race
// detector); further sweeps keep random parts of what was not (every
// fourth step, every 2*raceStride-th under the race detector; sampled steps start
// from an offset that changes daily, see testtier.Offset; every step with
// FUSEE_LONG=1). After a
// cut that left the switch begun, power is cut again during the finishing
// run (at every step with FUSEE_LONG=1, a sample otherwise), and after a
// cut before it, at a sample of the rerun's steps.
func TestCrashAtEveryStep(t *testing.T) {
	t.Parallel() // see sample_test.go
	type config struct {
		name             string
		oldN, newN, runs int
		seed             uint64
		memory           int64
		unsyncedSeeds    []uint64
	}
	configs := []config{{name: "3to5", oldN: 3, newN: 5, runs: 80, seed: 7, unsyncedSeeds: []uint64{1, 2}}}
	unsyncedStride, doubleStride, beforeStride := 4, 5, 50
	if testtier.Race {
		unsyncedStride = 2 * raceStride
	}
	if testtier.Long() {
		configs[0].unsyncedSeeds = []uint64{1, 2, 3, 4}
		configs = append(configs,
			config{name: "3to5-spilled", oldN: 3, newN: 5, runs: 80, seed: 7, memory: 1, unsyncedSeeds: []uint64{5}},
			config{name: "5to2", oldN: 5, newN: 2, runs: 150, seed: 11, unsyncedSeeds: []uint64{6}},
			config{name: "2to4-multiple", oldN: 2, newN: 4, runs: 100, seed: 13, unsyncedSeeds: []uint64{7}},
		)
		unsyncedStride, doubleStride, beforeStride = 1, 1, 10
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			start := time.Now()
			c := newCrashCase(t, cfg.oldN, cfg.newN, cfg.runs, cfg.seed, cfg.memory)
			ct := &crashTally{saw: map[string]int{}}
			double := func(first, second int) bool { return (first+second)%doubleStride == 0 }
			before := func(first, second int) bool { return first%beforeStride == 0 && second%beforeStride == 0 }
			var sample func(int) bool
			if testtier.Race && !testtier.Long() {
				// Every raceStride-th step, from an offset that changes
				// daily; reruns are cut after every 13*raceStride-th step
				// (a multiple, so some of the sampled steps qualify).
				off := testtier.Offset(t, raceStride)
				sample = func(step int) bool { return (step+off)%raceStride == 0 }
				before = func(first, second int) bool { return (first+off)%(13*raceStride) == 0 && second%beforeStride == 0 }
			}
			steps := c.sweep(t, ct, 0, sample, double, before)
			synced := ct.points
			off := testtier.Offset(t, unsyncedStride)
			for i, seed := range cfg.unsyncedSeeds {
				c.sweep(t, ct, seed, func(step int) bool { return (step+i+off)%unsyncedStride == 0 }, nil, nil)
			}
			for _, f := range ct.failures {
				t.Error(f)
			}
			t.Logf("%d->%d shards: one reshard of %d filesystem steps; %d power cuts recovered from: %d at every step keeping only synced data, %d keeping random parts of the unsynced data (%d seeds); %d second power cuts during a finishing run (of up to %d steps), %d during a rerun before the switch; the operator saw %v; %d reports (rerun, finishing and kept) had the dry run's lists; %v",
				cfg.oldN, cfg.newN, steps, ct.points, synced, ct.points-synced, len(cfg.unsyncedSeeds), ct.doubles, ct.finish, ct.reruns, ct.saw, c.compared.Load(), time.Since(start).Round(time.Millisecond))
		})
	}
}
