package reshard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/reshard"
)

// stoppedAt reshards a copy of c's directory with opts and stops it at
// step, as a crash there would; it returns the directory.
func stoppedAt(t *testing.T, c *crashCase, step string, opts reshard.Options) *vfs.MemFS {
	t.Helper()
	fs := c.fresh()
	reshard.SetTestHook(func(s string) error {
		if s == step {
			return errors.New("stopped at " + s)
		}
		return nil
	})
	defer reshard.SetTestHook(nil)
	if _, err := reshard.Reshard(context.Background(), fs, memDir, opts); err == nil {
		t.Fatalf("the reshard did not stop at %s", step)
	}
	return fs
}

// TestFinishingRunOptions: a dry run of a finishing run says what the
// real one would do (the interrupted reshard's own report) and changes
// nothing; --keep-old given to a run that finishes a reshard started
// without it is refused, nothing changed, and a reshard started with it
// keeps its old layout whether the finishing run says so or not.
func TestFinishingRunOptions(t *testing.T) {
	c := newCrashCase(t, 3, 5, 60, 31, 0)
	ctx := context.Background()

	fs := stoppedAt(t, c, "new-wal-in", reshard.Options{Shards: 5})
	snap := tree(t, fs)
	rep, err := reshard.Reshard(ctx, fs, memDir, reshard.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != reshard.OutcomeFinished || !rep.DryRun {
		t.Errorf("dry run of a finishing run: outcome %s, dry run %v", rep.Outcome, rep.DryRun)
	}
	if err := c.sameLists(rep, "the dry run of the finishing run"); err != nil {
		t.Error(err)
	}
	rep.Close()
	if got := tree(t, fs); got != snap {
		t.Fatalf("the dry run changed the directory:\n%s\nwas\n%s", got, snap)
	}

	_, err = reshard.Reshard(ctx, fs, memDir, reshard.Options{KeepOld: true})
	var ke *reshard.KeepOldFinishError
	if !errors.As(err, &ke) || ke.NothingToFinish {
		t.Fatalf("--keep-old finishing a reshard begun without it: %v, want a KeepOldFinishError", err)
	}
	if got := tree(t, fs); got != snap {
		t.Fatalf("the refusal changed the directory")
	}

	fs = stoppedAt(t, c, "new-shards-in", reshard.Options{Shards: 5, KeepOld: true})
	rep, err = reshard.Reshard(ctx, fs, memDir, reshard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if rep.Kept == "" || !fileExists(fs, fs.PathJoin(memDir, reshard.KeptDirName)) {
		t.Errorf("a reshard begun with --keep-old, finished without it: kept %q", rep.Kept)
	}
}

// TestSwitchErrors: a failure after the point of no return is a
// SwitchError that says how far the switch got and where the report is
// (the command layer names `fusee reshard <dir>` from it).
func TestSwitchErrors(t *testing.T) {
	c := newCrashCase(t, 3, 5, 60, 32, 0)
	for _, tc := range []struct {
		step      string
		completed bool
		where     string
	}{
		{"meta-switching", false, "reshard.new/report.json"},
		{"old-shards-aside", false, "reshard.new/report.json"},
		{"report-carried", false, "reshard-reports/pending.json"},
		{"meta-final", true, "reshard-reports/pending.json"},
		{"report-named", true, "-to-5.json"},
	} {
		fs := c.fresh()
		reshard.SetTestHook(func(s string) error {
			if s == tc.step {
				return errors.New("EIO")
			}
			return nil
		})
		_, err := reshard.Reshard(context.Background(), fs, memDir, reshard.Options{Shards: 5})
		reshard.SetTestHook(nil)
		var se *reshard.SwitchError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a SwitchError", tc.step, err)
			continue
		}
		if se.Completed != tc.completed || !strings.HasSuffix(se.Report, tc.where) || !fileExists(fs, se.Report) {
			t.Errorf("%s: completed %v, report %q; want %v, ...%s", tc.step, se.Completed, se.Report, tc.completed, tc.where)
		}
	}
}

// TestReportRetention: reshard-reports keeps the last KeepReports
// reports, the newest by name, and never the one a kept layout needs.
func TestReportRetention(t *testing.T) {
	c := newCrashCase(t, 2, 3, 20, 33, 0)
	fs := c.fresh()
	ctx := context.Background()
	counts := []int{}
	for i := range reshard.KeepReports + 3 {
		n := 3 + i%2
		opts := reshard.Options{Shards: n}
		if i == 0 {
			opts.KeepOld = true // kept: its report must survive the pruning
		}
		rep, err := reshard.Reshard(ctx, fs, memDir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := reshard.DiscardKept(ctx, fs, memDir); err != nil {
				t.Fatal(err)
			}
		}
		rep.Close()
		counts = append(counts, n)
	}
	list, err := reshard.ListReports(fs, memDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != reshard.KeepReports {
		t.Fatalf("%d reports kept, want %d", len(list), reshard.KeepReports)
	}
	latest, err := reshard.OpenReport(fs, memDir, "", "", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer latest.Close()
	last := counts[len(counts)-1]
	if latest.NewShards != last || !strings.HasSuffix(latest.ReportFile, fmt.Sprintf("-to-%d.json", last)) {
		t.Errorf("the latest report goes to %d shards (%s), want %d", latest.NewShards, latest.ReportFile, last)
	}
}

// TestSwitchOrder: the switch moves every old component aside before any
// new one moves in (seed 004's order), carries the report before the
// final fusee.meta and names it last.
func TestSwitchOrder(t *testing.T) {
	c := newCrashCase(t, 3, 5, 30, 34, 0)
	var steps []string
	reshard.SetTestHook(func(s string) error {
		steps = append(steps, s)
		return nil
	})
	defer reshard.SetTestHook(nil)
	rep, err := reshard.Reshard(context.Background(), c.fresh(), memDir, reshard.Options{Shards: 5})
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	got := strings.Join(steps, " ")
	want := "new-checked before-switch meta-switching old-wal-aside old-shards-aside new-wal-in new-shards-in report-carried meta-final report-named"
	if got != want {
		t.Errorf("steps %s\nwant %s", got, want)
	}
}
