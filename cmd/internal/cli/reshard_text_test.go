package cli

import (
	"errors"
	"strings"
	"testing"

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
