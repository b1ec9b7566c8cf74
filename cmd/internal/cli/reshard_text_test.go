package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// TestSwitchFailureNamesTheFinisher: every failure after a switch's point
// of no return names the state, the command that finishes it, whether
// the operation had in fact completed, and where the report is kept.
func TestSwitchFailureNamesTheFinisher(t *testing.T) {
	cause := errors.New("syncing directory /d: input/output error")
	for _, tc := range []struct {
		se         reshard.SwitchError
		code       int
		cmd, state string
	}{
		{reshard.SwitchError{Dir: "/d", Op: reshard.OpReshard, Report: "/d/reshard.new/report.json"}, ExitSwitching, "`fusee reshard /d`", "stopped before it was complete"},
		{reshard.SwitchError{Dir: "/d", Op: reshard.OpReshard, Completed: true, Report: "/d/reshard-reports/pending.json"}, ExitFailure, "`fusee reshard /d`", "is complete"},
		{reshard.SwitchError{Dir: "/d", Op: reshard.OpReshard, MaybeNotBegun: true, Report: "/d/reshard.new/report.json"}, ExitFailure, "`fusee reshard /d`", "either as it was"},
		{reshard.SwitchError{Dir: "/d", Op: reshard.OpUpgrade, Report: "/d/reshard.new/report.json"}, ExitSwitching, "`fusee upgrade /d`", "stopped before it was complete"},
		{reshard.SwitchError{Dir: "/d", Op: reshard.OpUndo, Completed: true, Report: "/d/reshard-reports/pending.json"}, ExitFailure, "`fusee reshard /d`", "is complete"},
	} {
		tc.se.Err = cause
		err := switchFailure(&tc.se)
		msg := err.Error()
		if exitCode(err) != tc.code || !strings.Contains(msg, tc.cmd) || !strings.Contains(msg, tc.state) ||
			!strings.Contains(msg, tc.se.Report) || !strings.Contains(msg, cause.Error()) {
			t.Errorf("%+v: exit %d, %q\nwant exit %d naming %s, %q, the report and the cause", tc.se, exitCode(err), msg, tc.code, tc.cmd, tc.state)
		}
	}
}

// TestNextStepsAreCommandsThatExist: the typed refusals of reshard get
// their next step here, and every command a next step names is one this
// fusee has, with flags it takes.
func TestNextStepsAreCommandsThatExist(t *testing.T) {
	cause := errors.New("input/output error")
	for _, tc := range []struct {
		err   error
		want  string // in the message
		usage bool   // exits 2, a usage error, not as the error itself would
	}{
		{&reshard.DamagedError{Dir: "/d", Op: reshard.OpReshard, What: "old shard 1 has a timer of run 9, which does not exist"}, "; run `fusee verify /d` for the full picture and restore", false},
		{&reshard.DamagedError{Dir: "/d", Op: reshard.OpUpgrade, What: "old shard 1 has a timer of run 9, which does not exist"}, "the directory is damaged; " + nextRestore, false},
		{&reshard.CheckError{Op: reshard.OpReshard, Diff: "shard 0"}, "this is a bug in fusee's reshard; please report it with the output of `fusee verify /d`", false},
		{&reshard.UndoError{Dir: "/d", Kind: reshard.UndoSwitchInterrupted, Reason: "r"}, "; nothing was changed; finish it first with `fusee reshard /d`", false},
		{&reshard.UndoError{Dir: "/d", Kind: reshard.UndoNothingKept, Reason: "r"}, "; nothing was changed; only a reshard run with --keep-old can be undone", false},
		{&reshard.UndoError{Dir: "/d", Kind: reshard.UndoKeptDamaged, Reason: "r"}, "; nothing was changed; remove the kept layout with `fusee reshard /d --discard-kept`", false},
		{&reshard.UndoError{Dir: "/d", Kind: reshard.UndoReportLost, Report: "/d/reshard-reports/r.json", Reason: "r"}, "restore /d/reshard-reports/r.json from a backup, or keep the resharded layout (remove the kept one with `fusee reshard /d --discard-kept`)", false},
		{&reshard.UndoError{Dir: "/d", Kind: reshard.UndoDirChanged, OldShards: 3, Reason: "r"}, "reshard it back instead (`fusee reshard /d 3`, after `fusee reshard /d --discard-kept`)", false},
		{&reshard.DiscardError{Dir: "/d", OldShards: 3, NewShards: 5, Err: meta.ErrSwitching}, "(from 3 to 5 shards); it must be finished first; nothing was changed; run `fusee reshard /d` to finish it", false},
		{&reshard.DiscardError{Dir: "/d", Leftover: "/d/reshard.old", Err: cause}, "input/output error; `fusee reshard /d` removes it", false},
		{&reshard.StalePlanError{Dir: "/d", Path: "p.json", Switching: true, Diff: "a reshard from 3 to 5 shards is interrupted"}, "; nothing was changed; finish it with `fusee reshard /d` first, then make a new plan", false},
		{&reshard.StalePlanError{Dir: "/d", Path: "p.json", Diff: "it has 3 shards, the plan was made for 4"}, "; nothing was changed; make a new plan and review it again", false},
		{&reshard.KeepOldFinishError{Dir: "/d"}, "so its old layout was not recorded before its switch; nothing was changed; run `fusee reshard /d` without --keep-old to finish it", false},
		{&reshard.KeepOldFinishError{Dir: "/d", NothingToFinish: true}, "there is no old layout to keep; nothing was changed; --keep-old keeps the old layout of a reshard to a new count", true},
		{&reshard.PlanMismatchError{Dir: "/d", Path: "p.json", Diff: "d"}, "; nothing was changed; make a new plan with `fusee reshard /d <shards> --dry-run -o FILE` and review it", false},
	} {
		msg := reshardError("/d", tc.err).Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%T: %q\nwant it to say %q", tc.err, msg, tc.want)
		}
		if want := exitCode(tc.err); tc.usage && exitCode(reshardError("/d", tc.err)) != ExitUsage ||
			!tc.usage && exitCode(reshardError("/d", tc.err)) != want {
			t.Errorf("%T: exit code %d", tc.err, exitCode(reshardError("/d", tc.err)))
		}
		for _, cmd := range commandsIn(msg) {
			checkCommandExists(t, cmd)
		}
	}
}

// commandsIn returns the `fusee …` commands a message names.
func commandsIn(msg string) []string {
	var cmds []string
	for i, part := range strings.Split(msg, "`") {
		if i%2 == 1 && strings.HasPrefix(part, "fusee ") {
			cmds = append(cmds, part)
		}
	}
	return cmds
}

// checkCommandExists fails unless cmd ("fusee reshard /d --undo") names
// a command of this fusee and flags it takes; placeholders (<shards>)
// stand for arguments.
func checkCommandExists(t *testing.T, cmd string) {
	t.Helper()
	args := strings.Fields(strings.TrimPrefix(cmd, "fusee "))
	root := NewRoot(newIO(nil, nil, nil, nil), "test", nil)
	c, rest, err := root.Find(args)
	if err != nil || c == root {
		t.Errorf("`%s`: no such command (%v)", cmd, err)
		return
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Errorf("`%s`: %v", cmd, err)
	}
}
