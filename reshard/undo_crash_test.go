package reshard_test

import (
	"context"
	"errors"
	"fmt"
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

// The crash-point enumeration of the kept layout's life (docs/reshard.md
// §11): the reshard that keeps it, the undo that puts it back, and the
// discard that removes it for good. It reuses the reshard's harness
// (crash_test.go): the same step counter, power cuts, tally and double
// cuts, with an operator's recovery of each operation.

// keptCase is a directory resharded with the old layout kept: the
// starting point of an undo or a discard.
type keptCase struct {
	c        *crashCase
	kept     *vfs.MemFS // the resharded directory with reshard.kept; never changed
	newFiles string     // its files, reshard.kept aside
	alt      atomic.Int64
}

func newKeptCase(t testing.TB, c *crashCase) *keptCase {
	t.Helper()
	mem := c.fresh()
	rep, err := reshard.Reshard(context.Background(), mem, memDir, reshard.Options{Shards: c.newN, Memory: c.memory, KeepOld: true})
	if err != nil || rep.Kept == "" {
		t.Fatalf("reshard --keep-old: %v (kept %q)", err, rep.Kept)
	}
	kept := cloneNow(mem, vfs.CrashCloneCfg{}) // what survives a power cut right after it
	newFiles, err := hashFiles(kept, memDir, reshard.KeptDirName)
	if err != nil {
		t.Fatal(err)
	}
	return &keptCase{c: c, kept: kept, newFiles: newFiles}
}

func (k *keptCase) fresh() *vfs.MemFS { return cloneNow(k.kept, vfs.CrashCloneCfg{}) }

// What the operator saw after a power cut during an undo.
const (
	sawNotUndone   = "opened resharded: undo again"
	sawUndoPending = "refused: finish the undo"
	sawUndone      = "opened undone"
)

// opens is the open an operator tries first on a crash image: the
// logical dump must be the original's, or the open refused with
// meta.ErrSwitching while fusee.meta says format=reshard. It returns
// fusee.meta.
func (k *keptCase) opens(img vfs.FS) (meta.Meta, bool, error) {
	m, err := meta.ReadAny(img, memDir)
	if err != nil {
		return m, false, fmt.Errorf("reading fusee.meta: %w", err)
	}
	dump, err := memDump(img)
	switch {
	case errors.Is(err, meta.ErrSwitching) && m.Switching():
		return m, false, nil
	case err != nil:
		return m, false, fmt.Errorf("opening (fusee.meta %+v): %w", m, err)
	case dump != k.c.before:
		return m, false, fmt.Errorf("the directory opens (fusee.meta %+v) but its logical dump differs from the original", m)
	case m.Shards != k.c.oldN && m.Shards != k.c.newN:
		return m, false, fmt.Errorf("the directory opens with %d shards, neither %d nor %d", m.Shards, k.c.oldN, k.c.newN)
	}
	return m, true, nil
}

// recoverUndo recovers from a power cut during an undo as an operator
// would: the directory opens (resharded, or undone) or is refused until
// the switch is finished; the operator then runs `fusee reshard <dir>
// --undo` again or, when told to finish, sometimes `fusee reshard <dir>`
// instead, which every opener's message names.
func (k *keptCase) recoverUndo(img *vfs.MemFS, step *stepCounter) (string, error) {
	m, opened, err := k.opens(img)
	if err != nil {
		return "", err
	}
	var fs vfs.FS = img
	if step != nil {
		fs = errorfs.Wrap(guardLinks(img), step)
	}
	ctx := context.Background()
	var saw string
	var rep *reshard.Report
	switch {
	case !opened:
		saw = sawUndoPending
		if k.alt.Add(1)%2 == 0 {
			rep, err = reshard.Reshard(ctx, fs, memDir, reshard.Options{})
		} else {
			rep, err = reshard.Undo(ctx, fs, memDir)
		}
		if err == nil && rep.Outcome != reshard.OutcomeFinished {
			err = fmt.Errorf("outcome %s, want %s", rep.Outcome, reshard.OutcomeFinished)
		}
	case m.Shards == k.c.newN:
		saw = sawNotUndone
		rep, err = reshard.Undo(ctx, fs, memDir)
		if err == nil && rep.Outcome != reshard.OutcomeUndone {
			err = fmt.Errorf("outcome %s, want %s", rep.Outcome, reshard.OutcomeUndone)
		}
	default:
		saw = sawUndone
		rep, err = reshard.Undo(ctx, fs, memDir)
		var ue *reshard.UndoError
		switch {
		case errors.As(err, &ue) && strings.Contains(err.Error(), "it keeps no old layout"):
			err = nil // nothing was left over
		case err == nil && rep.Outcome != reshard.OutcomeCleanedUp && rep.Outcome != reshard.OutcomeFinished:
			// Finished: the undo's report was pending (cut after its
			// final fusee.meta); the rerun ends the cleanup and reports it.
			err = fmt.Errorf("outcome %s, want %s or %s", rep.Outcome, reshard.OutcomeCleanedUp, reshard.OutcomeFinished)
		}
	}
	if err == nil && rep != nil && (rep.Outcome == reshard.OutcomeFinished || rep.Outcome == reshard.OutcomeUndone) {
		if got, lerr := reportLists(rep); lerr != nil || got != reversedLists(k.c.lists) {
			err = fmt.Errorf("the report (%s) is not the reshard's reversed (%v):\n%s", rep.Outcome, lerr, lineDiff(reversedLists(k.c.lists), got))
		}
	}
	if rep != nil {
		_ = rep.Close()
	}
	if err != nil {
		return saw, fmt.Errorf("%s, then: %w", saw, err)
	}
	return saw, nil
}

// undoDone checks a directory after the undo and its recovery: the
// original's files, byte for byte (no reshard.kept, reshard.old or
// reshard.new left), verify clean, the original logical dump.
func (k *keptCase) undoDone(fs vfs.FS) error {
	if err := k.c.sameFiles(fs, "undone"); err != nil {
		return err
	}
	kept, err := reshard.OpenReport(fs, memDir, "", "", 1<<20)
	if err != nil {
		return err
	}
	defer kept.Close()
	if got, err := reportLists(kept); err != nil || got != reversedLists(k.c.lists) {
		return fmt.Errorf("the undo's kept report is not the reshard's reversed (%v):\n%s", err, lineDiff(reversedLists(k.c.lists), got))
	}
	dump, err := memVerifyDump(fs)
	if err != nil {
		return err
	}
	if dump != k.c.before {
		return errors.New("the logical dump differs from the original")
	}
	return nil
}

func (k *keptCase) undoScenario() crashScenario {
	return crashScenario{start: k.fresh, recover: k.recoverUndo, done: k.undoDone, run: func(fs vfs.FS) error {
		_, err := reshard.Undo(context.Background(), fs, memDir)
		return err
	}}
}

// What the operator saw after a power cut while discarding.
const (
	sawStillKept = "opened, the layout still kept"
	sawDiscarded = "opened, the layout discarded or a leftover"
)

// recoverDiscard recovers from a power cut during a discard: the
// directory opens resharded; while the kept layout is still there it must
// still undo to the original (checked on a copy); the operator runs
// `fusee reshard <dir> --discard-kept` again.
func (k *keptCase) recoverDiscard(img *vfs.MemFS, step *stepCounter) (string, error) {
	m, opened, err := k.opens(img)
	if err != nil {
		return "", err
	}
	if !opened || m.Shards != k.c.newN {
		return "", fmt.Errorf("fusee.meta is %+v during a discard", m)
	}
	saw := sawDiscarded
	if fileExists(img, img.PathJoin(memDir, reshard.KeptDirName)) {
		saw = sawStillKept
		cp := cloneNow(img, vfs.CrashCloneCfg{})
		if _, err := reshard.Undo(context.Background(), cp, memDir); err != nil {
			return saw, fmt.Errorf("%s, undo: %w", saw, err)
		}
		if err := k.undoDone(cp); err != nil {
			return saw, fmt.Errorf("%s, undo: %w", saw, err)
		}
	}
	var fs vfs.FS = img
	if step != nil {
		fs = errorfs.Wrap(guardLinks(img), step)
	}
	if _, err := reshard.DiscardKept(context.Background(), fs, memDir); err != nil {
		return saw, fmt.Errorf("%s, then discarding again: %w", saw, err)
	}
	return saw, nil
}

// discardDone checks a directory after a discard: the resharded files,
// byte for byte, and nothing else.
func (k *keptCase) discardDone(fs vfs.FS) error {
	files, err := hashFiles(fs, memDir)
	if err != nil {
		return err
	}
	if files != k.newFiles {
		return fmt.Errorf("after discarding: the files differ from the resharded directory's:\n%s", lineDiff(k.newFiles, files))
	}
	dump, err := memVerifyDump(fs)
	if err != nil {
		return err
	}
	if dump != k.c.before {
		return errors.New("the logical dump differs from the original")
	}
	return nil
}

func (k *keptCase) discardScenario() crashScenario {
	return crashScenario{start: k.fresh, recover: k.recoverDiscard, done: k.discardDone, run: func(fs vfs.FS) error {
		rep, err := reshard.DiscardKept(context.Background(), fs, memDir)
		if err == nil && rep.Outcome != reshard.OutcomeDiscarded {
			err = fmt.Errorf("outcome %s, want %s", rep.Outcome, reshard.OutcomeDiscarded)
		}
		return err
	}}
}

// TestKeptLayoutCrashAtEveryStep cuts power before every filesystem step
// of an undo, of a reshard with --keep-old and of a discard of the kept
// layout, and recovers each cut as an operator would; see
// docs/reshard.md §11.1. Undo: the result is the original directory, file
// for file (every file hashed), verify clean, the logical dump equal; a
// second cut during every recovery run is recovered from too (a sample by
// default, all with FUSEE_LONG=1), and a sweep keeps random parts of the
// unsynced data. Keep: every step from the one that writes kept.json on
// (before it, a keeping reshard does what TestCrashAtEveryStep enumerates;
// every tenth of those steps, all with FUSEE_LONG=1); the recovered
// directory must be resharded, clean, and undo to the original file for
// file. Discard: the directory opens resharded throughout; until the
// layout is gone it still undoes to the original; rerun, the discard
// leaves the resharded files and nothing else. Under the race detector
// the first cuts are at every raceStride/4-th step (see raceScaled), with
// one unsynced seed.
func TestKeptLayoutCrashAtEveryStep(t *testing.T) {
	t.Parallel() // see sample_test.go
	start := time.Now()
	c := newCrashCase(t, 3, 5, scaled(60), 17, 0)
	k := newKeptCase(t, c)
	long := testtier.Long()
	// Under the race detector (several times slower), first cuts at every
	// raceStride/4-th step (every 12th in the README's command, every
	// other in CI's FUSEE_RACE_FULL=1 run) from an offset that changes
	// daily, and one unsynced seed.
	doubleStride, beforeStride, keepStride, every, seeds := 3, 3, 10, 1, []uint64{3, 4}
	if long {
		doubleStride, beforeStride, keepStride = 1, 1, 1
	} else if testtier.Race {
		doubleStride, beforeStride, keepStride, every, seeds = raceScaled(6), raceScaled(6), raceScaled(40), raceScaled(2), seeds[:1]
	}
	off := testtier.Offset(t, every)
	sampled := func(step int) bool { return (step+off)%every == 0 }
	double := func(first, second int) bool { return (first+second)%doubleStride == 0 }
	before := func(first, second int) bool { return (first+second)%beforeStride == 0 }

	t.Run("undo", func(t *testing.T) {
		ct := &crashTally{saw: map[string]int{}}
		steps := sweepScenario(t, ct, k.undoScenario(), 0, sampled, double, before)
		synced := ct.points
		for _, seed := range seeds {
			sweepScenario(t, ct, k.undoScenario(), seed, sampled, nil, nil)
		}
		report(t, ct, fmt.Sprintf("undo %d->%d shards: %d filesystem steps", c.newN, c.oldN, steps), synced, len(seeds))
	})
	t.Run("keep", func(t *testing.T) {
		kc := *c
		kc.keepOld = true
		// The step that writes kept.json, found by a run that is not cut.
		first := 0
		probe := &stepCounter{}
		probe.onStep = func(n int, op errorfs.Op) error {
			if first == 0 && strings.Contains(op.Path, "kept.json") {
				first = n
			}
			return nil
		}
		if err := kc.reshardScenario().run(errorfs.Wrap(guardLinks(kc.fresh()), probe)); err != nil || first == 0 {
			t.Fatalf("reshard --keep-old: %v (kept.json at step %d)", err, first)
		}
		ct := &crashTally{saw: map[string]int{}}
		sample := func(step int) bool { return step >= first && sampled(step) || step%keepStride == 0 }
		// A second cut during a rerun before the switch: from the rerun's
		// own kept.json on, a sample (the rerun is a whole reshard).
		rerun := func(f, s int) bool { return f >= first && s >= first && (f+s)%(4*beforeStride) == 0 }
		steps := sweepScenario(t, ct, kc.reshardScenario(), 0, sample, double, rerun)
		report(t, ct, fmt.Sprintf("reshard --keep-old %d->%d shards: %d filesystem steps, kept.json written at step %d; every step from it, every %d-th before", c.oldN, c.newN, steps, first, keepStride), ct.points, 0)
	})
	t.Run("discard", func(t *testing.T) {
		ct := &crashTally{saw: map[string]int{}}
		steps := sweepScenario(t, ct, k.discardScenario(), 0, nil, double, before)
		report(t, ct, fmt.Sprintf("discarding the kept layout: %d filesystem steps", steps), ct.points, 0)
	})
	t.Logf("%v", time.Since(start).Round(time.Millisecond))
}

// eligibleCounter counts the operations a fault can happen at, and notes
// how many came before the first one on kept.json.
type eligibleCounter struct {
	mu     sync.Mutex
	f      fault
	n, at  int
	marked bool
}

func (e *eligibleCounter) String() string { return "counting " + e.f.name + " operations" }

func (e *eligibleCounter) MaybeError(op errorfs.Op) error {
	if !isStep(op) {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.marked && strings.Contains(op.Path, "kept.json") {
		e.marked, e.at = true, e.n+1
	}
	if e.f.at(op.Kind) {
		e.n++
	}
	return nil
}

// keptFrom is the number, among the operations f can happen at, of the
// first at or after the one that writes kept.json, in a run of s.
func keptFrom(t *testing.T, s crashScenario, f fault) int {
	e := &eligibleCounter{f: f}
	if err := s.run(errorfs.Wrap(guardLinks(s.start()), e)); err != nil || !e.marked {
		t.Fatalf("counting the operations: %v (kept.json seen: %v)", err, e.marked)
	}
	return e.at
}

// report fails t with ct's failures and logs its counts.
func report(t *testing.T, ct *crashTally, what string, synced, seeds int) {
	t.Helper()
	for _, f := range ct.failures {
		t.Error(f)
	}
	if ct.points == 0 {
		t.Error("no power cut was exercised")
	}
	t.Logf("%s; %d power cuts recovered from: %d keeping only synced data, %d keeping random parts of the unsynced data (%d seeds); %d second power cuts during a finishing run (of up to %d steps), %d during a rerun before the switch; the operator saw %v",
		what, ct.points, synced, ct.points-synced, seeds, ct.doubles, ct.finish, ct.reruns, ct.saw)
}

// TestKeptLayoutFaultAtEveryStep injects each fault of TestFaultAtEveryStep
// (ENOSPC, EIO on a write, EIO on an fsync, a failed rename) at every
// operation of an undo, and of a discard, that it can happen at, and of a
// reshard with --keep-old from kept.json on (every third by default): each
// must end in an error naming the operation and the file (errors.Is the
// errno), a failed fsync never retried, and the directory must open as it
// was or be finished by the operator's rerun; then undone, it is the
// original file for file, and discarded, the resharded one.
func TestKeptLayoutFaultAtEveryStep(t *testing.T) {
	start := time.Now()
	c := newCrashCase(t, 3, 5, scaled(60), 17, 0)
	k := newKeptCase(t, c)
	kc := *c
	kc.keepOld = true
	keepStride, undoStride := 3, 1
	if testtier.Long() {
		keepStride = 1
	} else if testtier.Race {
		keepStride, undoStride = raceScaled(6), raceScaled(2)
	}
	for _, sc := range []struct {
		name string
		s    crashScenario
		// from is where the faults start (1: the first operation
		// eligible); stride, how far apart.
		from   func(f fault) int
		stride int
	}{
		{"undo", k.undoScenario(), nil, undoStride},
		{"discard", k.discardScenario(), nil, 1},
		// A reshard with --keep-old, from the operation that writes
		// kept.json on (before it, TestFaultAtEveryStep's reshard).
		{"keep", kc.reshardScenario(), func(f fault) int { return keptFrom(t, kc.reshardScenario(), f) }, keepStride},
	} {
		injected := map[string]int{}
		var failures []string
		off := testtier.Offset(t, sc.stride)
		for _, f := range faults {
			from := 1
			if sc.from != nil {
				from = sc.from(f)
			}
			from += off
			for n := from; len(failures) < 10; n += sc.stride {
				fi := &faultInjector{f: f, k: n, badSync: map[string]bool{}}
				done, err := faultScenario(sc.s, fi)
				if done {
					if err != nil {
						failures = append(failures, fmt.Sprintf("%s, no fault injected: %v", sc.name, err))
					}
					break
				}
				injected[f.name]++
				if err != nil {
					failures = append(failures, fmt.Sprintf("%s: %s at %s %s (its %d-th): %v", sc.name, f.name, opName(fi.failed.Kind), fi.failed.Path, n, err))
				}
			}
		}
		for _, f := range failures {
			t.Error(f)
		}
		total := 0
		for _, n := range injected {
			total += n
		}
		if total == 0 {
			t.Errorf("%s: no fault injected", sc.name)
		}
		t.Logf("%s: %d faults injected %v, each a clean error and a directory that opens as it was or is finished by a rerun", sc.name, total, injected)
	}
	t.Logf("%v", time.Since(start).Round(time.Millisecond))
}
