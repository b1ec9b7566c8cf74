package reshard

import (
	"context"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// Upgrade converts a log format 2 directory (a log per shard) to log
// format 3 (one shared log). It is a reshard to the same shard count whose
// old shards are read through their own logs instead of the shared one:
// every run keeps its shard and number, each store is rebuilt at LSN 0
// with the old generation + 1 (so every pending completion token changes,
// as the report lists) beside a new, empty shared log, checked, and
// switched in through the same steps as a reshard (docs/reshard.md §7),
// with fusee.meta format=upgrade as the switching state: the rebuilt
// stores are at LSN 0 and the old ones belong to the per-shard logs, so
// neither half opens alone, and nothing but Upgrade opens the directory
// until it is finished.

// UpgradeOptions configure an upgrade.
type UpgradeOptions struct {
	// DryRun reads and checks everything and changes nothing.
	DryRun bool
	// Scratch, Memory and Progress are as in Options.
	Scratch  string
	Memory   int64
	Progress func(phase string, done, total int64)
}

// Upgrade converts the closed data directory dir from log format 2 to log
// format 3, or finishes an upgrade that was interrupted after its switch
// began (fusee.meta format=upgrade), or removes the leftovers of an earlier
// attempt; a directory already at format 3 with none is nothing to do. It
// takes the directory's lock for its whole run. A crash at any point leaves
// a directory that opens as it was or that Upgrade finishes. A directory
// whose reshard was interrupted is refused (*meta.SwitchingError: finish
// the reshard first).
func Upgrade(ctx context.Context, fs vfs.FS, dir string, opts UpgradeOptions) (_ *Report, err error) {
	if opts.Memory <= 0 {
		opts.Memory = DefaultMemory
	}
	fs = meta.FS(fs)
	if opts.DryRun {
		fs = meta.ReadOnlyFS(fs) // a dry run creates no LOCK either
	}
	d, err := meta.Open(fs, dir, meta.Options{AllowUpgrading: true})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m := d.Meta()
	rep := &Report{Version: ReportVersion, Dir: dir, DryRun: opts.DryRun, OldShards: m.Shards, NewShards: m.Shards,
		OldLog: m.Log, NewLog: meta.LogShared,
		Counts: Counts{Runs: map[string]int64{}}}
	newReportLists(fs, rep, opts.Scratch, opts.Memory)
	defer closeOnError(rep, &err)
	r := &resharder{fs: fs, dir: dir, rep: rep, budget: opts.Memory, upgrade: true,
		opts: Options{DryRun: opts.DryRun, Scratch: opts.Scratch, Memory: opts.Memory, Progress: opts.Progress}}
	if r.owner, err = switchdir.OwnerOf(fs, dir); err != nil {
		return nil, err
	}
	if m.Upgrading() {
		rep.OldLog = meta.LogPerShard
		return r.finishInterrupted(d, m.Shards)
	}
	if pending := switchdir.PendingReport(fs, dir); pending != "" && m.Log == meta.LogShared {
		return r.finishCleanup(pending)
	}
	if err := r.removeLeftovers(); err != nil {
		return nil, err
	}
	if m.Log == meta.LogShared {
		rep.Outcome = OutcomeNothingToDo
		if len(rep.CleanedUp) > 0 {
			rep.Outcome = OutcomeCleanedUp
		}
		return rep, nil
	}
	n := m.Shards
	r.oldN, r.newN = n, n
	headers, err := store.ReadHeaders(ctx, fs, dir, n)
	if err != nil {
		return nil, err
	}
	if r.tails, _, err = journal.ReadTailsV2(ctx, fs, dir, headers); err != nil {
		return nil, err
	}
	r.switching = meta.Meta{Format: meta.Upgrading, Log: meta.LogShared, Shards: n}
	return r.rebuild(ctx, d)
}
