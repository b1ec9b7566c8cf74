package cli

import (
	"testing"

	"github.com/fusee-dev/fusee/reshard"
)

// TestReportHeadline: one printer words the reports of reshard, undo and
// upgrade; each outcome's first line names what it did to what.
func TestReportHeadline(t *testing.T) {
	rs := reshard.Report{Dir: "d", OldShards: 3, NewShards: 5}
	up := reshard.Report{Dir: "d", OldShards: 3, NewShards: 3, OldLog: 2, NewLog: 3}
	with := func(r reshard.Report, o reshard.Outcome, dry bool, undid string) *reshard.Report {
		r.Outcome, r.DryRun, r.Undid = o, dry, undid
		return &r
	}
	for _, tc := range []struct {
		rep  *reshard.Report
		want string
	}{
		{with(rs, reshard.OutcomeDone, false, ""), "resharded d from 3 to 5 shards"},
		{with(rs, reshard.OutcomePlanned, true, ""), "dry run: d would go from 3 to 5 shards; nothing was changed"},
		{with(rs, reshard.OutcomeFinished, false, ""), "finished the interrupted reshard of d from 3 to 5 shards"},
		{with(rs, reshard.OutcomeFinished, true, ""), "dry run: a real run would finish the interrupted reshard of d from 3 to 5 shards, whose report follows; nothing was changed"},
		{with(rs, reshard.OutcomeFinished, false, "d/reshard-reports/r.json"), "finished the interrupted undo of d: it has its kept layout of 5 shards back"},
		{with(rs, reshard.OutcomeUndone, false, ""), "undone: d has its kept layout of 5 shards back"},
		{with(rs, reshard.OutcomeNothingToDo, false, ""), "nothing to do: d has 3 shards and no reshard in progress"},
		{with(rs, reshard.OutcomeCleanedUp, false, ""), "removed leftovers of an earlier reshard from d; it has 3 shards"},
		{with(up, reshard.OutcomeDone, false, ""), "upgraded d from log format 2 to 3 (3 shards)"},
		{with(up, reshard.OutcomePlanned, true, ""), "dry run: d would go from log format 2 to 3 (3 shards); nothing was changed"},
		{with(up, reshard.OutcomeFinished, false, ""), "finished the interrupted upgrade of d from log format 2 to 3 (3 shards)"},
		{with(up, reshard.OutcomeFinished, true, ""), "dry run: a real run would finish the interrupted upgrade of d from log format 2 to 3 (3 shards), whose report follows; nothing was changed"},
		{with(up, reshard.OutcomeNothingToDo, false, ""), "nothing to do: d has log format 3 and no upgrade in progress"},
		{with(up, reshard.OutcomeCleanedUp, false, ""), "removed leftovers of an earlier upgrade or reshard from d; it has log format 3"},
	} {
		if got := reportHeadline(tc.rep); got != tc.want {
			t.Errorf("%s (dry run %v, old log %d):\n got %q\nwant %q", tc.rep.Outcome, tc.rep.DryRun, tc.rep.OldLog, got, tc.want)
		}
	}
}
