package reshard

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
)

// Names inside a data directory while a reshard runs.
const (
	NewDirName = "reshard.new" // the new shards and log, built before the switch
	OldDirName = "reshard.old" // the old shards and log, moved aside during the switch
	scratchDir = ".scratch"    // inside reshard.new (real run) or --scratch (dry run)
)

// DefaultMemory is the default memory budget (Options.Memory).
const DefaultMemory = 256 << 20

// Options configure a reshard.
type Options struct {
	// Shards is the new shard count, 1..meta.MaxShards; 0 only finishes
	// an interrupted reshard (or removes leftovers).
	Shards int
	// DryRun reads and plans everything and changes nothing in the
	// directory; scratch data goes under Scratch.
	DryRun bool
	// Scratch is where a dry run keeps its scratch store if the plan
	// outgrows the budget, and where the report's lists (List) spill,
	// real run or not, if they outgrow their share ("": the system
	// temporary directory).
	Scratch string
	// Memory is the budget for the plan and run map before they spill to
	// a scratch store (0: DefaultMemory).
	Memory int64
	// Progress, if set, is told how far each phase has got.
	Progress func(phase string, done, total int64)
	// MakePlan, with DryRun, also returns the plan in Report.Plan.
	MakePlan bool
	// Plan, if set, is applied: the count is its, and the directory must
	// be the one it was made from (PlanPath names it in messages).
	Plan     *Plan
	PlanPath string
	// KeepOld keeps the old layout as reshard.kept instead of deleting
	// it, so that Undo can restore it.
	KeepOld bool
}

// CountError is a shard count outside 1..meta.MaxShards.
type CountError struct{ Shards int }

func (e *CountError) Error() string {
	return fmt.Sprintf("%d shards: a data directory has 1 to %d", e.Shards, meta.MaxShards)
}

// InProgressError is a count that disagrees with an interrupted reshard.
type InProgressError struct {
	Dir             string
	Asked, Old, New int
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%s: a reshard from %d to %d shards was interrupted after its switch began; it must be finished first: run `fusee reshard %s` (without a count, or with %d), not with %d",
		e.Dir, e.Old, e.New, meta.ShellQuote(e.Dir), e.New, e.Asked)
}

// Is makes an InProgressError match meta.ErrSwitching.
func (e *InProgressError) Is(target error) bool { return target == meta.ErrSwitching }

// CheckError is a built directory whose content does not match the old
// one: the switch was not begun and the old directory is unchanged.
type CheckError struct{ Diff string }

func (e *CheckError) Error() string {
	return "the new shards do not hold what the old ones did (" + e.Diff + "); nothing was switched and the directory is unchanged; this is a bug in fusee reshard: please report it with the output of `fusee verify`"
}

// SpaceError is a filesystem without room for the new shards.
type SpaceError struct {
	Dir         string
	Need, Avail int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("%s: a reshard needs about %s free, the filesystem has %s; free some space (or move the directory) and run it again; nothing was changed",
		e.Dir, HumanBytes(e.Need), HumanBytes(e.Avail))
}

// resharder is one reshard in progress.
type resharder struct {
	fs         vfs.FS
	dir        string
	opts       Options
	oldN, newN int
	scratch    string
	budget     int64
	open       []*spillMap // every map made, closed however the reshard ends
	newDigest  *digest
	rep        *Report
	tails      []store.ShardTail // the old shards' log tails, read once
	owner      *ownership        // what new files get (nil: not on the disk)
	fp         *Fingerprint      // the old directory's, when a plan is made or applied
	// switching is the fusee.meta written at the point of no return.
	switching meta.Meta
	// upgrade: this is `fusee upgrade` (log format 2 to 3), not a reshard.
	upgrade bool
}

// finishCommand is the command that finishes what r began, quoted.
func (r *resharder) finishCommand() string {
	if r.upgrade {
		return "fusee upgrade " + meta.ShellQuote(r.dir)
	}
	return finishCommand(r.dir)
}

// Reshard changes the shard count of the closed data directory dir to
// opts.Shards, or finishes a reshard that was interrupted after its switch
// began. It takes the directory's lock for its whole run. See
// docs/reshard.md for what moves, the renumbering rules and why a crash
// at any point is safe.
func Reshard(ctx context.Context, fs vfs.FS, dir string, opts Options) (_ *Report, err error) {
	if opts.Shards < 0 || opts.Shards > meta.MaxShards {
		return nil, &CountError{Shards: opts.Shards}
	}
	if opts.Memory <= 0 {
		opts.Memory = DefaultMemory
	}
	fs = meta.FS(fs) // LOCK and the stores' locks are flock(2) on the disk
	if opts.DryRun {
		fs = meta.ReadOnlyFS(fs) // a dry run creates no LOCK either
	}
	d, err := lockDir(fs, dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m := d.Meta()
	rep := &Report{Version: ReportVersion, Dir: dir, DryRun: opts.DryRun, OldShards: m.Shards, NewShards: m.Shards,
		Counts: Counts{Runs: map[string]int64{}}}
	newReportLists(fs, rep, opts.Scratch, opts.Memory)
	defer closeOnError(rep, &err)
	r := &resharder{fs: fs, dir: dir, opts: opts, rep: rep, budget: opts.Memory}
	if r.owner, err = ownershipOf(fs, dir); err != nil {
		return nil, err
	}
	if opts.Plan != nil {
		// Before anything is touched, leftovers included.
		if err := r.checkPlan(ctx, m); err != nil {
			return nil, err
		}
		opts.Shards, r.opts.Shards = opts.Plan.NewShards, opts.Plan.NewShards
	}

	if m.Switching() {
		rep.OldShards, rep.NewShards = m.OldShards, m.NewShards
		if opts.Shards != 0 && opts.Shards != m.NewShards {
			return nil, &InProgressError{Dir: dir, Asked: opts.Shards, Old: m.OldShards, New: m.NewShards}
		}
		rep.Outcome = OutcomeFinished
		if opts.DryRun {
			return rep, nil
		}
		start := time.Now()
		if err := r.finishSwitch(d, m.NewShards); err != nil {
			return nil, err
		}
		r.phase("switch", start)
		return rep, nil
	}

	if opts.Shards != 0 && opts.Shards != m.Shards {
		// Before anything is touched, leftovers included: a damaged log is
		// refused, and a torn tail is reported as the recovery drops it.
		if err := r.checkLog(); err != nil {
			return nil, err
		}
	}

	if err := r.removeLeftovers(); err != nil {
		return nil, err
	}
	if opts.Shards == 0 || opts.Shards == m.Shards {
		rep.Outcome = OutcomeNothingToDo
		if len(rep.CleanedUp) > 0 {
			rep.Outcome = OutcomeCleanedUp
		}
		return rep, nil
	}
	r.oldN, r.newN = m.Shards, opts.Shards
	rep.NewShards = opts.Shards
	if !opts.DryRun {
		if err := refuseOverKept(fs, dir); err != nil {
			return nil, err
		}
	}
	if opts.MakePlan && r.fp == nil {
		if err := r.identify(ctx, m); err != nil {
			return nil, err
		}
	}

	r.switching = meta.Meta{Format: meta.Switching, Log: meta.LogShared, Shards: r.newN, OldShards: r.oldN, NewShards: r.newN}
	return r.rebuild(ctx, d)
}

// rebuild builds the new layout of r.newN shards in reshard.new from the
// old r.oldN shards (read through r.tails when they are set, the shared
// log otherwise), checks it, and switches to it: fusee.meta becomes
// r.switching (the point of no return), then finishSwitch. A reshard and
// an upgrade (which rebuilds the same shards with the shared log) differ
// only in what they read and in that switching state.
func (r *resharder) rebuild(ctx context.Context, d *metaDir) (*Report, error) {
	fs, dir, opts, rep := r.fs, r.dir, r.opts, r.rep
	newDir := fs.PathJoin(dir, NewDirName)
	oldBytes, err := treeSize(fs, dir, NewDirName, OldDirName)
	if err != nil {
		return nil, err
	}
	rep.Counts.BytesRead = oldBytes
	// The whole estimate before anything is written, the dry run's too:
	// one figure for the dry run, the refusal and the report.
	rawBytes, err := r.rawBytesOfOld(ctx)
	if err != nil {
		return nil, err
	}
	rep.SpaceNeeded = r.spaceNeeded(oldBytes, rawBytes)
	if err := r.checkSpace(); err != nil {
		return nil, err
	}

	// Scratch space: inside reshard.new for a real run, outside the
	// directory for a dry run.
	if opts.DryRun {
		base := opts.Scratch
		if base == "" {
			base = os.TempDir()
		}
		r.scratch = fs.PathJoin(base, "fusee-reshard-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	} else {
		if err := fs.MkdirAll(newDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", newDir, err)
		}
		r.scratch = fs.PathJoin(newDir, scratchDir)
	}
	defer func() { _ = fs.RemoveAll(r.scratch) }()
	defer r.closeMaps() // a failure may leave maps open (and their stores locked)
	abandon := func(err error) (*Report, error) {
		r.closeMaps()
		if !opts.DryRun {
			// Before the switch the old directory is untouched; what was
			// built is discarded (a rerun would discard it anyway). The
			// directory is not synced: err may be its failed fsync, which
			// is never retried, and a reshard.new a crash brings back is a
			// leftover the next reshard removes.
			_ = fs.RemoveAll(newDir)
		}
		return nil, err
	}

	start := time.Now()
	p, err := r.makePlan(ctx)
	if err != nil {
		return abandon(err)
	}
	defer p.Close()
	if opts.Plan != nil {
		if err := r.matchPlan(p); err != nil {
			return abandon(err)
		}
	}
	r.progress("plan", int64(r.oldN), int64(r.oldN))
	r.phase("plan", start)
	if err := r.checkSpace(); err != nil { // the space may have gone while the plan was made
		return abandon(err)
	}
	for st, n := range p.byState {
		rep.Counts.Runs[st.String()] = n
	}
	rep.Counts.RunsRenumbered, rep.Counts.RunsMoved = p.renumbered, p.moved
	rep.NewShardRuns = p.shardRuns
	rep.StoreGen = p.storeGen + 1
	rep.Spilled = p.runs.Spilled()
	if opts.DryRun {
		start = time.Now()
		if _, err := r.build(ctx, p, "", rep); err != nil {
			return nil, err
		}
		r.phase("rewrite", start)
		rep.Outcome = OutcomePlanned
		if opts.MakePlan {
			if rep.Plan, err = r.writtenPlan(p); err != nil {
				return nil, err
			}
		}
		return rep, nil
	}

	start = time.Now()
	oldDigest, err := r.build(ctx, p, newDir, rep)
	if err != nil {
		return abandon(err)
	}
	r.phase("rewrite", start)

	start = time.Now()
	newDigest, err := r.checkNew(ctx, p, newDir)
	if err != nil {
		return abandon(err)
	}
	if diff := oldDigest.diff(newDigest); diff != "" {
		return abandon(&CheckError{Diff: diff})
	}
	// The new shards and the sort's scratch files are all on disk here:
	// reshard.new is at its largest (spaceNeeded).
	if err := hook("new-checked"); err != nil {
		return abandon(err)
	}
	if err := fs.RemoveAll(r.scratch); err != nil {
		return abandon(err)
	}
	if opts.KeepOld {
		if err := r.recordKept(ctx, newDir); err != nil {
			return abandon(err)
		}
	}
	if err := r.owner.apply(newDir); err != nil {
		return abandon(err)
	}
	if err := meta.SyncDir(fs, newDir); err != nil {
		return abandon(err)
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return abandon(err)
	}
	r.progress("check", int64(r.newN), int64(r.newN))
	r.phase("check", start)
	if err := ctx.Err(); err != nil {
		return abandon(err)
	}

	// The point of no return: from here a crash leaves a directory that
	// only `fusee reshard` opens, and that it finishes.
	start = time.Now()
	if err := hook("before-switch"); err != nil {
		return abandon(err)
	}
	if err := r.writeMeta(d, r.switching); err != nil {
		// fusee.meta may be the new one already (renamed into place, the
		// directory's fsync failed): reshard.new stays, for the rerun that
		// finishes the switch; if fusee.meta is still the old one, the
		// rerun removes reshard.new as a leftover.
		return nil, fmt.Errorf("beginning the switch: %w; the directory is either as it was (reshard.new left over) or its switch has begun: run `%s` to finish or clean up", err, r.finishCommand())
	}
	if err := hook("meta-switching"); err != nil {
		return nil, err
	}
	if err := r.finishSwitch(d, r.newN); err != nil {
		return nil, err
	}
	r.phase("switch", start)
	rep.Outcome = OutcomeDone
	return rep, nil
}

// DamagedError is a reshard refused because the directory's log is
// damaged. Nothing was changed.
type DamagedError struct {
	Dir string
	Err error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("reshard refuses %s: nothing was changed; its log is damaged: %v", e.Dir, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// checkLog reads the whole log of the old directory before anything is
// changed: damage refuses the reshard; a torn tail (the engine stopped
// mid-write) goes into the report as the tail the recovery drops.
func (r *resharder) checkLog() error {
	end, err := journal.ReadLogEnd(r.fs, r.dir)
	if err != nil {
		return &DamagedError{Dir: r.dir, Err: err}
	}
	r.rep.LogEnding = end.Ending.String()
	if t := end.Torn; t != nil {
		d := &DroppedTail{File: t.File, Offset: t.Offset, Bytes: t.Bytes, Reason: t.Reason, Batch: t.Batch}
		for _, s := range t.Sections {
			d.Shards = append(d.Shards, DroppedShard{Shard: s.Shard, FirstLSN: s.FirstLSN, LastLSN: s.LastLSN()})
		}
		r.rep.DroppedTail = d
	}
	return nil
}

// removeLeftovers removes (a dry run only lists) what earlier attempts
// left with fusee.meta format=local: reshard.new of an attempt that never
// reached the switch, reshard.old of one that finished but crashed before
// deleting it.
func (r *resharder) removeLeftovers() error {
	for _, left := range leftovers(r.fs, r.dir) {
		r.rep.CleanedUp = append(r.rep.CleanedUp, left)
		if r.opts.DryRun {
			continue
		}
		if err := r.fs.RemoveAll(left); err != nil {
			return fmt.Errorf("removing the leftover %s: %w", left, err)
		}
		if err := meta.SyncDir(r.fs, r.dir); err != nil {
			return err
		}
	}
	return nil
}

// finishSwitch does the steps after fusee.meta says format=reshard (or,
// for an upgrade, format=upgrade). Every
// step can be repeated, so a rerun after a crash anywhere here finishes
// the job: for the log and the shards, if the new copy is still in
// reshard.new, the old one (if still in place) moves to reshard.old and
// the new one moves in; then the final fusee.meta; then reshard.old and
// reshard.new are deleted.
//
// An undo (undo.go) goes through the same steps with reshard.kept in
// place of reshard.new; a reshard with KeepOld moves reshard.old to
// reshard.kept before the final fusee.meta (keep.go).
func (r *resharder) finishSwitch(d *metaDir, newN int) error {
	fs, dir := r.fs, r.dir
	newDir, oldDir := switchSource(fs, dir), fs.PathJoin(dir, OldDirName)
	if err := checkNewShards(fs, dir, newDir, newN, r.upgrade); err != nil {
		return err
	}
	for _, name := range []string{"wal", "shards"} {
		src := fs.PathJoin(newDir, name)
		if _, err := fs.Stat(src); err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				continue // already moved in
			}
			return fmt.Errorf("switching: %w", err)
		}
		cur, aside := fs.PathJoin(dir, name), fs.PathJoin(oldDir, name)
		if _, err := fs.Stat(cur); err == nil && fileExists(fs, aside) {
			// The old X is aside already (reshard.old was synced right
			// after it moved). X is a second copy that a power cut left
			// where each directory keeps only what was synced in it: of
			// the old X (its removal here not yet synced) or of the new
			// one (its removal from the source not yet synced). Either
			// way it goes; moving it aside would replace the old X, which
			// a kept layout needs.
			if err := fs.RemoveAll(cur); err != nil {
				return fmt.Errorf("switching: removing a second copy of %s: %w", name, err)
			}
			if err := meta.SyncDir(fs, dir); err != nil {
				return err
			}
		} else if err == nil {
			if err := fs.MkdirAll(oldDir, 0o755); err != nil {
				return fmt.Errorf("switching: %w", err)
			}
			if err := meta.SyncDir(fs, dir); err != nil {
				return err
			}
			if err := fs.Rename(cur, aside); err != nil {
				return fmt.Errorf("switching: moving the old %s aside: %w", name, err)
			}
			if err := hook("old-" + name + "-aside"); err != nil {
				return err
			}
			if err := meta.SyncDir(fs, oldDir); err != nil {
				return err
			}
			if err := meta.SyncDir(fs, dir); err != nil {
				return err
			}
		}
		if err := fs.Rename(src, cur); err != nil {
			return fmt.Errorf("switching: moving the new %s in: %w", name, err)
		}
		if err := hook("new-" + name + "-in"); err != nil {
			return err
		}
		if err := meta.SyncDir(fs, dir); err != nil {
			return err
		}
		if err := meta.SyncDir(fs, newDir); err != nil {
			return err
		}
	}
	if err := r.keepOld(newDir, oldDir); err != nil {
		return err
	}
	if err := r.writeFinalMeta(d, newDir, newN); err != nil {
		return err
	}
	if err := hook("meta-final"); err != nil {
		return err
	}
	for _, left := range []string{oldDir, newDir} {
		if err := fs.RemoveAll(left); err != nil {
			return fmt.Errorf("removing %s (the switch is complete; remove it by hand or run `%s`): %w", left, r.finishCommand(), err)
		}
	}
	return meta.SyncDir(fs, dir)
}

// writeMeta replaces fusee.meta and gives the new file the old one's owner
// and mode.
func (r *resharder) writeMeta(d *metaDir, m meta.Meta) error {
	if err := d.Write(m); err != nil {
		return err
	}
	return r.owner.apply(r.fs.PathJoin(r.dir, meta.FileName))
}

// SwitchStateError is an interrupted switch whose new shards are not the
// ones fusee.meta names: finishing it would give the directory the wrong
// shards, so nothing is done.
type SwitchStateError struct {
	Dir     string
	Shards  int    // new_shards in fusee.meta (an upgrade's: shards)
	Where   string // where the new shards should be
	Err     error
	Upgrade bool // the interrupted switch is an upgrade's
}

func (e *SwitchStateError) Error() string {
	what := fmt.Sprintf("a reshard to %d shards", e.Shards)
	if e.Upgrade {
		what = fmt.Sprintf("an upgrade of %d shards to log format %d", e.Shards, meta.LogShared)
	}
	return fmt.Sprintf("%s: fusee.meta says %s was interrupted, but %s does not hold %d new shards (%v); refusing to finish it, nothing was changed: was fusee.meta or reshard.new changed by hand? Restore the directory from a backup",
		e.Dir, what, e.Where, e.Shards, e.Err)
}

func (e *SwitchStateError) Unwrap() error { return e.Err }

// checkNewShards makes sure that the shards the switch moves in (still in
// reshard.new, or already moved in) are newN shards of a newN-shard
// directory, before anything is moved. For an upgrade, whose old shards
// have the same count, they must also be rebuilt ones: no per-shard log
// beside a store, and a checkpoint at LSN 0 of a shared log.
func checkNewShards(fs vfs.FS, dir, newDir string, newN int, upgrade bool) error {
	base := newDir
	if _, err := fs.Stat(fs.PathJoin(base, "shards")); err != nil {
		base = dir
	}
	where := fs.PathJoin(base, "shards")
	fail := func(err error) error {
		return &SwitchStateError{Dir: dir, Shards: newN, Where: where, Err: err, Upgrade: upgrade}
	}
	for j := range newN {
		h, err := store.ReadHeader(fs, base, j, newN)
		if err != nil {
			return fail(err)
		}
		if !upgrade {
			continue
		}
		if old := wal.ShardLogDir(fs, base, j); fileExists(fs, old) {
			return fail(fmt.Errorf("%s is a log format 2 shard's log", old))
		}
		if h.LSN != 0 || h.Log.Segment == 0 {
			return fail(fmt.Errorf("shard %d's checkpoint is at LSN %d, log position %v: not a store rebuilt for a new shared log", j, h.LSN, h.Log))
		}
	}
	if extra := store.ShardDir(fs, base, newN); fileExists(fs, extra) {
		return fail(fmt.Errorf("it has a shard %d as well", newN))
	}
	return nil
}

func fileExists(fs vfs.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil
}

// testHook, when set (by tests), is called at each named step of the
// switch; an error it returns stops the reshard there, as a crash would.
var testHook func(step string) error

func hook(step string) error {
	if testHook == nil {
		return nil
	}
	return testHook(step)
}

// mapShare is the part of the memory budget each spill map may hold in
// memory (or in its scratch store's memtables once spilled). At most four
// maps are alive at once (plan, losers, runs and rev; then runs, the paged
// run map's cache in rev's place, runmapfile.go, and the sort's arena,
// runsort.go), or the compact run map (half the budget
// at most, runmap.go) and the sort's arena; and the report's two lists,
// half a share each (reportlist.go), and a plan's two (applied) or its
// renumbered runs (made). The rest of the budget is for the Go runtime,
// the store readers' and writers' buffers and pebble's caches.
const mapShare = 8

// newMap is a spill map under the scratch directory with a share of the
// memory budget.
func (r *resharder) newMap(name string) *spillMap {
	m := newSpillMap(r.fs, r.fs.PathJoin(r.scratch, name), max(r.budget/mapShare, 1))
	r.open = append(r.open, m)
	return m
}

// closeMaps closes every map (closing one twice does nothing).
func (r *resharder) closeMaps() {
	for _, m := range r.open {
		_ = m.Close()
	}
}

func (r *resharder) progress(phase string, done, total int64) {
	if r.opts.Progress != nil {
		r.opts.Progress(phase, done, total)
	}
}

func (r *resharder) phase(name string, start time.Time) {
	el := time.Since(start)
	r.rep.Phases = append(r.rep.Phases, Phase{Name: name, Seconds: el.Seconds(), elapsed: el})
}

// treeSize is the total size of the files under dir, skipping the named
// top-level entries.
func treeSize(fs vfs.FS, dir string, skip ...string) (int64, error) {
	var total int64
	names, err := fs.List(dir)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, n := range names {
		if slices.Contains(skip, n) {
			continue
		}
		if err := walkFiles(fs, dir, n, func(_ string, size int64) error {
			total += size
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// spaceNeeded estimates the free space a real run needs, from the old
// directory's bytes (oldBytes, without reshard.new) and its stores' keys
// and values uncompressed (rawBytes, rawBytesOfOld):
// the new stores and shared log take about what the old ones do (plus
// each new store's own small files: storeFiles), and a
// run that sorts (every change but a grow to a small multiple) also
// writes its sort's scratch files, which hold every key and value
// uncompressed with a few bytes of framing each and are deleted only
// after the last new store is written. spaceMargin covers the rest (the
// run map's scratch files, pebble's own files). Measured peaks of
// reshard.new: at 200k runs (51 MB) 134 MB for 8 -> 3 and 8 -> 12, 47 MB
// for 8 -> 16, against estimates of 161 and 60 MB; at 10M runs a 16 -> 6
// reshard peaked at 2.6-2.7 times the old directory's bytes.
func (r *resharder) spaceNeeded(oldBytes, rawBytes int64) int64 {
	need := oldBytes + int64(r.newN)*storeFiles + spaceMargin
	if !r.growsDirectly() {
		need += rawBytes + rawBytes/16
	}
	return need
}

// checkSpace refuses a real run when the filesystem has less free space
// than r.rep.SpaceNeeded (where free space can be known: on the real
// disk).
func (r *resharder) checkSpace() error {
	if r.opts.DryRun {
		return nil
	}
	if avail, ok := freeSpace(r.fs, r.dir); ok && avail < r.rep.SpaceNeeded {
		return &SpaceError{Dir: r.dir, Need: r.rep.SpaceNeeded, Avail: avail}
	}
	return nil
}

// spaceMargin is what spaceNeeded adds for the files it does not count.
// It was 64 MiB, which put the estimate 60% above the peak at 200k runs.
const spaceMargin = 8 << 20

// storeFiles is what spaceNeeded allows for a new store's files beyond
// its data (its manifest, options file and table footers and indexes).
const storeFiles = 16 << 10

// walkFiles calls fn with every file at or under root/rel (rel: names
// joined by '/'), by its path relative to root and its size, in name
// order. A missing root/rel has no files.
func walkFiles(fs vfs.FS, root, rel string, fn func(rel string, size int64) error) error {
	p := fs.PathJoin(root, rel)
	st, err := fs.Stat(p)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if !st.IsDir() {
		return fn(rel, st.Size())
	}
	names, err := fs.List(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := walkFiles(fs, root, rel+"/"+n, fn); err != nil {
			return err
		}
	}
	return nil
}

// HumanBytes renders a byte count for people: "512 B", "1.5 MiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
