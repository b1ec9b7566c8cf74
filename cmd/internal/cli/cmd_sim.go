package cli

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/journal/sim"
)

func init() { addCommand(newSimCmd) }

func newSimCmd(ios *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the simulated workflow engine on a data directory",
		Long: `The simulator is a deterministic stand-in for the durable-workflow engine
(package journal/sim; docs/simulator.md). "fusee gen" makes directories with
it; "fusee sim drive" opens one as the engine would and runs it to the end.`,
		Example: `  fusee gen /tmp/data --shards 4 --runs 2000 --seed 1
  fusee sim drive /tmp/data`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSimDriveCmd(ios))
	return cmd
}

type simDriveOptions struct {
	retention   time.Duration
	json, quiet bool
	progress    progressMode
}

func newSimDriveCmd(ios *IO) *cobra.Command {
	opts := simDriveOptions{retention: time.Duration(sim.DefaultRetention) * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "drive <dir>",
		Short: "Open a data directory as the engine would and run every run to completion",
		Long: `Drive opens the data directory with the engine's recovery (checkpoint, run
stores, log tail) and ticks the simulated engine on its virtual clock: it
delivers the messages in the outboxes, fires timers, feeds the scripted
signals, updates and async completions (answered by token), and runs every
run's workflow code until every run has finished and every outbox is
empty. Then it checkpoints and closes the directory and prints how the
runs ended.

The scripted workloads are finite (bounded retries, deadlines on every
wait, counted continue-as-new chains and restarts), so drive terminates.
It fails if a run is left waiting with nothing due.

The directory must be closed: drive takes its lock (exit 3 when another
process holds it) and refuses an interrupted reshard (exit 4). It writes
to the directory: log batches and checkpoints. Its pending events spill
to a scratch store next to the directory (<dir>.events-<random>), removed
when drive ends; the next drive of the directory removes one a killed drive
left, and says so.`,
		Example: `  fusee gen /tmp/data --shards 3 --runs 500 && fusee sim drive /tmp/data
  fusee sim drive /tmp/data --json | jq .census.statuses`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.retention < time.Millisecond {
				return usagef("--retention %s: want at least 1ms", opts.retention)
			}
			return runSimDrive(cmd, ios, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.retention, "retention", opts.retention, "how long finished runs are kept before their tombstone (virtual time)")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	addQuietFlag(cmd, &opts.quiet, "print no report and no progress (errors still go to stderr)")
	addProgressFlag(cmd, &opts.progress)
	return cmd
}

func runSimDrive(cmd *cobra.Command, ios *IO, opts simDriveOptions, dir string) error {
	if err := refuseGenTemp(dir); err != nil {
		return err
	}
	o := sim.DriveOptions{Config: sim.Config{Retention: opts.retention.Milliseconds()}, Removed: func(path string) {
		ios.warnf("removed %s: an earlier drive of %s was killed before it finished and left it", path, dir)
	}}
	prog := ios.startProgress("sim drive", opts.progress, opts.quiet)
	o.Progress = simProgress(prog, func(p sim.Progress) progressState {
		if p.Phase != "" {
			return simPhaseState(p)
		}
		return progressState{phase: "run", unit: "batches", done: int64(p.Batches),
			note: fmt.Sprintf("virtual %s, %d runs started by this drive", virtualTime(p.Now), p.Started)}
	})
	rep, err := sim.Drive(cmd.Context(), dataFS(cmd.Context()), dir, o)
	prog.end()
	if err != nil {
		return explainDirError(vfs.Default, dir, err)
	}
	if opts.quiet {
		return nil
	}
	if opts.json {
		return ios.printJSON(newDriveJSON(rep))
	}
	c := rep.Census
	// Every run has ended, finished or (its retention over) tombstoned:
	// the table under this line says how many of each.
	fmt.Fprintf(ios.Out, "drove %s until every run ended: %d runs on %d shards, virtual %s to %s\n",
		rep.Dir, c.Runs, rep.Shards, virtualTime(rep.From), virtualTime(rep.Now))
	return printCensus(ios, c)
}

// simProgress turns the simulator's checkpoint reports into prog's
// states; nil (no callback at all) when prog shows nothing.
func simProgress(prog *progress, state func(sim.Progress) progressState) func(sim.Progress) {
	if prog == nil || prog.mode == progressNone {
		return nil
	}
	return func(p sim.Progress) { prog.set(state(p)) }
}

// driveJSON is sim drive's --json object (docs/schema/sim-drive.json): the
// report with its recovery in the snake_case names of fusee's other JSON
// (journal.RecoveryReport has no JSON names of its own). The shallower
// Recovery hides the embedded one.
type driveJSON struct {
	*sim.DriveReport
	Recovery *recoveryJSON `json:"recovery,omitempty"`
}

type recoveryJSON struct {
	Shards   []shardRecoveryJSON `json:"shards"`
	TornTail *string             `json:"torn_tail"` // null when nothing was dropped
	LogFrom  positionJSON        `json:"log_from"`
	LogEnd   positionJSON        `json:"log_end"`
	Batches  int                 `json:"batches"`
}

type shardRecoveryJSON struct {
	Shard         int    `json:"shard"`
	CheckpointLSN uint64 `json:"checkpoint_lsn"`
	Replayed      int    `json:"replayed"`
	LSN           uint64 `json:"lsn"`
	Skipped       int    `json:"skipped"`
}

type positionJSON struct {
	Segment uint64 `json:"segment"`
	Offset  int64  `json:"offset"`
}

func newDriveJSON(rep *sim.DriveReport) driveJSON {
	v := driveJSON{DriveReport: rep}
	if r := rep.Recovery; r != nil {
		v.Recovery = &recoveryJSON{Shards: []shardRecoveryJSON{}, Batches: r.Batches,
			LogFrom: positionJSON{r.LogFrom.Segment, r.LogFrom.Offset}, LogEnd: positionJSON{r.LogEnd.Segment, r.LogEnd.Offset}}
		if r.TornTail != "" {
			v.Recovery.TornTail = &r.TornTail
		}
		for _, s := range r.Shards {
			v.Recovery.Shards = append(v.Recovery.Shards, shardRecoveryJSON(s))
		}
	}
	return v
}

// simPhaseState is a gen's or drive's phase after its engine ran (the
// census of what the directory holds), counted in shards.
func simPhaseState(p sim.Progress) progressState {
	return progressState{phase: p.Phase, unit: "shards", done: int64(p.Done), total: int64(p.Total)}
}
