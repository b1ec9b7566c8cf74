package cli

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/meta"
)

func init() { addCommand(newGenCmd) }

type genOptions struct {
	shards, runs int
	seed         uint64
	finishedFrac float64
	retention    time.Duration
	log          int
	json, quiet  bool
	progress     progressMode
	profile      profileFlags
}

func newGenCmd(ios *IO) *cobra.Command {
	opts := genOptions{finishedFrac: sim.DefaultFinishedFrac, retention: time.Duration(sim.DefaultRetention) * time.Millisecond, seed: 1}
	cmd := &cobra.Command{
		Use:   "gen <dir> --shards N --runs M [--seed S] [--finished-frac F] [--retention DUR] [--log 2|3]",
		Short: "Generate a data directory with M workflow runs stopped mid-flight (simulated engine)",
		Long: `Gen creates a data directory and fills it by running a deterministic
simulated durable-workflow engine (package journal/sim; docs/simulator.md)
on a virtual clock until M runs exist, then stops it the way a crash
would: a few batches after its last checkpoint, without checkpointing.

The directory then holds a realistic mix: runs in memory at the last
checkpoint (running), suspended runs with timers (parked), finished runs,
tombstones whose retention ended (history archived), messages between
shards not yet acknowledged (some already seen by their receiver), and a
log tail that recovery replays. Every record kind, message kind, origin,
status and reference kind occurs.

The same seed gives the same logical content (what "fusee dump --logical"
prints), whatever the shard count: gen the same seed with 3 and with 8
shards and the two directories hold the same runs. The same flags also
write the same bytes where the format is ours: fusee.meta and the shared
log are identical (the log ID is derived from the flags), and the shard
stores hold the same keys and values; pebble's own files inside the
stores are not byte-identical (its MANIFEST records wall-clock times).

--finished-frac is about the share of runs finished or tombstoned when gen
stops (reachable: about 0.45 to 0.98). --retention is how long finished
runs are kept before their tombstone, in virtual time.

--log 2 writes the older log format 2 (a log per shard, shards/NNNN/log,
no wal/) with the same logical content: each shard's store at its last
checkpoint and the entries after it in the shard's own log. Only
"fusee upgrade" reads such a directory; use it to try or test an upgrade.

<dir> must not exist or be empty. Gen writes without syncing each batch and
syncs everything at the end. It builds the directory under a temporary
sibling name (<dir>.gen-tmp-<random>, its pending events spilled to
<dir>.gen-tmp-<random>.events) and renames it to <dir> only once it is
complete and synced: an interrupted or failed gen removes both and leaves
no <dir>. Only a gen killed outright (kill -9, a crash) leaves the
temporary directory behind: the next gen of the same <dir> removes it and
says so, and inspect, verify, dump, sim drive and reshard refuse it.
Gen's memory does not grow with --runs: the engine keeps only the runs it
is working on in memory and reads the others back from the shard stores.`,
		Example: `  fusee gen /tmp/data --shards 3 --runs 2000 --seed 7
  fusee gen /tmp/old --shards 3 --runs 2000 --log 2   # then: fusee upgrade /tmp/old
  fusee gen /tmp/big --shards 16 --runs 1000000 --seed 1 --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("shards") {
				return usagef("--shards is required: the shard count of the new directory (1..%d)", meta.MaxShards)
			}
			if opts.shards < 1 || opts.shards > meta.MaxShards {
				return usagef("--shards %d: want a shard count in 1..%d", opts.shards, meta.MaxShards)
			}
			if !cmd.Flags().Changed("runs") {
				return usagef("--runs is required: how many workflow runs to generate (at least 1)")
			}
			if opts.runs < 1 {
				return usagef("--runs %d: want a run count of at least 1", opts.runs)
			}
			if opts.finishedFrac <= 0 || opts.finishedFrac > 1 {
				return usagef("--finished-frac %g: want a share in (0, 1]", opts.finishedFrac)
			}
			if opts.retention < time.Millisecond {
				return usagef("--retention %s: want at least 1ms", opts.retention)
			}
			if opts.log != meta.LogShared && opts.log != meta.LogPerShard {
				return usagef("--log %d: want %d (one shared log) or %d (the older log per shard)", opts.log, meta.LogShared, meta.LogPerShard)
			}
			if fi, err := os.Stat(args[0]); err == nil && !fi.IsDir() {
				return fmt.Errorf("%s is a file: gen creates a new data directory; give a path that does not exist or an empty directory", args[0])
			}
			return runGen(cmd, ios, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.shards, "shards", 0, "shard count of the new directory")
	f.IntVar(&opts.runs, "runs", 0, "workflow runs in the directory when gen stops")
	f.Uint64Var(&opts.seed, "seed", opts.seed, "workload seed")
	f.Float64Var(&opts.finishedFrac, "finished-frac", opts.finishedFrac, "about the share of runs finished when gen stops")
	f.DurationVar(&opts.retention, "retention", opts.retention, "how long finished runs are kept before their tombstone (virtual time)")
	f.IntVar(&opts.log, "log", meta.LogShared, "log format of the new directory: 3, or 2 (a log per shard, for trying fusee upgrade)")
	f.BoolVar(&opts.json, "json", false, "print the report as JSON")
	addQuietFlag(cmd, &opts.quiet, "print no report and no progress (errors and warnings still go to stderr)")
	addProgressFlag(cmd, &opts.progress)
	opts.profile.add(cmd, "the gen")
	return cmd
}

func runGen(cmd *cobra.Command, ios *IO, opts genOptions, dir string) error {
	removed, rmErr := sim.RemoveStaleGenTemps(vfs.Default, dir)
	for _, path := range removed {
		ios.warnf("removed %s: an earlier gen of %s was killed before it finished and left it", path, dir)
	}
	if rmErr != nil {
		return rmErr
	}
	o := sim.GenOptions{Shards: opts.shards, Runs: opts.runs, Seed: opts.seed, FinishedFrac: opts.finishedFrac, Log: opts.log,
		Config: sim.Config{Retention: opts.retention.Milliseconds()}, NoCensus: opts.quiet}
	prog := ios.startProgress("gen", opts.progress, opts.quiet)
	state := func(p sim.Progress) progressState {
		if p.Phase != "" {
			return simPhaseState(p)
		}
		return progressState{phase: "generate", unit: "runs", done: int64(p.Started), total: int64(opts.runs), note: "virtual " + virtualTime(p.Now)}
	}
	o.Progress = simProgress(prog, state)
	defer genGC(opts.runs)()
	stop, err := opts.profile.start()
	if err != nil {
		return err
	}
	rep, err := sim.Generate(cmd.Context(), dataFS(cmd.Context()), dir, o)
	prog.end()
	if perr := stop(); err == nil && perr != nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if opts.quiet {
		return nil
	}
	if opts.json {
		return ios.printJSON(rep)
	}
	c := rep.Census
	fmt.Fprintf(ios.Out, "generated %s: %d runs on %d shards (seed %d), stopped at virtual %s\n",
		rep.Dir, c.Runs, rep.Shards, rep.Seed, virtualTime(rep.Now))
	if err := printCensus(ios, c); err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "log: %d batches, %d entries, %d checkpoints; the last %d rounds are a log tail after the last checkpoint\n",
		rep.Stats.Batches, rep.Stats.Ops, rep.Stats.Checkpoints, rep.TailRounds)
	if rep.Log == meta.LogPerShard {
		fmt.Fprintf(ios.Out, "log format 2 (a log per shard): only `fusee upgrade %s` opens it\n", meta.ShellQuote(rep.Dir))
	}
	return nil
}

// printCensus prints runs by state and status and the outboxes.
func printCensus(ios *IO, c *sim.Census) error {
	rows := [][]string{}
	for _, st := range []string{"running", "parked", "finished", "tombstone"} {
		rows = append(rows, []string{st, strconv.Itoa(c.States[st])})
	}
	if err := ios.printTable([]string{"STATE", "RUNS"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "ended: %s\n", joinCounts(c.Statuses))
	fmt.Fprintf(ios.Out, "outboxes: %d messages (%s), %d already seen by their receiver\n",
		sum(c.Messages), joinCounts(c.Messages), c.SeenUnacked)
	return nil
}

func joinCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// virtualTime renders a virtual clock (ms since the directory's start).
func virtualTime(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// genGC trades memory for speed while gen runs, unless GOGC or GOMEMLIMIT
// is set: gen's live heap is small and flat (the engine evicts runs), so
// collecting at 5x the live heap (GOGC=400) under a soft limit saves
// about a quarter of its CPU (measured at 50k runs). At 1M runs the live
// heap is 60-95 MB (the resident runs' journals, the event queues, a
// checkpoint's batches), so the heap always reaches the limit and the
// limit is the largest part of gen's peak RSS; in a cgo build the stores
// of a directory being built take 100-120 MiB more outside the Go heap
// (memtables, block cache, the C allocator's own; malloc_cgo.go caps its
// arenas). The limit is genBaseLimit(runs) until the live heap nears it
// (followLiveHeap). It returns what restores the settings.
func genGC(runs int) func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	gc := debug.SetGCPercent(400)
	base := genBaseLimit(runs)
	restore := lowerHeapLimit(base)
	stop := followLiveHeap(base)
	return func() {
		stop()
		debug.SetGCPercent(gc)
		restore()
	}
}

// genBaseLimit is gen's heap limit for a directory of runs runs:
// genHeapLimit, or largeGenHeapLimit past journal.LargeBuildRuns, where
// the engine keeps more runs resident (sim's MaxResident) and the stores
// larger caches (journal's buildSizes), trading memory back for speed.
func genBaseLimit(runs int) int64 {
	if journal.LargeBuild(runs) {
		return largeGenHeapLimit
	}
	return genHeapLimit
}

// genLimitFor is gen's heap limit for a live heap of live bytes: base,
// or a quarter above the live heap once that is past four fifths of
// base. What grows with the directory (the outboxes, the key
// filters: docs/simulator.md) takes gen's live heap toward the limit as
// the run count grows, and under a limit the live heap has reached, the
// collector runs without pause, taking up to half the CPU. (At 1M and 2M
// runs the live heap stayed below four fifths of 112 MiB and the limit
// never moved; 10M was not measured. bench/results/gen9.md.)
func genLimitFor(base int64, live uint64) int64 {
	return max(base, int64(live+live/4))
}

// followLiveHeap raises the soft heap limit to genLimitFor(base, the live
// heap after the last collection) twice a second until the function it
// returns is called; it never lowers it.
func followLiveHeap(base int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		limit := debug.SetMemoryLimit(-1)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			if want := genLimitFor(base, live[0].Value.Uint64()); want > limit {
				debug.SetMemoryLimit(want)
				limit = want
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
