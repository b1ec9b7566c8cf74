package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

func init() {
	addCommand(newReshardCmd)
	registerCodeMapper(func(err error) (int, bool) {
		var ce *reshard.CountError
		if errors.As(err, &ce) {
			return ExitUsage, true
		}
		return 0, false
	})
}

type reshardOptions struct {
	dryRun  bool
	json    bool
	quiet   bool // no report on stdout, no progress (--report FILE still written)
	report  string
	scratch string
	memory  string
	// Plans and undo (cmd_reshard_plan.go).
	output     string
	plan       string
	verifyPlan string
	keepOld    bool
	undo       bool
	discard    bool
	// Profiles (for an operator reporting a slow reshard).
	profile  profileFlags
	progress progressMode // how progress is shown on stderr
}

func newReshardCmd(ios *IO) *cobra.Command {
	var opts reshardOptions
	cmd := &cobra.Command{
		Use:   "reshard <dir> [<shards>]",
		Short: "Change a closed data directory's shard count, offline and crash-safely",
		Long: `Reshard changes the shard count of a closed local data directory. Every run
(running, parked, finished, tombstoned with its archive) moves to the shard
its workflow ID hashes to under the new count, with its whole journal; runs
are renumbered only where two would share a number; every reference to a
run is rewritten; unacknowledged outbox messages move to the sending run's
new shard and are sent again; dedup entries move with the workflow that
received them. Old shards are read through the engine's own recovery,
read-only: no timer fires, no code runs, nothing is appended.

The new shards are built and checked under <dir>/reshard.new; then
fusee.meta switches through format=reshard, the old files move to
<dir>/reshard.old, the new ones move in, and a final fusee.meta names the
new count. A crash before the switch leaves the directory as it was; after
it, run "fusee reshard <dir>" (no count) to finish. The design is in
docs/reshard.md.

With no <shards>, reshard finishes an interrupted reshard, or removes the
leftovers of an earlier attempt, or says there is nothing to do.

The shard count, --dry-run and --report come only from the command line,
never from FUSEE_* variables or a config file (a setting there is ignored
with a warning): a destructive command's target and choices must be in
front of the operator. --dry-run reads and plans everything,
prints the same report and the disk space the real run needs, and changes
nothing in the directory (its scratch space is under --scratch).

To review before changing anything: --dry-run -o PLAN writes the plan (the
directory's fingerprint, every renumbered run, token changes, per-shard
totals; schema in docs/reshard.md) atomically; --plan PLAN applies exactly
it, taking the count from it, and refuses with nothing changed if the
directory is not the one the plan was made from (the engine wrote since) or
the file is damaged or of another version; --verify-plan PLAN afterwards
checks the count and every renumbered run (exit 1 with the differences).
--keep-old keeps the old layout as <dir>/reshard.kept; --undo restores it,
through the same crash-safe switch, unless something wrote to the new
layout since (then it refuses and says why). A new reshard is refused while
a layout is kept; --discard-kept removes it, crash-safely, when it is no
longer needed.

The report names what happened (done, nothing-to-do, finished-interrupted,
cleaned-up-leftovers, planned, undone), the counts, every renumbered
unfinished run with its old and new Ctx::key prefixes and its pending
tokens, and every pending completion token with the token that now answers
it (every pending token changes: it carries the store generation). --json
prints it as one JSON object (schema in docs/reshard.md); --report FILE
also writes it there, durably (FILE's directory is checked before anything
changes). The directory keeps it too: written before the switch, it ends
in <dir>/reshard-reports (the last 10), so a run that finishes an
interrupted reshard prints the same report, and "fusee inspect <dir>
--report" prints it again.

Exit codes: 0 done or nothing to do; 1 failure (the directory is left as it
was, or finishable by a rerun, as the message says); 2 a count outside
1..1024 or bad flags; 3 the directory is in use; 4 a different reshard is
in progress (finish it first); 130 interrupted (Ctrl-C, SIGTERM): that is
only ever before the switch, so the directory is unchanged and what was
built is removed; run the same command again. A signal during the switch
(a few renames) lets it finish.`,
		Example: `  # See what a change from the current count to 16 shards would do:
  fusee reshard /var/lib/engine/data 16 --dry-run
  # Do it, keeping the report (token changes) for the application owners:
  fusee reshard /var/lib/engine/data 16 --report /root/reshard-16.json
  # Finish a reshard whose switch a crash interrupted, or remove leftovers
  # (what "fusee inspect" says to run); after Ctrl-C just run it again:
  fusee reshard /var/lib/engine/data
  # Plan, review, apply exactly that plan keeping the old layout, verify:
  fusee reshard /var/lib/engine/data 16 --dry-run -o /root/plan-16.json
  fusee reshard /var/lib/engine/data --plan /root/plan-16.json --keep-old
  fusee reshard /var/lib/engine/data --verify-plan /root/plan-16.json
  # Before the engine opens it: put the kept old layout back.
  fusee reshard /var/lib/engine/data --undo
  # Or, once satisfied with the new layout, remove the kept one:
  fusee reshard /var/lib/engine/data --discard-kept`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			shards := 0
			if len(args) == 2 {
				n, err := strconv.Atoi(args[1])
				if err != nil {
					return usagef("shard count %q: want a number from 1 to %d", args[1], meta.MaxShards)
				}
				if err := (&reshard.Options{Shards: n}).Validate(); err != nil || n == 0 {
					return usagef("shard count %d: want a number from 1 to %d", n, meta.MaxShards)
				}
				shards = n
			}
			if err := opts.checkPlanFlags(shards); err != nil {
				return err
			}
			if err := refuseGenTemp(args[0]); err != nil {
				return err
			}
			switch {
			case opts.verifyPlan != "":
				return runVerifyPlan(cmd.Context(), ios, opts, args[0])
			case opts.undo:
				return runUndo(cmd.Context(), ios, opts, args[0])
			case opts.discard:
				return runDiscardKept(cmd.Context(), ios, opts, args[0])
			}
			return runReshard(cmd.Context(), ios, opts, args[0], shards)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.dryRun, "dry-run", false, "plan and report, change nothing")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.StringVar(&opts.report, "report", "", "also write the JSON report to `FILE` (atomically, synced)")
	f.StringVar(&opts.scratch, "scratch", "", "scratch `DIR` for a dry run's plan larger than --memory, and for the report's long lists (default: the system temp directory)")
	f.StringVar(&opts.memory, "memory", defaultMemory, "memory `BUDGET` before the plan spills to a scratch store (e.g. 64MiB, 1GiB)")
	f.StringVarP(&opts.output, "output", "o", "", "with --dry-run: write the plan to `PLAN` (JSON, atomically) for review and --plan")
	f.StringVar(&opts.plan, "plan", "", "apply exactly the plan in `PLAN` (the count comes from it); refused if the directory changed since")
	f.StringVar(&opts.verifyPlan, "verify-plan", "", "check that the directory is what `PLAN` said a reshard would make (exit 1 with the differences)")
	f.BoolVar(&opts.keepOld, "keep-old", false, "keep the old layout as <dir>/reshard.kept, so --undo can restore it")
	f.BoolVar(&opts.undo, "undo", false, "restore the layout kept by --keep-old, if nothing wrote to the directory since")
	f.BoolVar(&opts.discard, "discard-kept", false, "remove the layout kept by --keep-old for good (crash-safely)")
	opts.profile.add(cmd, "the reshard")
	addQuietFlag(cmd, &opts.quiet, "print no report and no progress (--report FILE is still written); the exit code says how it went")
	addProgressFlag(cmd, &opts.progress)
	markCLIOnly(cmd, "report", "dry-run", "output", "plan", "verify-plan", "keep-old", "undo", "discard-kept")
	return cmd
}

func runReshard(ctx context.Context, ios *IO, opts reshardOptions, dir string, shards int) error {
	budget, err := parseSize(opts.memory)
	if err != nil {
		return usagef("--memory %q: %v", opts.memory, err)
	}
	if err := checkScratch(opts.scratch); err != nil {
		return err
	}
	// Every output is checked (its temporary file created) before
	// anything changes.
	reportOut, err := pendingOutput("--report", opts.report)
	if err != nil {
		return err
	}
	defer reportOut.abort()
	planOut, err := pendingOutput("-o", opts.output)
	if err != nil {
		return err
	}
	defer planOut.abort()
	plan, err := readPlanFile(ios, dir, opts.plan, opts, budget)
	if err != nil {
		return err
	}
	if plan != nil {
		defer plan.Close()
	}
	stop, err := opts.profile.start()
	if err != nil {
		return err
	}
	prog := ios.startProgress("reshard", opts.progress, opts.quiet)
	// In force until the report is printed too: printed with no limit,
	// while the run's garbage was still on the heap, a large report took
	// the release build's 10M-run 8 -> 3 to 245-264 MiB (218-223 with it).
	defer lowerHeapLimit(reshard.HeapLimit(budget))()
	rep, err := reshard.Reshard(ctx, dataFS(ctx), dir, reshard.Options{
		Shards: shards, DryRun: opts.dryRun, Scratch: opts.scratch, Memory: budget, Progress: prog.phaseFunc("shards"),
		MakePlan: opts.output != "", Plan: plan, PlanPath: opts.plan, KeepOld: opts.keepOld,
	})
	prog.end()
	if perr := stop(); err == nil && perr != nil {
		return perr
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return interrupted(dir, opts.dryRun)
		}
		return reshardError(dir, err)
	}
	defer rep.Close() // what its lists spilled, once printed
	if err := reportOut.commit(rep.WriteJSON); err != nil {
		return afterChange(rep, err)
	}
	if rep.Plan != nil {
		if err := planOut.commit(func(w io.Writer) error { return reshard.WritePlan(w, rep.Plan) }); err != nil {
			return err
		}
	}
	if opts.quiet {
		return nil
	}
	return afterChange(rep, printReport(ios, opts, rep))
}

// interrupted is the message for a reshard stopped by Ctrl-C or SIGTERM.
// Reshard checks for cancellation only before its switch (the switch is a
// few renames and always runs to its end), so the directory is the old
// one, untouched: there is nothing to finish, only the same command to
// run again. What was built in reshard.new is removed on the way out; if
// that removal failed, the message names the leftover.
func interrupted(dir string, dryRun bool) error {
	return interruptedBeforeSwitch("reshard", dir, dryRun, "its old shards, which open as before",
		fmt.Sprintf("; it is not needed: the next `fusee reshard %s` removes it, with or without a count", meta.ShellQuote(dir)),
		"; there is nothing to finish: run the same command again to reshard")
}

// interruptedBeforeSwitch is the exit-130 message of an operation (op:
// reshard, upgrade) stopped before its switch: the directory is old (as
// oldState says), and reshard.new is either removed (removedNext says
// what to do) or still there (leftoverNext says what removes it).
func interruptedBeforeSwitch(op, dir string, dryRun bool, oldState, leftoverNext, removedNext string) error {
	var msg string
	switch _, serr := os.Stat(filepath.Join(dir, reshard.NewDirName)); {
	case dryRun:
		msg = fmt.Sprintf("dry run interrupted: nothing in %s was changed; run it again for the report", dir)
	case serr == nil:
		msg = fmt.Sprintf("%s interrupted before its switch: %s is unchanged (%s), but the partly built %s is still there%s",
			op, dir, oldState, filepath.Join(dir, reshard.NewDirName), leftoverNext)
	default:
		msg = fmt.Sprintf("%s interrupted before its switch: %s is unchanged (%s) and what was built was removed%s", op, dir, oldState, removedNext)
	}
	return exitError{code: ExitCancelled, err: errors.New(msg)}
}

// printReport prints rep: --json as JSON, otherwise for people.
func printReport(ios *IO, opts reshardOptions, rep *reshard.Report) error {
	if opts.json {
		return rep.WriteJSON(ios.Out) // streamed: see Report.WriteJSON
	}
	if err := printChangeReport(ios, rep); err != nil {
		return err
	}
	return printPlanNotes(ios, opts, rep)
}

// defaultMemory is --memory's default, check.DefaultMemory as a flag
// value ("256MiB").
var defaultMemory = fmt.Sprintf("%dMiB", check.DefaultMemory>>20)

// parseSize reads a byte count: a number with an optional unit (B, KiB,
// MiB, GiB, or K, M, G as the same powers of two).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a positive size such as 256MiB or 1TiB")
	}
	return n * mult, nil
}
