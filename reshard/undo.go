package reshard

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// Undo (docs/reshard.md §11): the kept old layout goes back in place
// through the same switch as a reshard, with reshard.kept as the source:
//
//	check: fusee.meta local; the layout in place has the fingerprint kept.json recorded;
//	       reshard.kept has the files kept.json lists, with their sizes
//	reshard.kept/UNDO is written                                   (u1)
//	fusee.meta := format=reshard old_shards=M new_shards=N          (u2) point of no return
//	per component: X -> reshard.old/X; reshard.kept/X -> X          (u3, u4)
//	fusee.meta := the old file, byte for byte                       (u5)
//	remove reshard.old, reshard.kept                                (u6)
//
// While fusee.meta says format=reshard, the marker makes every finisher
// (`fusee reshard <dir>`, with or without --undo) take reshard.kept as the
// source (switchdir.Source). A crash before u2 leaves the resharded directory
// as it was, with its kept layout (marked, which changes nothing); after
// u5, reshard.kept holds only its record and is a leftover.

// OutcomeUndone: a kept layout was restored.
const OutcomeUndone Outcome = "undone"

// UndoError is an undo that was refused; nothing was changed. Kind says
// which refusal it is (the command layer picks the next step by it),
// Reason what was found.
type UndoError struct {
	Dir    string
	Kind   UndoRefusal
	Reason string
	// OldShards is the count of the layout the reshard kept: a reshard
	// back to it is what remains once the directory changed
	// (UndoDirChanged).
	OldShards int
	// Report is the lost report of the reshard (UndoReportLost).
	Report string
}

// UndoRefusal is the kind of an UndoError.
type UndoRefusal string

// Undo refusals.
const (
	// UndoSwitchInterrupted: a switch other than an undo's is
	// interrupted; it must be finished first.
	UndoSwitchInterrupted UndoRefusal = "switch-interrupted"
	// UndoNothingKept: no reshard kept its old layout here.
	UndoNothingKept UndoRefusal = "nothing-kept"
	// UndoKeptDamaged: the kept layout or its record was removed or
	// changed since the reshard kept it.
	UndoKeptDamaged UndoRefusal = "kept-damaged"
	// UndoKeptUnreadable: the kept layout's files cannot be listed.
	UndoKeptUnreadable UndoRefusal = "kept-unreadable"
	// UndoReportLost: the report of the reshard to undo, which the
	// undo's reverses, is missing or cannot be read.
	UndoReportLost UndoRefusal = "report-lost"
	// UndoDirChanged: the layout in place is not the one the reshard
	// wrote (an engine opened it and wrote).
	UndoDirChanged UndoRefusal = "dir-changed"
)

func (e *UndoError) Error() string {
	return fmt.Sprintf("%s: cannot undo the reshard: %s; nothing was changed", e.Dir, e.Reason)
}

// Undo restores the layout an earlier reshard with KeepOld kept in
// <dir>/reshard.kept, if the layout in place is still exactly what that
// reshard wrote; or finishes an undo that was interrupted. It takes the
// directory's lock for its whole run.
func Undo(ctx context.Context, fs vfs.FS, dir string) (*Report, error) {
	fs = meta.FS(fs)
	d, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m := d.Meta()
	rep := &Report{Version: ReportVersion, Dir: dir, Outcome: OutcomeUndone, OldShards: m.Shards, NewShards: m.Shards,
		Counts: Counts{Runs: map[string]int64{}}}
	emptyLists(rep)
	r := &resharder{fs: fs, dir: dir, rep: rep, budget: DefaultMemory, undo: true}
	if r.owner, err = switchdir.OwnerOf(fs, dir); err != nil {
		return nil, err
	}
	kept := fs.PathJoin(dir, KeptDirName)
	if m.Switching() {
		rep.OldShards, rep.NewShards = m.OldShards, m.NewShards
		if switchdir.Source(fs, dir) != kept {
			return nil, &UndoError{Dir: dir, Kind: UndoSwitchInterrupted, Reason: fmt.Sprintf("a reshard from %d to %d shards is interrupted", m.OldShards, m.NewShards)}
		}
		return r.finishInterrupted(d, m.NewShards)
	}
	if ok, err := switchdir.Exists(fs, kept); err != nil || !ok {
		if err != nil {
			return nil, err
		}
		if pending := switchdir.PendingReport(fs, dir); pending != "" {
			return r.finishCleanup(pending) // an undo that finished, its cleanup cut short
		}
		return nil, noKeptLayout(dir)
	}
	if done, err := switchdir.KeptLayoutDone(fs, kept); err != nil || done {
		if err != nil {
			return nil, err
		}
		// An undo that finished and stopped before removing its leftovers.
		if pending := switchdir.PendingReport(fs, dir); pending != "" {
			return r.finishCleanup(pending)
		}
		if err := r.removeLeftovers(); err != nil {
			return nil, err
		}
		rep.Outcome = OutcomeCleanedUp
		return rep, nil
	}
	rec, err := switchdir.ReadKeptRecord(fs, kept)
	if err != nil {
		return nil, keptRecordUnreadable(dir, err)
	}
	rep.NewShards = rec.OldShards
	if err := r.checkUndoable(ctx, m, rec); err != nil {
		return nil, err
	}
	if err := r.reverseReport(rec); err != nil {
		return nil, err
	}
	// Leftovers (and the kept reshard's own unfinished cleanup) go first.
	if err := r.removeLeftovers(); err != nil {
		return nil, err
	}
	return r.undoSwitch(d, m, rec)
}

// undoSwitch keeps the undo's report in reshard.kept, marks it the
// switch's source and switches (u1 to u6).
func (r *resharder) undoSwitch(d *metaDir, m meta.Meta, rec *KeptRecord) (*Report, error) {
	fs, dir, rep := r.fs, r.dir, r.rep
	kept := fs.PathJoin(dir, KeptDirName)
	start := r.startClock("switch")
	rep.ReportFile = fs.PathJoin(dir, ReportsDirName, switchdir.NewReportName(fs, dir, fmt.Sprintf("undo-%d-to-%d", m.Shards, rec.OldShards), start))
	if err := r.writeSourceReport(kept); err != nil {
		return nil, err
	}
	if err := meta.ReplaceFile(fs, fs.PathJoin(kept, switchdir.UndoMarker), nil); err != nil {
		return nil, err
	}
	if err := hook("undo-marked"); err != nil {
		return nil, err
	}
	if err := meta.SyncDir(fs, kept); err != nil {
		return nil, err
	}
	sw := meta.Meta{Format: meta.Switching, Log: meta.LogShared, Shards: rec.OldShards, OldShards: m.Shards, NewShards: rec.OldShards}
	if err := r.writeMeta(d, sw); err != nil {
		return nil, &SwitchError{Dir: dir, Op: OpUndo, MaybeNotBegun: true, Report: r.reportNow(kept), Err: err}
	}
	if err := hook("undo-meta-switching"); err != nil {
		return nil, r.switchFailed(err)
	}
	if err := r.finishSwitch(d, rec.OldShards); err != nil {
		return nil, r.switchFailed(err)
	}
	r.phase("switch", start)
	return rep, nil
}

// reverseReport makes r.rep the report of undoing the reshard rec kept:
// that reshard's report (kept in reshard-reports) with every token change
// and every renumbered run reversed, new to old.
func (r *resharder) reverseReport(rec *KeptRecord) error {
	rep := r.rep
	if rec.Report == "" {
		rep.ListsUnknown = true // kept by a fusee that kept no reports
		return nil
	}
	orig, err := OpenReport(r.fs, r.dir, rec.Report, "", r.budget)
	if err != nil {
		path := r.fs.PathJoin(r.dir, ReportsDirName, rec.Report)
		return &UndoError{Dir: r.dir, Kind: UndoReportLost, Report: path,
			Reason: fmt.Sprintf("the report of the reshard it would undo cannot be read (%v); undo reports every token it changes back, from that report", err)}
	}
	defer orig.Close()
	newReportLists(r.fs, rep, "", r.budget)
	rep.Undid = orig.ReportFile
	rep.Counts = orig.Counts
	err = orig.Renumbered.Each(func(rr *RenumberedRun) error {
		back := RenumberedRun{WorkflowID: rr.WorkflowID, OldShard: rr.NewShard, OldRun: rr.NewRun, NewShard: rr.OldShard, NewRun: rr.OldRun,
			OldKey: rr.NewKey, NewKey: rr.OldKey, Tokens: make([]RunToken, 0, len(rr.Tokens))}
		for _, t := range rr.Tokens {
			back.Tokens = append(back.Tokens, RunToken{Position: t.Position, Old: t.New, New: t.Old})
		}
		return rep.Renumbered.add(renumberedOrder(back.NewShard, back.NewRun), back)
	})
	if err != nil {
		return err
	}
	return orig.Tokens.Each(func(t *TokenChange) error {
		return rep.Tokens.add(nil, TokenChange{WorkflowID: t.WorkflowID, Position: t.Position, Old: t.New, New: t.Old})
	})
}

// checkUndoable makes every check an undo makes before it changes
// anything: the layout in place is the one the reshard wrote, the kept
// layout is whole, and the reshard's report (which the undo's reverses)
// is there to be read.
func (r *resharder) checkUndoable(ctx context.Context, m meta.Meta, rec *KeptRecord) error {
	if err := r.checkUnchanged(ctx, m, rec); err != nil {
		return err
	}
	if err := checkKeptWhole(r.fs, r.dir, r.fs.PathJoin(r.dir, KeptDirName), rec); err != nil {
		return err
	}
	if path := r.fs.PathJoin(r.dir, ReportsDirName, rec.Report); rec.Report != "" && !switchdir.FileExists(r.fs, path) {
		return &UndoError{Dir: r.dir, Kind: UndoReportLost, Report: path,
			Reason: fmt.Sprintf("the report of the reshard it would undo, %s, is missing; undo reports every token it changes back, from that report", path)}
	}
	return nil
}

// CheckUndo says whether Undo of dir would go ahead: nil if so, else
// the *UndoError (or other error) it would refuse with. It takes the
// directory's lock, reads, and changes nothing.
func CheckUndo(ctx context.Context, fs vfs.FS, dir string) error {
	fs = meta.FS(fs)
	d, err := lockDir(fs, dir)
	if err != nil {
		return err
	}
	defer d.Close()
	m := d.Meta()
	if m.Switching() {
		return &UndoError{Dir: dir, Kind: UndoSwitchInterrupted, Reason: fmt.Sprintf("a switch from %d to %d shards is interrupted", m.OldShards, m.NewShards)}
	}
	kept := fs.PathJoin(dir, KeptDirName)
	if done, err := switchdir.KeptLayoutDone(fs, kept); err != nil || done || !switchdir.FileExists(fs, kept) {
		if err != nil {
			return err
		}
		return noKeptLayout(dir)
	}
	rec, err := switchdir.ReadKeptRecord(fs, kept)
	if err != nil {
		return keptRecordUnreadable(dir, err)
	}
	r := &resharder{fs: fs, dir: dir, rep: &Report{}, budget: DefaultMemory, undo: true}
	return r.checkUndoable(ctx, m, rec)
}

func noKeptLayout(dir string) *UndoError {
	return &UndoError{Dir: dir, Kind: UndoNothingKept, Reason: "it keeps no old layout (" + KeptDirName + ")"}
}

func keptRecordUnreadable(dir string, err error) *UndoError {
	return &UndoError{Dir: dir, Kind: UndoKeptDamaged, Reason: fmt.Sprintf("its kept layout's record cannot be read (%v): part of %s was removed or changed. The directory in place is the resharded one and opens as it is",
		err, KeptDirName)}
}

// checkUnchanged refuses an undo when the layout in place is not the one
// the reshard wrote: the engine opened it and wrote (the log grew or a
// checkpoint was taken), and the kept layout lacks what it acknowledged.
func (r *resharder) checkUnchanged(ctx context.Context, m meta.Meta, rec *KeptRecord) error {
	if m.Shards != rec.NewShards {
		return &UndoError{Dir: r.dir, Kind: UndoDirChanged, OldShards: rec.OldShards,
			Reason: fmt.Sprintf("it has %d shards, the kept layout was replaced by %d", m.Shards, rec.NewShards)}
	}
	data, err := switchdir.ReadMetaBytes(r.fs, r.dir)
	if err != nil {
		return err
	}
	fp, _, err := switchdir.ReadFingerprint(ctx, r.fs, r.dir, m.Shards, data)
	if err != nil {
		return err
	}
	if diff := rec.New.Diff(fp); diff != "" {
		return &UndoError{Dir: r.dir, Kind: UndoDirChanged, OldShards: rec.OldShards,
			Reason: "the directory changed since the reshard (" + diff + "): an engine opened it and wrote, and the kept layout lacks what it acknowledged"}
	}
	return nil
}

// DiscardError is a DiscardKept that failed: refused because a switch
// (OldShards to NewShards) is interrupted, Err meta.ErrSwitching, and
// nothing was changed; or, Leftover set, the kept layout was discarded
// and removing Leftover, what is left of it, failed with Err.
type DiscardError struct {
	Dir                  string
	OldShards, NewShards int
	Leftover             string
	Err                  error
}

func (e *DiscardError) Error() string {
	if e.Leftover != "" {
		return fmt.Sprintf("removing %s (the kept layout is discarded; what is left is a leftover): %v", e.Leftover, e.Err)
	}
	return fmt.Sprintf("%s: cannot discard %s: %v (from %d to %d shards); it must be finished first; nothing was changed",
		e.Dir, KeptDirName, e.Err, e.OldShards, e.NewShards)
}

func (e *DiscardError) Unwrap() error { return e.Err }

// OutcomeDiscarded: a kept layout was removed (DiscardKept).
const OutcomeDiscarded Outcome = "discarded-kept"

// DiscardKept removes dir's kept layout for good, crash-safely: under the
// directory's lock, reshard.kept is renamed reshard.old — from then on a
// leftover that any later run removes — the directory is synced, and
// reshard.old is removed. A crash before the rename leaves the layout kept
// whole; after it, a leftover. Run again, it finishes (or, with nothing
// kept, does nothing). It refuses while a switch is interrupted: the kept
// layout may be what that switch moves in.
func DiscardKept(_ context.Context, fs vfs.FS, dir string) (*Report, error) {
	fs = meta.FS(fs)
	d, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m := d.Meta()
	if m.Switching() {
		return nil, &DiscardError{Dir: dir, OldShards: m.OldShards, NewShards: m.NewShards, Err: meta.ErrSwitching}
	}
	rep := &Report{Version: ReportVersion, Dir: dir, Outcome: OutcomeNothingToDo, OldShards: m.Shards, NewShards: m.Shards,
		Counts: Counts{Runs: map[string]int64{}}}
	emptyLists(rep)
	kept, aside := fs.PathJoin(dir, KeptDirName), fs.PathJoin(dir, OldDirName)
	// Leftovers first: reshard.old may be a kept layout whose discard a
	// crash cut short.
	for _, left := range switchdir.Leftovers(fs, dir) {
		if err := fs.RemoveAll(left); err != nil {
			return nil, fmt.Errorf("removing the leftover %s: %w", left, err)
		}
		if err := meta.SyncDir(fs, dir); err != nil {
			return nil, err
		}
		rep.CleanedUp = append(rep.CleanedUp, left)
		rep.Outcome = OutcomeCleanedUp
	}
	// A switch that finished and whose cleanup did not: its report gets
	// its name (before the kept layout, which may protect it, goes).
	meta.RemoveTempFiles(fs, dir, meta.FileName)
	if err := (switchdir.Dir{FS: fs, Path: dir, Step: hook}).FinishReport("", readReportName(fs)); err != nil {
		return nil, err
	}
	if ok, err := switchdir.Exists(fs, kept); err != nil || !ok {
		return rep, err
	}
	if err := fs.Rename(kept, aside); err != nil {
		return nil, fmt.Errorf("discarding the kept layout: %w", err)
	}
	if err := hook("kept-discarding"); err != nil {
		return nil, err
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return nil, err
	}
	if err := fs.RemoveAll(aside); err != nil {
		return nil, &DiscardError{Dir: dir, Leftover: aside, Err: err}
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return nil, err
	}
	rep.Outcome = OutcomeDiscarded
	rep.CleanedUp = append(rep.CleanedUp, kept)
	return rep, nil
}
