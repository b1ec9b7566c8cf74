package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// printChangeReport prints for people the report of a reshard, an undo or
// an upgrade (an upgrade's has OldLog set), as the command that made it
// prints it and as inspect --report prints it again: what was done, the
// leftovers removed, a table of counts, the first renumbered runs and
// token changes, and where the report is kept.
func printChangeReport(ios *IO, rep *reshard.Report) error {
	out := ios.Out
	fmt.Fprintln(out, styleGood.Render(reportHeadline(rep)))
	for _, c := range rep.CleanedUp {
		if rep.DryRun {
			fmt.Fprintf(out, "would remove leftover %s\n", c)
		} else {
			fmt.Fprintf(out, "removed leftover %s\n", c)
		}
	}
	if t := rep.DroppedTail; t != nil {
		fmt.Fprintln(out, styleWarn.Render(droppedTailLine(t, rep.DryRun)))
	}
	switch rep.Outcome {
	case reshard.OutcomeDone, reshard.OutcomePlanned, reshard.OutcomeFinished, reshard.OutcomeUndone:
	default:
		return nil
	}
	upgrade := rep.OldLog != 0
	if rep.ListsUnknown {
		lists := "its renumbered runs and token changes"
		if upgrade {
			lists = "its token changes" // an upgrade renumbers nothing
		}
		fmt.Fprintln(out, styleWarn.Render("this switch was begun by a fusee that kept no report: "+lists+" cannot be listed now"))
	}
	if err := ios.printTable([]string{"what", "count"}, reportRows(rep)); err != nil {
		return err
	}
	all := "--json or --report FILE"
	if upgrade {
		all = "--json" // upgrade has no --report FILE
	}
	if rep.ReportFile != "" {
		all = "`fusee inspect " + meta.ShellQuote(rep.Dir) + " --report --json`"
	}
	if err := printHead(ios, rep.Renumbered, "renumbered unfinished runs (their Ctx::key values change):",
		func(r reshard.RenumberedRun) string { return r.OldKey + "*  ->  " + r.NewKey + "*" }, all); err != nil {
		return err
	}
	if err := printHead(ios, rep.Tokens, "pending completion tokens (hand the new ones to whoever holds the old):",
		func(t reshard.TokenChange) string {
			return fmt.Sprintf("%s  ->  %s  (%s@%d)", t.Old, t.New, t.WorkflowID, t.Position)
		}, all); err != nil {
		return err
	}
	if rep.ReportFile != "" && !rep.DryRun {
		fmt.Fprintf(out, "report kept in %s (`fusee inspect %s --report` prints it again)\n", rep.ReportFile, meta.ShellQuote(rep.Dir))
	}
	return nil
}

// reportHeadline is the report's first line: what was done, or what a
// dry run would do.
func reportHeadline(rep *reshard.Report) string {
	// op, change and has word the line for a reshard or an upgrade.
	op, leftoversOf := "reshard", "reshard"
	change := fmt.Sprintf("from %d to %d shards", rep.OldShards, rep.NewShards)
	has := fmt.Sprintf("%d shards", rep.OldShards)
	done := "resharded"
	if rep.OldLog != 0 {
		op, leftoversOf, done = "upgrade", "upgrade or reshard", "upgraded"
		change = fmt.Sprintf("from log format %d to %d (%d shards)", rep.OldLog, rep.NewLog, rep.NewShards)
		has = fmt.Sprintf("log format %d", rep.NewLog)
	}
	switch {
	case rep.DryRun && rep.Outcome == reshard.OutcomeFinished:
		return fmt.Sprintf("dry run: a real run would finish the interrupted %s of %s %s, whose report follows; nothing was changed", op, rep.Dir, change)
	case rep.Undid != "" && rep.Outcome == reshard.OutcomeFinished:
		return fmt.Sprintf("finished the interrupted undo of %s: it has its kept layout of %d shards back", rep.Dir, rep.NewShards)
	}
	switch rep.Outcome {
	case reshard.OutcomeDone:
		return fmt.Sprintf("%s %s %s", done, rep.Dir, change)
	case reshard.OutcomeNothingToDo:
		return fmt.Sprintf("nothing to do: %s has %s and no %s in progress", rep.Dir, has, op)
	case reshard.OutcomeFinished:
		return fmt.Sprintf("finished the interrupted %s of %s %s", op, rep.Dir, change)
	case reshard.OutcomeCleanedUp:
		return fmt.Sprintf("removed leftovers of an earlier %s from %s; it has %s", leftoversOf, rep.Dir, has)
	case reshard.OutcomePlanned:
		return fmt.Sprintf("dry run: %s would go %s; nothing was changed", rep.Dir, change)
	case reshard.OutcomeUndone:
		return fmt.Sprintf("undone: %s has its kept layout of %d shards back", rep.Dir, rep.NewShards)
	}
	return string(rep.Outcome)
}

// reportRows are the counts of a report's table. An upgrade moves and
// renumbers nothing: its table leaves those rows out and names the new
// store generation instead (every token changes with it).
func reportRows(rep *reshard.Report) [][]string {
	c := rep.Counts
	upgrade := rep.OldLog != 0
	var states []string
	for _, s := range []string{"running", "parked", "finished", "tombstone"} {
		states = append(states, fmt.Sprintf("%d %s", c.Runs[s], s))
	}
	rows := [][]string{{"runs", strings.Join(states, ", ")}}
	if upgrade {
		rows = append(rows,
			[]string{"outbox messages", strconv.FormatInt(c.Outbox, 10)},
			[]string{"dedup entries", strconv.FormatInt(c.Dedup, 10)})
	} else {
		rows = append(rows,
			[]string{"runs moved to another shard", strconv.FormatInt(c.RunsMoved, 10)},
			[]string{"runs renumbered", fmt.Sprintf("%d (%d unfinished)", c.RunsRenumbered, rep.Renumbered.Len())},
			[]string{"references rewritten", strconv.FormatInt(c.RefsRewritten, 10)},
			[]string{"dangling references", strconv.FormatInt(c.DanglingRefs, 10)},
			[]string{"outbox messages (moved)", fmt.Sprintf("%d (%d)", c.Outbox, c.OutboxMoved)},
			[]string{"dedup entries (moved)", fmt.Sprintf("%d (%d)", c.Dedup, c.DedupMoved)})
	}
	rows = append(rows,
		[]string{"archives rewritten", strconv.FormatInt(c.Archives, 10)},
		[]string{"pending completion tokens", strconv.FormatInt(c.PendingTokens, 10)})
	if upgrade {
		rows = append(rows, []string{"new store generation", strconv.FormatUint(rep.StoreGen, 10)})
	}
	bytes := "bytes read / written"
	if rep.DryRun {
		bytes = "bytes read / the real run writes" // a dry run writes nothing
	}
	rows = append(rows, []string{bytes, reshard.HumanBytes(c.BytesRead) + " / " + reshard.HumanBytes(c.BytesWritten)})
	if rep.DryRun && rep.Outcome == reshard.OutcomePlanned {
		rows = append(rows, []string{"free space the real run needs", "about " + reshard.HumanBytes(rep.SpaceNeeded)})
	}
	if rep.Kept != "" {
		rows = append(rows, []string{"old layout kept in", rep.Kept})
	}
	for _, p := range rep.Phases {
		rows = append(rows, []string{"time: " + p.Name, fmt.Sprintf("%.2fs", p.Seconds)})
	}
	return rows
}

// reportShow is how many renumbered runs and token changes a report
// prints before saying how many more there are.
const reportShow = 20

// printHead prints the first reportShow items of a report's list l under
// title, one line each, and how many more there are; all names what lists
// them all.
func printHead[T any](ios *IO, l *reshard.List[T], title string, line func(T) string, all string) error {
	n := l.Len()
	if n == 0 {
		return nil
	}
	head, err := l.Head(reportShow)
	if err != nil {
		return err
	}
	fmt.Fprintln(ios.Out, styleHeader.Render(title))
	for _, item := range head {
		fmt.Fprintln(ios.Out, "  "+line(item))
	}
	if n > reportShow {
		fmt.Fprintf(ios.Out, "  … and %d more (%s lists them all)\n", n-reportShow, all)
	}
	return nil
}

// droppedTailLine says what a reshard dropped from the old log's end, as
// the engine's recovery drops it, and what the dropped bytes claim.
func droppedTailLine(t *reshard.DroppedTail, dryRun bool) string {
	verb := "dropped"
	if dryRun {
		verb = "would drop"
	}
	line := fmt.Sprintf("%s the old log's torn tail, as the engine's recovery drops it: %d bytes of %s from offset %d (%s); the engine stopped mid-write and never closed the log",
		verb, t.Bytes, t.File, t.Offset, t.Reason)
	var claims []string
	for _, s := range t.Shards {
		claims = append(claims, fmt.Sprintf("shard %d LSNs %d-%d", s.Shard, s.FirstLSN, s.LastLSN))
	}
	switch {
	case len(claims) > 0:
		line += fmt.Sprintf("; the bytes start batch %d, whose readable part claims %s", t.Batch, strings.Join(claims, ", "))
	case t.Batch != 0:
		line += fmt.Sprintf("; the bytes start batch %d, whose entries are unreadable", t.Batch)
	default:
		line += "; the bytes start no readable batch"
	}
	return line
}
