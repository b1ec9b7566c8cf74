package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/meta"
)

func init() { addCommand(newVerifyCmd) }

type verifyOptions struct {
	json     bool
	quiet    bool
	limits   checkLimits
	progress progressMode
}

// checkLimits are verify's and dump's --memory and --scratch, as
// reshard's, and their --cpuprofile and --memprofile.
type checkLimits struct {
	memory, scratch string
	prof            profileFlags
}

func (l *checkLimits) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&l.memory, "memory", defaultMemory, "memory `BUDGET` for sorts and joins before they spill to a scratch store (e.g. 64MiB, 1GiB)")
	cmd.Flags().StringVar(&l.scratch, "scratch", "", "scratch `DIR` for what outgrows --memory (default: the system temp directory)")
	l.prof.add(cmd, "the "+cmd.Name())
}

// profile starts the profiles the flags ask for; the returned function
// stops them and writes them.
func (l *checkLimits) profile() (func() error, error) {
	return l.prof.start()
}

func (l *checkLimits) options() (check.Options, error) {
	budget, err := parseSize(l.memory)
	if err != nil {
		return check.Options{}, usagef("--memory %q: %v", l.memory, err)
	}
	return check.Options{Memory: budget, Scratch: l.scratch}, nil
}

func newVerifyCmd(ios *IO) *cobra.Command {
	var opts verifyOptions
	cmd := &cobra.Command{
		Use:   "verify <dir>",
		Short: "Check a data directory's consistency and list every finding",
		Long: `Verify opens the data directory read-only through the engine's own recovery
and checks everything it holds against every rule the engine relies on:
shard placement (each run, and each receiver dedup entry by the workflow it
was delivered to, on the shard its workflow ID hashes to), run
numbers, the ID index and generations, journal shape and run states, every
reference between runs (parents, predecessors, next runs, senders, update
callers, Ctx::key values, completion tokens), pending timers and outbox
messages regenerated from the journals (every field, the parent's workflow
ID and the send time included), message IDs, and checkpoints
against the log. It reports every finding, not only the first.

Each finding has a stable kind, a severity, the shard and run, a detail
and a hint. Lines read

  shard 3 run 17: <kind>: <detail> (<hint>)

Severity info (ref-dangling: a reference to a run whose retention ended;
torn-tail: a never-acknowledged write recovery dropped) is printed but is
not a problem. A directory that cannot be read (missing, empty, a file, a
bad fusee.meta, a missing or damaged store or log) is one finding,
unreadable, whose detail names what is wrong and whose hint is the next
step; nothing else is checked.

Exit 0 when there is no error or warning ("ok: N shards, M runs, no
findings"), 1 when there is any, after listing them all. --json prints JSON
lines: {"type":"finding","kind","severity","shard","run","detail","hint"}
per finding, then {"type":"summary","ok","unreadable","shards","runs",
"errors","warnings","info"}.

Memory stays within --memory (plus the shards' store readers) whatever
the number of runs: the joins spill to a scratch store under --scratch
beyond it.

The directory must be closed: verify takes its lock (exit 3 when another
process holds it) and refuses an interrupted reshard (exit 4). It never
writes: no log append, no checkpoint, no timer fires, nothing expires.`,
		Example: `  fusee verify /var/lib/engine/data
  fusee verify /var/lib/engine/data --json | jq -c 'select(.type == "finding")'`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.Context(), ios, opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print findings and the summary as JSON lines")
	opts.limits.flags(cmd)
	addQuietFlag(cmd, &opts.quiet, "print nothing, progress included; the exit code says whether there are findings")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

type verifySummary struct {
	Type       string `json:"type"`
	OK         bool   `json:"ok"`
	Unreadable bool   `json:"unreadable"` // the directory could not be read: nothing was checked
	Shards     int    `json:"shards"`
	Runs       int    `json:"runs"`
	Errors     int    `json:"errors"`
	Warnings   int    `json:"warnings"`
	Info       int    `json:"info"`
}

// unreadableFinding is the one finding for a directory that cannot be
// read: what is wrong as the detail, the next step as the hint.
func unreadableFinding(err error) check.Finding {
	f := check.UnreadableFinding(err)
	var dp *dirProblem
	if errors.As(err, &dp) {
		f.Detail = dp.what
		if dp.next != "" {
			f.Hint = dp.next
		}
	}
	return f
}

type verifyFinding struct {
	Type string `json:"type"`
	check.Finding
}

func runVerify(ctx context.Context, ios *IO, opts verifyOptions, dir string) (rerr error) {
	limits, err := opts.limits.options()
	if err != nil {
		return err
	}
	stop, err := opts.limits.profile()
	if err != nil {
		return err
	}
	defer func() {
		if perr := stop(); rerr == nil && perr != nil {
			rerr = perr
		}
	}()
	prog := ios.startProgress("verify", opts.progress, opts.quiet)
	limits.Progress = prog.phaseFunc("runs")
	sum := verifySummary{Type: "summary"}
	n := 0
	emit := func(f check.Finding) error {
		if n == 0 {
			prog.end() // the findings come after the pass, on a clean line
		}
		n++
		switch f.Severity {
		case check.SeverityError:
			sum.Errors++
		case check.SeverityWarning:
			sum.Warnings++
		default:
			sum.Info++
		}
		switch {
		case opts.quiet:
			return nil
		case opts.json:
			return ios.printJSONLine(verifyFinding{"finding", f})
		}
		printFinding(ios, f)
		return nil
	}
	// Findings come once every shard is checked: an error reading a store
	// stops verify before any is printed.
	d, err := openDir(ctx, dir)
	if err == nil {
		sum.Shards = d.ShardCount
		sum.Runs, err = d.Verify(ctx, limits, emit)
		prog.end()
		err = closeDir(ctx, d, err)
		if err == nil {
			for _, f := range check.ExtraStoreFindings(vfs.Default, dir, sum.Shards) {
				if err = emit(f); err != nil {
					break
				}
			}
		}
	}
	switch {
	case err == nil:
	case refusal(err) || ranOut(err) || ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	default:
		if n > 0 {
			return err // a scratch store failed while the findings were printed
		}
		sum = verifySummary{Type: "summary", Unreadable: true}
		if err := emit(unreadableFinding(err)); err != nil {
			return err
		}
	}
	sum.OK = sum.Errors == 0 && sum.Warnings == 0
	switch {
	case opts.quiet:
	case opts.json:
		if err := ios.printJSONLine(sum); err != nil {
			return err
		}
	default:
		printVerifySummary(ios, n, &sum)
	}
	if !sum.OK {
		return exitSilently(ExitFailure, "findings")
	}
	return nil
}

// ranOut reports whether err is the command running out of open files or
// scratch space (explainResource): the directory is not unreadable.
func ranOut(err error) bool {
	var dp *dirProblem
	return errors.As(err, &dp) && dp.outOf
}

// refusal reports whether err is opening being refused (in use, an
// interrupted reshard, an old log) rather than a directory that cannot be
// read: those keep their own messages and exit codes.
func refusal(err error) bool {
	return errors.Is(err, meta.ErrInUse) || errors.Is(err, meta.ErrSwitching) || errors.Is(err, meta.ErrOldLog)
}

func printFinding(ios *IO, f check.Finding) {
	kind := string(f.Kind)
	switch f.Severity {
	case check.SeverityError:
		kind = styleBad.Render(kind)
	case check.SeverityWarning:
		kind = styleWarn.Render(kind)
	default:
		kind = styleDim.Render(kind)
	}
	fmt.Fprintf(ios.Out, "%s: %s: %s (%s)\n", f.Where(), kind, cutLongTokens(f.Detail), f.Hint)
}

// printVerifySummary prints the line after the n findings.
func printVerifySummary(ios *IO, n int, sum *verifySummary) {
	counts := fmt.Sprintf("%s, %s, %d info", plural(sum.Errors, "error"), plural(sum.Warnings, "warning"), sum.Info)
	switch {
	case sum.Unreadable:
		fmt.Fprintln(ios.Out, styleBad.Render("unreadable: "+counts+"; nothing else was checked"))
	case n == 0:
		fmt.Fprintln(ios.Out, styleGood.Render(fmt.Sprintf("ok: %s, %s, no findings", plural(sum.Shards, "shard"), plural(sum.Runs, "run"))))
	case sum.OK:
		fmt.Fprintln(ios.Out, styleGood.Render(fmt.Sprintf("ok: %s, %s, no problems (%d info)", plural(sum.Shards, "shard"), plural(sum.Runs, "run"), sum.Info)))
	default:
		fmt.Fprintln(ios.Out, styleBad.Render(fmt.Sprintf("%s, %s: %s", plural(sum.Shards, "shard"), plural(sum.Runs, "run"), counts)))
	}
}

// plural is "1 error", "2 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
