package reshard

import (
	"errors"
	"fmt"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// Op names the operation whose switch a SwitchError is about.
type Op string

// Operations that switch a directory's layout.
const (
	OpReshard Op = "reshard"
	OpUpgrade Op = "upgrade"
	OpUndo    Op = "undo"
)

// SwitchError is a failure after an operation's point of no return (or
// at it): the directory is not simply as it was, and the report is kept
// in it. The command layer says what to run; these fields say what it
// needs to: whether the switch is complete, and where the report is.
type SwitchError struct {
	Dir string
	Op  Op
	// Completed: the final fusee.meta was written; the directory opens
	// with its new layout and only the cleanup stopped.
	Completed bool
	// MaybeNotBegun: writing the switching fusee.meta itself failed, so
	// the directory is either as it was (reshard.new left over) or its
	// switch has begun.
	MaybeNotBegun bool
	// Report is where the operation's report is now ("" if none is
	// kept: a switch begun by a fusee that kept no reports).
	Report string
	Err    error
}

func (e *SwitchError) Error() string {
	state := "its switch began and stopped before it was complete (only the finishing run opens the directory)"
	switch {
	case e.MaybeNotBegun:
		state = "beginning its switch failed: the directory is either as it was or its switch has begun"
	case e.Completed:
		state = "its switch is complete (the directory opens with the new layout) but the cleanup after it stopped"
	}
	msg := fmt.Sprintf("%s: the %s stopped: %s: %v", e.Dir, e.Op, state, e.Err)
	if e.Report != "" {
		msg += "; its report is kept in " + e.Report
	}
	return msg
}

func (e *SwitchError) Unwrap() error { return e.Err }

// op is the operation r runs.
func (r *resharder) op() Op {
	switch {
	case r.upgrade:
		return OpUpgrade
	case r.undo:
		return OpUndo
	}
	return OpReshard
}

// reportNow is where the report of the switch r runs is at this moment:
// in the source, pending, or named.
func (r *resharder) reportNow(src string) string {
	if p := switchdir.ReportPath(r.fs, r.dir, src); p != "" {
		return p
	}
	if r.rep.ReportFile != "" && switchdir.FileExists(r.fs, r.rep.ReportFile) {
		return r.rep.ReportFile
	}
	return ""
}

// switchFailed wraps err, a failure after the point of no return, as a
// SwitchError that says how far the switch got.
func (r *resharder) switchFailed(err error) error {
	var se *SwitchError
	var state *SwitchStateError
	if err == nil || errors.As(err, &se) || errors.As(err, &state) {
		return err // a refusal before anything moved says so itself
	}
	e := &SwitchError{Dir: r.dir, Op: r.op(), Err: err, Report: r.reportNow(switchdir.Source(r.fs, r.dir))}
	if m, merr := meta.ReadAny(r.fs, r.dir); merr == nil && !m.Switching() && !m.Upgrading() {
		e.Completed = true
	}
	return e
}

// KeepOldFinishError is Options.KeepOld given to a run that finishes a switch
// begun without it: the old layout's record (what undo checks against)
// was not made before the point of no return, so it cannot be kept now.
type KeepOldFinishError struct {
	Dir string
	// NothingToFinish: there is no switch to finish and no count was
	// asked, so there is nothing to keep.
	NothingToFinish bool
}

func (e *KeepOldFinishError) Error() string {
	if e.NothingToFinish {
		return fmt.Sprintf("%s: no reshard is being finished here and no count was given: there is no old layout to keep; nothing was changed", e.Dir)
	}
	return fmt.Sprintf("%s: the old layout cannot be kept: the reshard being finished was started without keeping it, so its old layout was not recorded before its switch; nothing was changed", e.Dir)
}
