package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// The review workflow of `fusee reshard` (docs/operations.md): a plan
// written by a dry run (-o), applied exactly (--plan), checked after
// (--verify-plan); and the old layout kept (--keep-old) until --undo or
// its removal (--discard-kept).

// checkPlanFlags refuses combinations that say two different things.
func (o *reshardOptions) checkPlanFlags(shards int) error {
	modes := 0
	for _, on := range []bool{o.plan != "", o.verifyPlan != "", o.undo, o.discard} {
		if on {
			modes++
		}
	}
	switch {
	case modes > 1:
		return usagef("--plan, --verify-plan, --undo and --discard-kept are separate steps: give one")
	case outputFormatNames[o.output]:
		// kubectl's -o json asks for a format; here -o names the plan file,
		// and a plan of millions of runs written to ./json is no answer.
		return usagef("-o %s: -o names the plan file, not an output format; for the report as JSON say --json, for a plan file of that name say -o ./%s", o.output, o.output)
	case o.output != "" && (!o.dryRun || shards == 0 && o.plan == ""):
		return usagef("-o writes a plan: it goes with --dry-run and a shard count")
	case o.plan != "" && shards != 0:
		return usagef("--plan takes the shard count from the plan: give no count")
	case (o.verifyPlan != "" || o.undo || o.discard) && (shards != 0 || o.dryRun || o.keepOld || o.output != ""):
		return usagef("--verify-plan, --undo and --discard-kept take only the directory (and --json)")
	case o.report != "" && (o.verifyPlan != "" || o.discard):
		return usagef("--report writes a reshard's or an undo's report: --verify-plan and --discard-kept have none")
	case o.keepOld && o.dryRun:
		return usagef("--keep-old keeps what a real run replaces: a dry run replaces nothing")
	}
	return nil
}

// outputFormatNames are the -o values other tools take as an output format
// (kubectl, gh): refused as a plan file's name, which they would silently be.
var outputFormatNames = map[string]bool{"json": true, "yaml": true, "yml": true, "wide": true, "name": true, "text": true, "table": true}

// readPlanFile reads and checks the plan file at path ("" none) for dir,
// its lists spilling under --scratch past their share of --memory
// (budget). Close the plan when done.
//
// Reading a plan of many runs takes seconds (it is parsed, its lists put
// into scratch stores, its checksum computed): progress shows it as a
// phase of its own, "read plan".
func readPlanFile(ios *IO, dir, path string, opts reshardOptions, budget int64) (*reshard.Plan, error) {
	if path == "" {
		return nil, nil
	}
	prog := ios.startProgress("reshard", opts.progress, opts.quiet)
	defer prog.end()
	prog.set(progressState{phase: "read plan", unit: "files", total: 1})
	p, err := reshard.ReadPlan(vfs.Default, path, opts.scratch, budget)
	var pe *reshard.PlanFileError
	switch {
	case err == nil:
		prog.set(progressState{phase: "read plan", unit: "files", done: 1, total: 1})
	case errors.As(err, &pe) && path == opts.verifyPlan:
		return nil, withNext(err, "--verify-plan needs the plan file as the dry run wrote it")
	case errors.As(err, &pe):
		return nil, withNext(err, fmt.Sprintf("make a new plan with `fusee reshard %s <shards> --dry-run -o FILE`", meta.ShellQuote(dir)))
	}
	return p, err
}

// printPlanNotes follows the report: the runs per new shard as a chart,
// where the plan went, where the old layout is kept.
func printPlanNotes(ios *IO, opts reshardOptions, rep *reshard.Report) error {
	out := ios.Out
	if rep.Outcome != reshard.OutcomeDone && rep.Outcome != reshard.OutcomePlanned {
		return nil
	}
	printSkew(ios, "new shard", rep.NewShardRuns, rep.NewShardBytes)
	if opts.output != "" && rep.Plan != nil {
		fmt.Fprintf(out, "plan written to %s: review it, then run `fusee reshard %s --plan %s`\n",
			opts.output, meta.ShellQuote(rep.Dir), meta.ShellQuote(opts.output))
	}
	if rep.Kept != "" {
		fmt.Fprintf(out, "old layout kept in %s: `fusee reshard %s --undo` restores it until the engine writes to the directory\n",
			rep.Kept, meta.ShellQuote(rep.Dir))
	}
	return nil
}

// printSkew draws the runs of each shard as a bar, with how far the
// largest is above the mean; shard names them ("new shard"), bytes (may be
// nil) adds each one's size.
func printSkew(ios *IO, shard string, runs, bytes []int64) {
	if len(runs) == 0 {
		return
	}
	var total, most int64
	for _, n := range runs {
		total += n
		most = max(most, n)
	}
	mean := float64(total) / float64(len(runs))
	skew := 0.0
	if mean > 0 {
		skew = (float64(most)/mean - 1) * 100
	}
	fmt.Fprintln(ios.Out, styleHeader.Render(fmt.Sprintf("runs per %s (largest %.0f%% above the mean of %.1f):", shard, skew, mean)))
	const width = 40
	for j, n := range runs {
		bar := 0
		if most > 0 {
			bar = int(int64(width) * n / most)
		}
		size := ""
		if j < len(bytes) {
			size = "  " + reshard.HumanBytes(bytes[j])
		}
		fmt.Fprintf(ios.Out, "  %4d %-*s %d%s\n", j, width, strings.Repeat("#", bar), n, size)
	}
}

func runVerifyPlan(ctx context.Context, ios *IO, opts reshardOptions, dir string) error {
	budget, err := parseSize(opts.memory)
	if err != nil {
		return usagef("--memory %q: %v", opts.memory, err)
	}
	plan, err := readPlanFile(ios, dir, opts.verifyPlan, opts, budget)
	if err != nil {
		return err
	}
	defer plan.Close()
	c, err := reshard.VerifyPlan(ctx, dataFS(ctx), dir, plan, opts.scratch, budget)
	if err != nil {
		return explainDirError(vfs.Default, dir, err)
	}
	switch {
	case opts.quiet:
	case opts.json:
		if err := ios.printJSON(c); err != nil {
			return err
		}
	case c.OK():
		fmt.Fprintln(ios.Out, styleGood.Render(fmt.Sprintf("ok: %s is what plan %s said: %d shards, all %d renumbered runs at their planned numbers",
			dir, opts.verifyPlan, c.Shards, c.Renumbered)))
	default:
		fmt.Fprintf(ios.Out, "%s differs from plan %s:\n", dir, opts.verifyPlan)
		for _, d := range c.Differences {
			fmt.Fprintf(ios.Out, "  %s\n", d)
		}
	}
	if !c.OK() {
		return exitError{code: ExitFailure, err: fmt.Errorf("%s is not what plan %s said (%d differences)", dir, opts.verifyPlan, len(c.Differences))}
	}
	return nil
}

func runUndo(ctx context.Context, ios *IO, opts reshardOptions, dir string) error {
	reportOut, err := pendingOutput("--report", opts.report)
	if err != nil {
		return err
	}
	defer reportOut.abort()
	rep, err := reshard.Undo(ctx, dataFS(ctx), dir)
	if err != nil {
		var ue *reshard.UndoError
		var se *reshard.SwitchError
		if errors.As(err, &ue) || errors.As(err, &se) {
			return reshardError(dir, err)
		}
		return explainDirError(vfs.Default, dir, err)
	}
	defer rep.Close()
	if err := reportOut.commit(rep.WriteJSON); err != nil {
		return afterChange(rep, err)
	}
	if opts.quiet {
		return nil
	}
	if opts.json {
		return afterChange(rep, rep.WriteJSON(ios.Out))
	}
	if rep.Outcome == reshard.OutcomeCleanedUp {
		fmt.Fprintln(ios.Out, styleGood.Render(fmt.Sprintf("the undo of %s had finished; removed its leftovers", dir)))
		for _, c := range rep.CleanedUp {
			fmt.Fprintf(ios.Out, "removed leftover %s\n", c)
		}
		return nil
	}
	return afterChange(rep, printChangeReport(ios, rep))
}

func runDiscardKept(ctx context.Context, ios *IO, opts reshardOptions, dir string) error {
	rep, err := reshard.DiscardKept(ctx, dataFS(ctx), dir)
	var de *reshard.DiscardError
	if errors.As(err, &de) {
		return reshardError(dir, err)
	}
	if err != nil {
		return explainDirError(vfs.Default, dir, err)
	}
	switch {
	case opts.quiet:
		return nil
	case opts.json:
		return ios.printJSON(rep)
	}
	switch rep.Outcome {
	case reshard.OutcomeDiscarded:
		fmt.Fprintln(ios.Out, styleGood.Render(fmt.Sprintf("discarded the kept layout of %s: --undo is no longer possible", dir)))
	default:
		fmt.Fprintf(ios.Out, "%s keeps no old layout: nothing to discard\n", dir)
	}
	for _, c := range rep.CleanedUp {
		fmt.Fprintf(ios.Out, "removed %s\n", c)
	}
	return nil
}
