package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

func init() { addCommand(newInspectCmd) }

// openDir opens a data directory read-only for inspect, verify and dump,
// which then stream it (check.Dir). It gives up with ctx's error
// (context.Canceled: exit 130) when ctx is done, as the root command's
// context is on SIGINT and SIGTERM. An error is explained in operator
// terms where it can be (dirError).
func openDir(ctx context.Context, dir string) (*check.Dir, error) {
	if err := refuseGenTemp(dir); err != nil {
		return nil, err
	}
	d, err := check.OpenDir(ctx, dataFS(ctx), dir)
	if err != nil {
		return nil, dirError(ctx, dir, err)
	}
	return d, nil
}

// dirError explains an error opening or reading dir (explainDirError),
// but ctx's own error, which stays as it is.
func dirError(ctx context.Context, dir string, err error) error {
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return cerr
	}
	return explainDirError(vfs.Default, dir, err)
}

// closeDir closes d and returns err, or the error closing it.
func closeDir(ctx context.Context, d *check.Dir, err error) error {
	if cerr := d.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return dirError(ctx, d.Path, err)
	}
	return nil
}

// refuseGenTemp refuses a gen's temporary directory (<dir>.gen-tmp-*): it
// may look complete, but it is what a killed gen left, never a data
// directory.
func refuseGenTemp(dir string) error {
	target, ok := sim.GenTemp(dir)
	if !ok {
		return nil
	}
	return &dirProblem{what: fmt.Sprintf("%s is the temporary directory of a gen of %s that was killed before it finished, not a data directory", dir, target),
		next: fmt.Sprintf("remove it (the next `fusee gen %s ...` does), and run the gen again", meta.ShellQuote(target))}
}

type inspectOptions struct {
	json   bool
	report string // --report[=NAME]: print a kept reshard report ("latest": the newest)
}

func newInspectCmd(ios *IO) *cobra.Command {
	var opts inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect <dir>",
		Short: "Summarise a data directory: shards, runs by state, log tail, outboxes",
		Long: `Inspect opens the data directory read-only through the engine's own recovery
and summarises what it holds: the format and shard count from fusee.meta, a
torn log tail recovery dropped, the shared log's size, and per shard its
LSN and checkpoint LSN, the log tail after the checkpoint (entries and
bytes), its runs by state (running, parked, finished, tombstone) and how
many a reshard renumbered, outbox messages not yet acknowledged, archived
histories, receiver dedup entries, pending timers and store size; the
oldest and newest runs by start time (workflow ID, generation, shard:run);
and the runs per shard as bars, so that skew stands out.

The directory must be closed: inspect takes its lock (exit 3 when another
process holds it). It never writes: no log append, no checkpoint, no timer
fires, nothing expires.

A directory a reshard left behind is named by its state, with the command
that finishes it:
  building     reshard.new is left from a reshard that stopped before its
               switch; the directory is unchanged and is summarised as usual;
               "fusee reshard <dir>" removes the leftover (so does the next
               reshard).
  switching    fusee.meta says format=reshard: the switch began and did not
               finish. inspect opens nothing; it says which counts the
               switch is between, where the old and new files are, and
               exits 4; "fusee reshard <dir>" finishes the switch.
  cleaning-up  reshard.old is left from a reshard that finished; the
               directory is summarised as usual; "fusee reshard <dir>"
               removes the leftover.
A layout kept by "fusee reshard --keep-old" (reshard.kept) is shown with
its size, and with the command that restores it only where that undo would
go ahead now (else why it would be refused).

Every reshard, upgrade and undo keeps its report (the same JSON as its
--json: every renumbered run and every changed completion token) in
<dir>/reshard-reports, the last 10; inspect lists them. --report prints
the latest again (--report --json: the JSON itself); --report=NAME prints
an older one, NAME being its file name in reshard-reports (they sort by
time: <UTC time>-<old>-to-<new>.json, -undo-, -upgrade-). --report reads
only the report, in any state of the directory, the switching one included.

--json prints one object with stable field names: dir, format, log_format,
shards, torn_tail (null when recovery dropped nothing), log_segments,
log_bytes, per_shard (shard, lsn, checkpoint_lsn, tail_entries, tail_bytes,
store_bytes, next_run, runs, running, parked, finished, tombstone,
renumbered, outbox, archives, archive_records, dedup_entries,
pending_timers), total (the same sums without shard, lsn, checkpoint_lsn
and next_run) and oldest_run/newest_run
(workflow_id, gen, shard, run, state, started), and reshard (state: none,
building, switching or cleaning-up; leftovers, old_shards, new_shards,
old_files, new_files and command when there is something to finish; kept:
path, old_shards, new_shards, bytes, undoing, damaged, when a reshard
with --keep-old kept the old layout). A
size that is not known is -1. While a reshard or an upgrade is switching,
--json prints only dir, format (reshard or upgrade) and reshard, and the
exit code is 4.`,
		Example: `  fusee inspect /var/lib/engine/data
  fusee inspect /var/lib/engine/data --json | jq .total
  fusee inspect /var/lib/engine/data --json | jq -r .reshard.state
  # The last reshard's report again (every changed token), and an older one:
  fusee inspect /var/lib/engine/data --report --json > /root/tokens.json
  fusee inspect /var/lib/engine/data --report=20261205T124500Z-8-to-3.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.Context(), ios, opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the summary as JSON")
	cmd.Flags().StringVar(&opts.report, "report", "", "print the latest kept reshard report, or with =`NAME` the one of that name in <dir>/reshard-reports")
	cmd.Flags().Lookup("report").NoOptDefVal = latestReport
	return cmd
}

// inspectJSON is inspect's --json object: the summary and the reshard
// state.
//
// Two of the summary's fields are reshaped here so that the object keeps
// its documented shape (docs/schema/inspect.json): torn_tail is always
// present (null when recovery dropped nothing), and total carries only the
// sums, not the per-shard fields (shard, lsn, checkpoint_lsn, next_run)
// that mean nothing for a total. The shallower fields below hide the
// embedded ones of the same JSON name (encoding/json's rule).
type inspectJSON struct {
	check.Summary
	TornTail *string         `json:"torn_tail"`
	Total    inspectTotal    `json:"total"`
	Reshard  *reshard.Status `json:"reshard"`
}

// inspectTotal is check.ShardSummary without its per-shard fields: each
// nil pointer hides the embedded field of its name and is omitted.
type inspectTotal struct {
	check.ShardSummary
	Shard         *int    `json:"shard,omitempty"`
	LSN           *uint64 `json:"lsn,omitempty"`
	CheckpointLSN *uint64 `json:"checkpoint_lsn,omitempty"`
	NextRun       *uint64 `json:"next_run,omitempty"`
}

func newInspectJSON(sum check.Summary, rs *reshard.Status) inspectJSON {
	v := inspectJSON{Summary: sum, Total: inspectTotal{ShardSummary: sum.Total}, Reshard: rs}
	if sum.TornTail != "" {
		v.TornTail = &sum.TornTail
	}
	return v
}

// switchingJSON is inspect's --json object for a directory whose switch
// is unfinished: it is not opened, so there is no summary.
type switchingJSON struct {
	Dir     string          `json:"dir"`
	Format  string          `json:"format"`
	Reshard *reshard.Status `json:"reshard"`
}

// latestReport is --report without a name: the newest kept report.
const latestReport = "latest"

func runInspect(ctx context.Context, ios *IO, opts inspectOptions, dir string) error {
	if err := refuseGenTemp(dir); err != nil {
		return err
	}
	if opts.report != "" {
		return printKeptReport(ios, opts, dir)
	}
	// The reshard state first, under the lock and without opening a
	// shard: an unfinished switch must not be opened at all.
	rs, err := reshard.ReadStatus(dataFS(ctx), dir)
	if err != nil {
		if errors.As(err, new(*meta.UpgradingError)) {
			return inspectUpgrading(ios, opts, dir, err)
		}
		return explainDirError(vfs.Default, dir, err)
	}
	if rs.State != reshard.StateNone {
		rs.Command = finishCommandFor(reshard.OpReshard, dir)
	}
	if rs.State == reshard.StateSwitching {
		// Exit 4, as every other opener of this directory: a script that
		// inspects before it starts the engine stops here, and the
		// message says what to run. A summary would have to open shards
		// that are half moved.
		if opts.json {
			if err := ios.printJSON(switchingJSON{Dir: dir, Format: meta.Switching, Reshard: rs}); err != nil {
				return err
			}
		}
		return exitError{code: ExitSwitching, err: errors.New(dir + ": reshard " + statusMessage(rs))}
	}
	if k := rs.Kept; k != nil && k.Damaged == "" && !k.Undoing {
		// Offer --undo only where it would go ahead.
		var ue *reshard.UndoError
		if err := reshard.CheckUndo(ctx, vfs.Default, dir); errors.As(err, &ue) {
			k.UndoBlocked = ue.Reason
		} else if err != nil {
			return explainDirError(vfs.Default, dir, err)
		}
	}
	d, err := openDir(ctx, dir)
	if err != nil {
		return withLeftovers(err, rs)
	}
	sum, err := d.Inspect(ctx)
	if err = closeDir(ctx, d, err); err != nil {
		return err
	}
	if opts.json {
		return ios.printJSON(newInspectJSON(sum, rs))
	}
	return printInspect(ios, &sum, rs)
}

func printInspect(ios *IO, sum *check.Summary, rs *reshard.Status) error {
	out := ios.Out
	fmt.Fprintf(out, "%s  %s\n", styleHeader.Render("directory"), sum.Dir)
	fmt.Fprintf(out, "format     %s, log format %d, %d shards\n", sum.Format, sum.LogFormat, sum.ShardCount)
	if msg := statusMessage(rs); msg != "" {
		fmt.Fprintf(out, "reshard    %s\n", styleWarn.Render(msg))
	}
	if k := rs.Kept; k != nil && k.Damaged != "" {
		fmt.Fprintf(out, "kept       %s: %s, damaged (%s): it cannot be undone; `fusee reshard %s --discard-kept` removes it\n",
			k.Path, sizeOrUnknown(k.Bytes), k.Damaged, meta.ShellQuote(sum.Dir))
	} else if k != nil && k.UndoBlocked != "" {
		fmt.Fprintf(out, "kept       %s: the old layout of %d shards (%s), kept by a reshard to %d; it cannot be undone now: %s; `fusee reshard %s --discard-kept` removes it\n",
			k.Path, k.OldShards, sizeOrUnknown(k.Bytes), k.NewShards, k.UndoBlocked, meta.ShellQuote(sum.Dir))
	} else if k != nil {
		fmt.Fprintf(out, "kept       %s: the old layout of %d shards (%s), kept by a reshard to %d; `fusee reshard %s --undo` restores it while nothing has written here since; `fusee reshard %s --discard-kept` removes it\n",
			k.Path, k.OldShards, sizeOrUnknown(k.Bytes), k.NewShards, meta.ShellQuote(sum.Dir), meta.ShellQuote(sum.Dir))
	}
	if n := len(rs.Reports); n > 0 {
		last := rs.Reports[n-1]
		fmt.Fprintf(out, "reports    %s kept in %s, the latest %s: `fusee inspect %s --report` prints it, --report=NAME an older one\n",
			plural(n, "report"), filepath.Dir(last.Path), filepath.Base(last.Path), meta.ShellQuote(sum.Dir))
	}
	if sum.LogSegments >= 0 {
		fmt.Fprintf(out, "log        %s, %s\n", plural(sum.LogSegments, "segment"), sizeOrUnknown(sum.LogBytes))
	}
	if sum.TornTail != "" {
		fmt.Fprintf(out, "torn tail  %s\n", styleWarn.Render(sum.TornTail+" (dropped: the engine stopped mid-write without closing the log)"))
	}
	fmt.Fprintf(out, "oldest     %s\n", runSummary(sum.Oldest))
	fmt.Fprintf(out, "newest     %s\n\n", runSummary(sum.Newest))
	headers := []string{"shard", "lsn", "ckpt", "tail", "tail bytes", "runs", "running", "parked", "finished", "tombstone",
		"renumbered", "outbox", "archives", "dedup", "timers", "store"}
	var rows [][]string
	row := func(name string, s check.ShardSummary, lsn bool) {
		l, c := "", ""
		if lsn {
			l, c = strconv.FormatUint(s.LSN, 10), strconv.FormatUint(s.CheckpointLSN, 10)
		}
		rows = append(rows, []string{name, l, c, countOrUnknown(s.TailEntries), sizeOrUnknown(s.TailBytes),
			strconv.Itoa(s.Runs), strconv.Itoa(s.Running), strconv.Itoa(s.Parked), strconv.Itoa(s.Finished),
			strconv.Itoa(s.Tombstone), strconv.Itoa(s.Renumbered), strconv.Itoa(s.Outbox), strconv.Itoa(s.Archives), strconv.Itoa(s.Seen),
			strconv.Itoa(s.Timers), sizeOrUnknown(s.StoreBytes)})
	}
	for _, s := range sum.Shards {
		row(strconv.Itoa(s.Shard), s, true)
	}
	row("total", sum.Total, false)
	if err := ios.printTable(headers, rows); err != nil {
		return err
	}
	if len(sum.Shards) > 1 {
		// Skew between shards stands out as bars more than as numbers.
		runs := make([]int64, len(sum.Shards))
		for i, s := range sum.Shards {
			runs[i] = int64(s.Runs)
		}
		fmt.Fprintln(ios.Out)
		printSkew(ios, "shard", runs, nil)
	}
	return nil
}

func runSummary(r *check.RunSummary) string {
	if r == nil {
		return "(no runs)"
	}
	return fmt.Sprintf("%s#%d (shard %d run %d, %s, started at virtual %s)", r.WorkflowID, r.Gen, r.Shard, r.Run, r.State, virtualTime(r.Started))
}

func countOrUnknown(n int) string {
	if n < 0 {
		return "?"
	}
	return strconv.Itoa(n)
}

// sizeOrUnknown renders a byte count for people (reshard.HumanBytes:
// 512 B, 3.2 KiB, 1.0 MiB), or "?" for an unknown one.
func sizeOrUnknown(n int64) string {
	if n < 0 {
		return "?"
	}
	return reshard.HumanBytes(n)
}

// printKeptReport prints a report the directory keeps (--report): the
// same JSON as the command that made it printed with --json, or the same
// human report.
func printKeptReport(ios *IO, opts inspectOptions, dir string) error {
	name := opts.report
	if name == latestReport {
		name = ""
	}
	rep, err := reshard.OpenReport(vfs.Default, dir, name, "", reshard.DefaultMemory)
	if err != nil {
		var nf *reshard.ReportNotFoundError
		if errors.As(err, &nf) {
			return err
		}
		return explainDirError(vfs.Default, dir, err)
	}
	defer rep.Close()
	if opts.json {
		return rep.WriteJSON(ios.Out)
	}
	return printChangeReport(ios, rep)
}

// inspectUpgrading is inspect of a directory whose upgrade's switch was
// interrupted (format=upgrade, err a *meta.UpgradingError): nothing is
// opened, --json prints dir, format and reshard (state switching, the
// command that finishes it) as for an interrupted reshard, and the exit
// code is 4 with the refusal's message.
func inspectUpgrading(ios *IO, opts inspectOptions, dir string, err error) error {
	if opts.json {
		st := &reshard.Status{State: reshard.StateSwitching, Command: finishCommandFor(reshard.OpUpgrade, dir)}
		if m, merr := meta.ReadAny(vfs.Default, dir); merr == nil {
			st.OldShards, st.NewShards = m.Shards, m.Shards
		}
		if perr := ios.printJSON(switchingJSON{Dir: dir, Format: meta.Upgrading, Reshard: st}); perr != nil {
			return perr
		}
	}
	return exitError{code: ExitSwitching, err: err}
}

// withLeftovers adds to a refusal to open dir (log format 2, which only
// upgrade opens) what an earlier reshard or upgrade left in it, which
// inspect names for a directory it can open: rs's leftovers and the
// command that removes them.
func withLeftovers(err error, rs *reshard.Status) error {
	if !errors.Is(err, meta.ErrOldLog) || rs == nil || len(rs.Leftovers) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s is left from an upgrade or reshard that stopped: the upgrade removes it first", err, strings.Join(rs.Leftovers, " and "))
}
