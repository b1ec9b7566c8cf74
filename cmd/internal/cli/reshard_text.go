package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// The texts of reshard, upgrade and undo that name the commands an
// operator runs next: reshard returns typed states and errors (what
// happened, how far a switch got, where its report is kept), and this
// file says what to do about them.

// finishCommandFor is the command that finishes op's switch in dir.
func finishCommandFor(op reshard.Op, dir string) string {
	if op == reshard.OpUpgrade {
		return "fusee upgrade " + meta.ShellQuote(dir)
	}
	return "fusee reshard " + meta.ShellQuote(dir)
}

// statusMessage says, in one line an operator can act on, the reshard
// state s, where things are and the command that finishes it
// (s.Command), starting with the state's name ("building: …"). Empty for
// reshard.StateNone.
func statusMessage(s *reshard.Status) string {
	switch s.State {
	case reshard.StateBuilding:
		return fmt.Sprintf("building: %s is left from a reshard that stopped before its switch; the directory is unchanged and opens as it is; run `%s` to remove the leftover (the next reshard also removes it)",
			strings.Join(s.Leftovers, " and "), s.Command)
	case reshard.StateSwitching:
		return fmt.Sprintf("switching from %d to %d shards: the old files are in %s, the new in %s; nothing but reshard opens the directory until the switch is finished: run `%s` to finish it",
			s.OldShards, s.NewShards, strings.Join(s.OldFiles, " and "), strings.Join(s.NewFiles, " and "), s.Command)
	case reshard.StateCleaningUp:
		left := "its report is not yet named"
		if len(s.Leftovers) > 0 {
			left = strings.Join(s.Leftovers, " and ") + " is left over"
		}
		return fmt.Sprintf("cleaning up: the switch finished (the directory has %d shards now and opens as it is) and %s; run `%s` to end the cleanup",
			s.NewShards, left, s.Command)
	}
	return ""
}

// switchFailure says what a failure after (or at) a switch's point of no
// return left and what finishes it. A switch left half done exits 4, as
// every opener of such a directory does; a completed switch whose cleanup
// stopped exits 1.
func switchFailure(se *reshard.SwitchError) error {
	finish := finishCommandFor(se.Op, se.Dir)
	var msg string
	code := ExitFailure
	switch {
	case se.MaybeNotBegun:
		msg = fmt.Sprintf("%s: beginning the %s's switch failed (%v): the directory is either as it was, with %s left over, or its switch has begun; run `%s`: it finishes the switch, or removes the leftover",
			se.Dir, se.Op, se.Err, reshard.NewDirName, finish)
	case se.Completed:
		msg = fmt.Sprintf("%s: the %s is complete: the directory has its new layout and opens as it is, but the cleanup after the switch stopped (%v); run `%s` to end the cleanup",
			se.Dir, se.Op, se.Err, finish)
	default:
		code = ExitSwitching
		msg = fmt.Sprintf("%s: the %s's switch began and stopped before it was complete (%v); nothing but `%s` opens the directory now: run it to finish the switch",
			se.Dir, se.Op, se.Err, finish)
	}
	if se.Report != "" {
		msg += fmt.Sprintf("; the report is kept in %s, and the finishing run prints it (so does `fusee inspect %s --report`)", se.Report, meta.ShellQuote(se.Dir))
	}
	return exitError{code: code, err: errors.New(msg)}
}

// reshardError maps an error of reshard.Reshard, Upgrade or Undo to what
// the operator reads.
func reshardError(dir string, err error) error {
	var se *reshard.SwitchError
	if errors.As(err, &se) {
		return switchFailure(se)
	}
	var ip *reshard.InProgressError
	if errors.As(err, &ip) {
		return hintedError{err: err, msg: fmt.Sprintf("%s: a reshard from %d to %d shards was interrupted after its switch began; it must be finished first: run `%s` (without a count, or with %d), not with %d",
			ip.Dir, ip.Old, ip.New, finishCommandFor(reshard.OpReshard, ip.Dir), ip.New, ip.Asked)}
	}
	var kept *reshard.KeptError
	if errors.As(err, &kept) {
		q := meta.ShellQuote(kept.Dir)
		return hintedError{err: err, msg: fmt.Sprintf("%s holds the layout kept by an earlier reshard (%s); undo that reshard with `fusee reshard %s --undo`, or remove the kept layout with `fusee reshard %s --discard-kept` once you no longer need it, then run this reshard again; nothing was changed",
			kept.Dir, reshard.KeptDirName, q, q)}
	}
	var ke *reshard.KeepOldFinishError
	if errors.As(err, &ke) {
		if ke.NothingToFinish {
			return usageError{withNext(err, "--keep-old keeps the old layout of a reshard to a new count")}
		}
		return withNext(err, fmt.Sprintf("run `fusee reshard %s` without --keep-old to finish it", meta.ShellQuote(dir)))
	}
	if next := nextStep(dir, err); next != "" {
		return withNext(err, next)
	}
	return explainBeforeSwitch(dir, err)
}

// nextStep is the next step after a refusal or failure of reshard,
// upgrade, undo or discard that reshard tells by its type ("" for none):
// a damaged directory, a bug caught by the check, a refused undo or
// discard, a stale or edited plan.
func nextStep(dir string, err error) string {
	q := meta.ShellQuote(dir)
	var (
		de *reshard.DamagedError
		ce *reshard.CheckError
		ue *reshard.UndoError
		fe *reshard.DiscardError
		se *reshard.StalePlanError
		me *reshard.PlanMismatchError
	)
	switch {
	case errors.As(err, &de) && de.Err == nil: // a damaged log is explained as verify explains it
		if de.Op == reshard.OpUpgrade {
			return nextRestore // verify does not read log format 2
		}
		return fmt.Sprintf("run `fusee verify %s` for the full picture and %s", q, nextRestore)
	case errors.As(err, &ce):
		if ce.Op == reshard.OpUpgrade {
			return "please report it" // verify does not read log format 2
		}
		return fmt.Sprintf("please report it with the output of `fusee verify %s`", q)
	case errors.As(err, &ue):
		return undoNext(ue)
	case errors.As(err, &fe) && fe.Leftover != "":
		return fmt.Sprintf("`fusee reshard %s` removes it", q)
	case errors.As(err, &fe):
		return fmt.Sprintf("run `fusee reshard %s` to finish it", q)
	case errors.As(err, &se) && se.Switching:
		return fmt.Sprintf("finish it with `fusee reshard %s` first, then make a new plan and review it again", q)
	case errors.As(err, &se):
		return "make a new plan and review it again"
	case errors.As(err, &me):
		return fmt.Sprintf("make a new plan with `fusee reshard %s <shards> --dry-run -o FILE` and review it", q)
	}
	return ""
}

// undoNext is the next step after a refused undo.
func undoNext(ue *reshard.UndoError) string {
	q := meta.ShellQuote(ue.Dir)
	discard := "`fusee reshard " + q + " --discard-kept`"
	switch ue.Kind {
	case reshard.UndoSwitchInterrupted:
		return "finish it first with `fusee reshard " + q + "`"
	case reshard.UndoNothingKept:
		return "only a reshard run with --keep-old can be undone"
	case reshard.UndoKeptDamaged:
		return "remove the kept layout with " + discard
	case reshard.UndoReportLost:
		return fmt.Sprintf("restore %s from a backup, or keep the resharded layout (remove the kept one with %s)", ue.Report, discard)
	case reshard.UndoDirChanged:
		return fmt.Sprintf("reshard it back instead (`fusee reshard %s %d`, after %s)", q, ue.OldShards, discard)
	}
	return ""
}

// hintedError is a typed error of reshard told with the commands that
// deal with it: msg is what the operator reads, err (unwrapped) what the
// exit code is mapped from.
type hintedError struct {
	msg string
	err error
}

func (e hintedError) Error() string { return e.msg }
func (e hintedError) Unwrap() error { return e.err }

// withNext is err told with the next step after it.
func withNext(err error, next string) error {
	return hintedError{err: err, msg: err.Error() + "; " + next}
}

// changedError is a failure after the directory changed for good (a
// reshard, upgrade or undo done or finished): what failed is an output,
// and the message says that the change happened and where its report is
// kept.
type changedError struct {
	rep *reshard.Report
	err error
}

func (e *changedError) Error() string {
	rep := e.rep
	what := fmt.Sprintf("the reshard of %s to %d shards is done", rep.Dir, rep.NewShards)
	switch {
	case rep.OldLog != 0:
		what = fmt.Sprintf("the upgrade of %s to log format %d is done", rep.Dir, rep.NewLog)
	case rep.Outcome == reshard.OutcomeUndone || rep.Undid != "":
		what = fmt.Sprintf("the undo is done: %s has its kept layout of %d shards back", rep.Dir, rep.NewShards)
	}
	if rep.Kept != "" {
		what += fmt.Sprintf(" (the old layout is kept in %s)", rep.Kept)
	}
	return fmt.Sprintf("%s; then %v; its report is kept in %s: `fusee inspect %s --report --json` prints it again",
		what, e.err, rep.ReportFile, meta.ShellQuote(rep.Dir))
}

func (e *changedError) Unwrap() error { return e.err }

// afterChange is err (from writing or printing rep) as the operator must
// read it: once the directory changed for good, as a changedError.
func afterChange(rep *reshard.Report, err error) error {
	if err == nil || rep.DryRun || rep.ReportFile == "" {
		return err
	}
	switch rep.Outcome {
	case reshard.OutcomeDone, reshard.OutcomeFinished, reshard.OutcomeUndone:
		return &changedError{rep: rep, err: err}
	}
	return err
}

// checkScratch refuses a --scratch that is not an existing directory:
// fusee never creates it.
func checkScratch(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return usagef("--scratch %s: %v; fusee does not create it: give an existing directory", dir, err)
	case !st.IsDir():
		return usagef("--scratch %s: not a directory", dir)
	}
	return nil
}

// outputFile is an output file named by a flag, begun before the command
// changes anything (its temporary file exists), put in place atomically
// and durably by commit. A nil *outputFile is no output.
type outputFile struct{ p *meta.Pending }

// pendingOutput begins the output file path ("" none) named by flag, so
// that a path that cannot be written is refused before anything changes.
func pendingOutput(flag, path string) (*outputFile, error) {
	if path == "" {
		return nil, nil
	}
	// A kill before an earlier write of path was committed left its
	// temporary file: it goes (the name is this output's own).
	meta.RemoveTempFiles(vfs.Default, filepath.Dir(path), filepath.Base(path)+".tmp")
	p, err := meta.CreatePending(vfs.Default, path)
	if err != nil {
		return nil, fmt.Errorf("%s %s cannot be written (%v); nothing was changed: give a file in an existing directory you can write to", flag, path, err)
	}
	return &outputFile{p: p}, nil
}

// commit writes the file whole (write streams it) and puts it in place.
func (o *outputFile) commit(write func(io.Writer) error) error {
	if o == nil {
		return nil
	}
	err := o.p.Commit(write)
	o.p = nil
	return err
}

// abort removes the temporary file of an output not committed.
func (o *outputFile) abort() {
	if o != nil && o.p != nil {
		o.p.Abort()
	}
}
