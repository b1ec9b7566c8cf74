package cli

import (
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/journal/check"
)

func init() { addCommand(newDumpCmd) }

type dumpOptions struct {
	logical  bool
	limits   checkLimits
	progress progressMode
}

func newDumpCmd(ios *IO) *cobra.Command {
	var opts dumpOptions
	cmd := &cobra.Command{
		Use:   "dump <dir>",
		Short: "Write a directory's whole state as sorted JSON lines, for diffing",
		Long: `Dump opens the data directory read-only through the engine's own recovery and
writes its whole state, one JSON object per line, sorted: every run with its
journal records (a tombstone's archived history instead), pending timers,
outbox messages (with their parent's workflow ID and send time) and receiver
dedup entries (with the workflow each message was delivered to). Each line
has a "t" member: run, rec, timer, msg, seen (and shard without --logical).

Runs are named by workflow ID and generation ("wf-17#2"); every reference
(parent, predecessor, next run, sender, caller, Ctx::key, completion token)
is rendered as the run it names, with "@<pos>" for a journal position, or
"dangling". Shard numbers, run numbers, outbox sequence numbers and the
renumbered flag sit in a "phys" member of each line, which --logical leaves
out: the logical dumps of two directories holding the same workflows are
identical byte for byte even when their shard counts differ.

Memory stays within --memory (plus the shards' store readers) whatever
the number of runs: the sorts spill to a scratch store under --scratch
beyond it. Lines are written as soon as their place in the order is known.

The directory must be closed: dump takes its lock (exit 3 when another
process holds it) and refuses an interrupted reshard (exit 4). It never
writes.`,
		Example: `  fusee dump /var/lib/engine/data --logical > before.jsonl
  diff <(fusee dump a --logical) <(fusee dump b --logical)
  fusee dump /var/lib/engine/data | jq 'select(.t == "msg")'`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			limits, err := opts.limits.options()
			if err != nil {
				return err
			}
			stop, err := opts.limits.profile()
			if err != nil {
				return err
			}
			d, err := openDir(ctx, args[0])
			if err == nil {
				// The dump streams to stdout while it runs: on a terminal
				// a bar would be drawn over its lines, so auto shows one
				// only when stdout goes elsewhere.
				mode := opts.progress
				if mode == progressAuto && ios.OutTTY {
					mode = progressNone
				}
				prog := ios.startProgress("dump", mode, false)
				limits.Progress = prog.phaseFunc("runs")
				err = d.WriteDump(ctx, ios.Data, check.DumpOptions{Physical: !opts.logical, Options: limits})
				prog.end()
				err = closeDir(ctx, d, err)
			}
			if perr := stop(); err == nil && perr != nil {
				err = perr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.logical, "logical", false, "leave out shard and run numbers (compare directories with diff)")
	opts.limits.flags(cmd)
	addProgressFlag(cmd, &opts.progress)
	return cmd
}
