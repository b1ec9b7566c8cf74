package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

func init() { addCommand(newUpgradeCmd) }

type upgradeOptions struct {
	dryRun   bool
	json     bool
	scratch  string
	memory   string
	progress progressMode
	quiet    bool // no report on stdout, no progress
}

func newUpgradeCmd(ios *IO) *cobra.Command {
	var opts upgradeOptions
	cmd := &cobra.Command{
		Use:   "upgrade <dir>",
		Short: "Convert a closed data directory from log format 2 (a log per shard) to format 3 (one shared log)",
		Long: `Upgrade converts a closed local data directory from log format 2, where
each shard has its own log in shards/NNNN/log, to log format 3, one
write-ahead log shared by every shard in wal/. The shard count does not
change and no run moves or is renumbered. Each shard is read through the
engine's own recovery (its store and the tail of its log), read-only; a
new store is built for it at LSN 0 beside a new, empty shared log, one
store generation newer, so every pending completion token changes (the
report lists each with the token that now answers it).

It goes through the same steps as a reshard: the new shards are built and
checked under <dir>/reshard.new; fusee.meta then says format=upgrade (from
here nothing but "fusee upgrade <dir>" opens the directory: the new stores
are at LSN 0 and the old ones belong to the old logs, so neither half may
be opened alone); the old files move to <dir>/reshard.old, the new ones
move in, and a final fusee.meta says log=3. A crash before the switch
leaves the directory as it was; after it, run "fusee upgrade <dir>" again
to finish. Running it again is always safe: it finishes an interrupted
upgrade, removes leftovers of an earlier one, or says there is nothing to
do. The steps and what to do after each kind of failure are in
docs/operations.md.

--dry-run reads and checks everything, prints the same report and the disk
space the real run needs, and changes nothing in the directory. --json
prints the report as one JSON object (the reshard report's schema, with
old_log and new_log). --dry-run comes only from the command line.

Exit codes: 0 done or nothing to do; 1 failure (the directory is left as it
was, or finishable by a rerun, as the message says); 2 bad flags; 3 the
directory is in use; 4 a reshard was interrupted (finish it with the
command the message names first); 130 interrupted (Ctrl-C, SIGTERM), only
ever before the switch: the directory is unchanged.`,
		Example: `  # See what the upgrade would do, and the free space it needs:
  fusee upgrade /var/lib/engine/data --dry-run
  # Do it (the engine stopped), keeping the report for the token holders:
  fusee upgrade /var/lib/engine/data --json > /root/upgrade.json
  # After a crash or an error, the same command finishes or cleans up:
  fusee upgrade /var/lib/engine/data`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUpgrade(cmd.Context(), ios, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.dryRun, "dry-run", false, "read and check everything, change nothing")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	f.StringVar(&opts.scratch, "scratch", "", "scratch `DIR` for a dry run's plan larger than --memory, and for the report's long lists (default: the system temp directory)")
	f.StringVar(&opts.memory, "memory", defaultMemory, "memory `BUDGET` before the plan spills to a scratch store (e.g. 64MiB, 1GiB)")
	addQuietFlag(cmd, &opts.quiet, "print no report and no progress; the exit code says how it went")
	addProgressFlag(cmd, &opts.progress)
	markCLIOnly(cmd, "dry-run")
	return cmd
}

func runUpgrade(ctx context.Context, ios *IO, opts upgradeOptions, dir string) error {
	budget, err := parseSize(opts.memory)
	if err != nil {
		return usagef("--memory %q: %v", opts.memory, err)
	}
	prog := ios.startProgress("upgrade", opts.progress, opts.quiet)
	rep, err := reshard.Upgrade(ctx, dataFS(ctx), dir, reshard.UpgradeOptions{
		DryRun: opts.dryRun, Scratch: opts.scratch, Memory: budget, Progress: prog.phaseFunc("shards"),
	})
	prog.end()
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return upgradeInterrupted(dir, opts.dryRun)
		}
		return reshardError(dir, err)
	}
	defer rep.Close() // what its lists spilled, once printed
	if opts.quiet {
		return nil
	}
	if opts.json {
		return afterChange(rep, rep.WriteJSON(ios.Out)) // streamed: see Report.WriteJSON
	}
	return afterChange(rep, printChangeReport(ios, rep))
}

// upgradeInterrupted is the message for an upgrade stopped by Ctrl-C or
// SIGTERM: as for a reshard, only ever before its switch.
func upgradeInterrupted(dir string, dryRun bool) error {
	return interruptedBeforeSwitch("upgrade", dir, dryRun, "log format 2, which opens as before",
		fmt.Sprintf("; the next `fusee upgrade %s` removes it", meta.ShellQuote(dir)),
		"; run the same command again to upgrade")
}
