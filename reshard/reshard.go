package reshard

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// Names inside a data directory while a reshard runs.
const (
	NewDirName = switchdir.NewDirName // the new shards and log, built before the switch
	OldDirName = switchdir.OldDirName // the old shards and log, moved aside during the switch
	scratchDir = ".scratch"           // inside reshard.new (real run) or --scratch (dry run)
)

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
	return fmt.Sprintf("%s: a reshard from %d to %d shards was interrupted after its switch began; it must be finished first, without a count or with %d, not with %d",
		e.Dir, e.Old, e.New, e.New, e.Asked)
}

// Is makes an InProgressError match meta.ErrSwitching.
func (e *InProgressError) Is(target error) bool { return target == meta.ErrSwitching }

// CheckError is a built directory whose content does not match the old
// one: the switch was not begun and the old directory is unchanged. It is
// a bug of the operation Op, not damage.
type CheckError struct {
	Op   Op
	Diff string
}

func (e *CheckError) Error() string {
	return "the new shards do not hold what the old ones did (" + e.Diff + "); nothing was switched and the directory is unchanged; this is a bug in fusee's " + string(e.Op)
}

// DamagedError is an operation (Op) refused before its switch because
// the old directory is damaged: its log cannot be read to its end (Err),
// or an old shard's content breaks an invariant the operation relies on
// (What: a run on the wrong shard; a timer, an ID index entry or an
// outbox message naming a run that does not exist).
type DamagedError struct {
	Dir   string
	Op    Op
	Shard int    // the old shard What is about (-1: the log)
	What  string // what was found, naming the shard
	Err   error  // the log's damage
}

func (e *DamagedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s refuses %s: nothing was changed; its log is damaged: %v", e.Op, e.Dir, e.Err)
	}
	return e.What + ": the directory is damaged"
}

func (e *DamagedError) Unwrap() error { return e.Err }

// damaged is r's DamagedError for old shard i.
func (r *resharder) damaged(i int, format string, args ...any) error {
	return &DamagedError{Dir: r.dir, Op: r.op(), Shard: i, What: fmt.Sprintf(format, args...)}
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
	newDigest  *digest
	rep        *Report
	tails      []store.ShardTail // the old shards' log tails, read once
	owner      *switchdir.Owner  // what new files get (nil: not on the disk)
	fp         *Fingerprint      // the old directory's, when a plan is made or applied
	// oldRaw is each old store's RawBytes, measured where the tails'
	// read opened it for its header (readTails); nil if not.
	oldRaw []uint64
	// switching is the fusee.meta written at the point of no return.
	switching meta.Meta
	// upgrade: this is `fusee upgrade` (log format 2 to 3), not a reshard;
	// undo: an undo of a kept reshard.
	upgrade, undo bool
	// readBufs are the read buffers of every store reader (source), made
	// at the first and released with the maps (each reader has a block
	// cache of its own).
	bufsOnce sync.Once
	readBufs *store.ReadBuffers
}

// Reshard changes the shard count of the closed data directory dir to
// opts.Shards, or finishes a reshard that was interrupted after its switch
// began. It takes the directory's lock for its whole run. See
// docs/reshard.md for what moves, the renumbering rules and why a crash
// at any point is safe.
func Reshard(ctx context.Context, fs vfs.FS, dir string, opts Options) (_ *Report, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
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
	if r.owner, err = switchdir.OwnerOf(fs, dir); err != nil {
		return nil, err
	}
	if opts.Plan != nil {
		// Before anything is touched, leftovers included.
		if err := r.checkPlan(ctx, m); err != nil {
			return nil, err
		}
		r.opts.Shards = opts.Plan.NewShards
	}
	if rep, done, err := r.finishBegun(d, m); done {
		return rep, err
	}
	return r.start(ctx, d, m)
}

// Validate checks the options before anything is read: the count is
// 1..meta.MaxShards, or 0 (finish what was begun).
func (o *Options) Validate() error {
	if o.Shards < 0 || o.Shards > meta.MaxShards {
		return &CountError{Shards: o.Shards}
	}
	return nil
}

// finishBegun finishes what an earlier run began, if anything (done): an
// interrupted switch, or the cleanup of one that finished.
func (r *resharder) finishBegun(d *metaDir, m meta.Meta) (_ *Report, done bool, _ error) {
	fs, dir, opts, rep := r.fs, r.dir, r.opts, r.rep
	if m.Switching() {
		rep.OldShards, rep.NewShards = m.OldShards, m.NewShards
		if opts.Shards != 0 && opts.Shards != m.NewShards {
			return nil, true, &InProgressError{Dir: dir, Asked: opts.Shards, Old: m.OldShards, New: m.NewShards}
		}
		if opts.KeepOld && !switchdir.Keeps(fs, dir) {
			return nil, true, &KeepOldFinishError{Dir: dir}
		}
		rep, err := r.finishInterrupted(d, m.NewShards)
		return rep, true, err
	}
	if pending := switchdir.PendingReport(fs, dir); pending != "" && (opts.Shards == 0 || opts.Shards == m.Shards) {
		// A switch finished and its cleanup did not: the same command
		// (or one without a count) ends it and reports it.
		if opts.KeepOld && !switchdir.FileExists(fs, fs.PathJoin(dir, KeptDirName)) {
			return nil, true, &KeepOldFinishError{Dir: dir}
		}
		rep, err := r.finishCleanup(pending)
		return rep, true, err
	}
	return nil, false, nil
}

// start begins a reshard of the directory, at rest with fusee.meta m, to
// r.opts.Shards: leftovers go first; the same count, or none, is nothing
// to do.
func (r *resharder) start(ctx context.Context, d *metaDir, m meta.Meta) (*Report, error) {
	fs, dir, opts, rep := r.fs, r.dir, r.opts, r.rep
	if opts.KeepOld && (opts.Shards == 0 || opts.Shards == m.Shards) && !switchdir.FileExists(fs, fs.PathJoin(dir, KeptDirName)) {
		return nil, &KeepOldFinishError{Dir: dir, NothingToFinish: true}
	}
	if opts.Shards != 0 && opts.Shards != m.Shards {
		// Before anything is touched, leftovers included: a damaged log is
		// refused, and a torn tail is reported as the recovery drops it.
		if err := r.checkLog(ctx, m.Shards); err != nil {
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
	newDir := r.fs.PathJoin(r.dir, NewDirName)
	defer func() {
		r.releaseReadBuffers()
		if r.scratch != "" {
			_ = r.fs.RemoveAll(r.scratch)
		}
	}()
	if err := r.prepare(ctx, newDir); err != nil {
		return nil, err
	}
	p, err := r.planPass(ctx)
	if p != nil {
		defer p.Close()
	}
	if err != nil {
		return r.abandon(err)
	}
	if r.opts.DryRun {
		return r.dryRun(ctx, p)
	}
	start := r.startClock("rewrite")
	oldDigest, err := r.build(ctx, p, newDir, r.rep)
	if err != nil {
		return r.abandon(err)
	}
	r.phase("rewrite", start)
	if err := r.checkAndKeep(ctx, p, newDir, oldDigest); err != nil {
		return r.abandon(err)
	}
	return r.switchTo(d, newDir)
}

// prepare checks the space the new layout needs, as far as it is known
// before the plan, and makes the scratch folder's place: inside
// reshard.new for a real run, outside the directory for a dry run.
func (r *resharder) prepare(ctx context.Context, newDir string) error {
	fs, opts, rep := r.fs, r.opts, r.rep
	oldBytes, err := switchdir.TreeSize(fs, r.dir, NewDirName, OldDirName)
	if err != nil {
		return err
	}
	rep.Counts.BytesRead = oldBytes
	// The whole estimate before anything is written, the dry run's too:
	// one figure for the dry run, the refusal and the report.
	rawBytes, err := r.rawBytesOfOld(ctx)
	if err != nil {
		return err
	}
	rep.SpaceNeeded = r.spaceNeeded(oldBytes, rawBytes)
	if err := r.checkSpace(); err != nil {
		return err
	}
	if opts.DryRun {
		base := opts.Scratch
		if base == "" {
			base = os.TempDir()
		}
		r.scratch = fs.PathJoin(base, "fusee-reshard-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		return nil
	}
	if err := fs.MkdirAll(newDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", newDir, err)
	}
	r.scratch = fs.PathJoin(newDir, scratchDir)
	return nil
}

// abandon ends a run that failed before its switch: the old directory is
// untouched, and what was built is discarded (a rerun would discard it
// anyway). The directory is not synced: err may be its failed fsync,
// which is never retried, and a reshard.new a crash brings back is a
// leftover the next reshard removes.
func (r *resharder) abandon(err error) (*Report, error) {
	r.releaseReadBuffers()
	if !r.opts.DryRun {
		_ = r.fs.RemoveAll(r.fs.PathJoin(r.dir, NewDirName))
	}
	return nil, err
}

// planPass makes the plan (pass 1), checks it against an applied plan
// file and the space it says the new layout needs, and puts its counts
// in the report. The plan is returned, to be closed, even with an error.
func (r *resharder) planPass(ctx context.Context) (*plan.Plan, error) {
	rep := r.rep
	start := r.startClock("plan")
	p, err := r.makePlan(ctx)
	if err != nil {
		return nil, err
	}
	if r.opts.Plan != nil {
		if err := r.matchPlan(p); err != nil {
			return p, err
		}
	}
	r.progress("plan", int64(r.oldN), int64(r.oldN))
	r.phase("plan", start)
	if err := r.checkSpace(); err != nil { // the space may have gone while the plan was made
		return p, err
	}
	for st, n := range p.ByState {
		rep.Counts.Runs[st.String()] = n
	}
	rep.Counts.RunsRenumbered, rep.Counts.RunsMoved = p.Renumbered, p.Moved
	rep.NewShardRuns = p.ShardRuns
	rep.StoreGen = p.StoreGen + 1
	rep.Spilled = p.Spilled()
	return p, nil
}

// dryRun is pass 2 without a new layout: the report counts what a real
// run would write, and (MakePlan) carries the plan.
func (r *resharder) dryRun(ctx context.Context, p *plan.Plan) (*Report, error) {
	rep := r.rep
	start := r.startClock("rewrite")
	if _, err := r.build(ctx, p, "", rep); err != nil {
		return nil, err
	}
	r.phase("rewrite", start)
	rep.Outcome = OutcomePlanned
	if r.opts.MakePlan {
		var err error
		if rep.Plan, err = r.writtenPlan(p); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// checkAndKeep checks the new layout against the old one's digest, then
// puts in reshard.new, synced, what the switch needs: the report, whole
// (from the point of no return on, whatever stops this run, the report
// is in the directory for the run that finishes it), and the kept
// layout's record.
func (r *resharder) checkAndKeep(ctx context.Context, p *plan.Plan, newDir string, oldDigest *digest) error {
	fs, dir, rep := r.fs, r.dir, r.rep
	start := r.startClock("check")
	newDigest, err := r.checkNew(ctx, p, newDir)
	if err != nil {
		return err
	}
	if diff := oldDigest.diff(newDigest); diff != "" {
		return &CheckError{Op: r.op(), Diff: diff}
	}
	// Nothing looks a run up from here on: the run map (about 80 MB at
	// 10M runs shrunk 8 -> 3) is let go before the report is written.
	p.Close()
	// The new shards and the sort's scratch files are all on disk here:
	// reshard.new is at its largest (spaceNeeded).
	if err := hook("new-checked"); err != nil {
		return err
	}
	if err := fs.RemoveAll(r.scratch); err != nil {
		return err
	}
	rep.ReportFile = fs.PathJoin(dir, ReportsDirName, switchdir.NewReportName(fs, dir, r.reportWhat(), time.Now()))
	if r.opts.KeepOld {
		rep.Kept = fs.PathJoin(dir, KeptDirName)
		if err := r.recordKept(ctx, newDir); err != nil {
			return err
		}
	}
	r.progress("check", int64(r.newN), int64(r.newN))
	r.phase("check", start)
	rep.Outcome = OutcomeDone
	if err := r.writeSourceReport(newDir); err != nil {
		return err
	}
	if err := r.owner.Apply(newDir); err != nil {
		return err
	}
	if err := meta.SyncDir(fs, newDir); err != nil {
		return err
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return err
	}
	return ctx.Err()
}

// switchTo passes the point of no return: fusee.meta becomes r.switching,
// from which a crash leaves a directory that only `fusee reshard` opens,
// and that it finishes; then the switch.
func (r *resharder) switchTo(d *metaDir, newDir string) (*Report, error) {
	start := r.startClock("switch")
	if err := hook("before-switch"); err != nil {
		return r.abandon(err)
	}
	if err := r.writeMeta(d, r.switching); err != nil {
		// fusee.meta may be the new one already (renamed into place, the
		// directory's fsync failed): reshard.new stays, for the rerun that
		// finishes the switch; if fusee.meta is still the old one, the
		// rerun removes reshard.new as a leftover.
		return nil, &SwitchError{Dir: r.dir, Op: r.op(), MaybeNotBegun: true, Report: r.reportNow(newDir), Err: err}
	}
	if err := hook("meta-switching"); err != nil {
		return nil, r.switchFailed(err)
	}
	if err := r.finishSwitch(d, r.newN); err != nil {
		return nil, r.switchFailed(err)
	}
	r.phase("switch", start)
	return r.rep, nil
}

// finishInterrupted finishes a switch that fusee.meta says began (a
// reshard's, an upgrade's or an undo's): the report is the one the
// interrupted run kept, and a dry run only says so.
func (r *resharder) finishInterrupted(d *metaDir, newN int) (*Report, error) {
	src := switchdir.Source(r.fs, r.dir)
	if err := r.loadSwitchReport(src); err != nil {
		return nil, err
	}
	r.rep.Outcome = OutcomeFinished
	if r.opts.DryRun {
		r.rep.DryRun = true
		return r.rep, nil
	}
	start := r.startClock("switch")
	if err := r.finishSwitch(d, newN); err != nil {
		return nil, r.switchFailed(err)
	}
	r.phase("switch", start)
	return r.rep, nil
}

// finishCleanup ends a switch that finished and whose cleanup did not
// (fusee.meta final, the report pending): the leftovers go and the
// report gets its name; the report is the one the interrupted run kept.
func (r *resharder) finishCleanup(pending string) (*Report, error) {
	if err := r.loadReport(pending); err != nil {
		return nil, err
	}
	r.rep.Outcome = OutcomeFinished
	if r.opts.DryRun {
		r.rep.DryRun = true
		r.rep.CleanedUp = switchdir.Leftovers(r.fs, r.dir)
		return r.rep, nil
	}
	start := r.startClock("switch")
	if err := r.removeLeftovers(); err != nil {
		return nil, r.switchFailed(err)
	}
	r.phase("switch", start)
	return r.rep, nil
}

// checkLog reads the whole log of the old directory before anything is
// changed: damage refuses the reshard; a torn tail (the engine stopped
// mid-write) goes into the report as the tail the recovery drops.
//
// The passes need the log's tails, read from the oldest checkpoint's
// segment. That is usually the log's first segment (the engine removes the
// segments every checkpoint is past), and then the read of the tails is
// the read of the whole log as well (journal.RecoveryReport.WholeLog), so
// checkLog reads the tails, keeps them for the passes and reads the log
// once, not twice (at 100k runs the log was 35 MB, read in about 20 ms a
// time). Where the tails' read is not the whole log, or fails, the whole
// log is read on its own as before: the refusal, its error and the report
// are the same either way, and a failure that only the tails' read finds
// is left for the passes to report, as before.
func (r *resharder) checkLog(ctx context.Context, count int) error {
	var (
		ending wal.Ending
		torn   *wal.TornTail
	)
	if rep := r.readTails(ctx, count); rep != nil && rep.WholeLog {
		ending, torn = rep.LogEnding, rep.Torn
	} else {
		end, err := journal.ReadLogEnd(r.fs, r.dir)
		if err != nil {
			return &DamagedError{Dir: r.dir, Op: r.op(), Shard: -1, Err: err}
		}
		ending, torn = end.Ending, end.Torn
	}
	r.rep.LogEnding = ending.String()
	if torn != nil {
		d := &DroppedTail{File: torn.File, Offset: torn.Offset, Bytes: torn.Bytes, Reason: torn.Reason, Batch: torn.Batch}
		for _, s := range torn.Sections {
			d.Shards = append(d.Shards, DroppedShard{Shard: s.Shard, FirstLSN: s.FirstLSN, LastLSN: s.LastLSN()})
		}
		r.rep.DroppedTail = d
	}
	return nil
}

// readTails reads the log tails of the old directory (of count shards)
// into r.tails for the passes, and each old store's RawBytes into
// r.oldRaw for the space check (rawBytesOfOld) in the opens that read
// the headers, and returns what the read found; nil if it failed (r.tails
// stays nil: the passes read them again and report the failure).
func (r *resharder) readTails(ctx context.Context, count int) *journal.RecoveryReport {
	raw := make([]uint64, count)
	tails, rep, err := logTails(ctx, r.fs, r.dir, count, raw)
	if err != nil {
		return nil
	}
	r.tails, r.oldRaw = tails, raw
	return rep
}

// removeLeftovers removes (a dry run only lists) what earlier attempts
// left with fusee.meta format=local: reshard.new of an attempt that never
// reached the switch, reshard.old of one that finished but crashed before
// deleting it.
//
// It also ends the cleanup of a switch that finished (a pending report
// gets its name) and removes the temporary files of fusee.meta and of
// reports that a crash left.
func (r *resharder) removeLeftovers() error {
	for _, left := range switchdir.Leftovers(r.fs, r.dir) {
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
	if r.opts.DryRun {
		return nil
	}
	meta.RemoveTempFiles(r.fs, r.dir, meta.FileName)
	if err := r.switchDir().FinishReport("", readReportName(r.fs)); err != nil {
		return err
	}
	return switchdir.PruneReports(r.fs, r.dir)
}

// Testing holds reshard's testing knobs, all in one place; none is ever
// set in production. Its own tests set them through export_test.go.
var Testing struct {
	// Step, when set, is called at each named step of a switch (and of
	// its report's way into reshard-reports), and an error it returns
	// stops the operation there, as a crash would. cmd/fusee's test
	// binary sets it to kill itself at a step (FUSEE_TEST_KILL_AT), the
	// only way a test of the real binary can stop it at an exact rename.
	Step func(step string) error
	// sortGrows makes a grow to a multiple go through the sort rather
	// than write its stores as it reads (to compare the two paths).
	sortGrows bool
	// corruptWrite may change or drop (keep false) each key's value the
	// rewrite hands to a new store, as a bug in the rewrite would.
	corruptWrite func(shard int, key, value []byte) (_ []byte, keep bool)
	// readBackCheck makes checkNew read every new shard back as well.
	readBackCheck bool
	// rewriters, when above 0, is how many old shards pass 2 rewrites
	// at once, instead of one per core (the determinism test).
	rewriters int
	// merged, when set, is called (from the store writers' goroutines)
	// once new shard j's sorted keys are merged from the sort's scratch
	// files, before they are removed: where reshard.new is at its
	// largest (the space test).
	merged func(j int)
	// phaseClock, when set, is called where the report's clock of a
	// phase starts (stop false) and stops: the progress test checks that
	// each progress phase starts and ends inside its report phase's clock.
	phaseClock func(name string, stop bool)
	// listBatch, when above 0, is how many list elements a report's JSON
	// encoder takes at a time (listBatch): the JSON test's short lists
	// then span many batches.
	listBatch int
}

func hook(step string) error {
	if Testing.Step == nil {
		return nil
	}
	return Testing.Step(step)
}

// releaseReadBuffers lets the readers' shared read buffers go once the
// last reader is closed (each reader's block cache goes with it).
func (r *resharder) releaseReadBuffers() {
	r.readBufs = nil
}

func (r *resharder) progress(phase string, done, total int64) {
	if r.opts.Progress != nil {
		r.opts.Progress(phase, done, total)
	}
}

// startClock starts the report's clock of phase name (phase stops it).
func (r *resharder) startClock(name string) time.Time {
	if Testing.phaseClock != nil {
		Testing.phaseClock(name, false)
	}
	return time.Now()
}

// phase stops the report's clock of phase name, started at start
// (startClock), and gives the phase its time in the report.
func (r *resharder) phase(name string, start time.Time) {
	el := time.Since(start)
	if Testing.phaseClock != nil {
		Testing.phaseClock(name, true)
	}
	r.rep.Phases = append(r.rep.Phases, Phase{Name: name, Seconds: el.Seconds(), elapsed: el})
}

// spaceNeeded estimates the free space a real run needs, from the old
// directory's bytes (oldBytes, without reshard.new) and its stores' keys
// and values uncompressed (rawBytes, rawBytesOfOld): the new stores and
// shared log take about what the old ones do (plus each new store's own
// small files: storeFiles). A run that sorts (every change but a grow to
// a small multiple) also writes its sort's scratch files, which hold
// every key and value uncompressed with a few bytes of framing each; a
// new store's sections of them are removed once it has merged them, and
// a written store is smaller than its sections (compressed), so
// reshard.new is at its largest as the first stores are written: every
// scratch file and the stores being written, at most maxStoreWorkers of
// about oldBytes/newN each (whatever the cores: the report does not
// depend on them). spaceMargin covers the rest (the run map's scratch
// files, pebble's own files).
func (r *resharder) spaceNeeded(oldBytes, rawBytes int64) int64 {
	need := int64(r.newN)*storeFiles + spaceMargin
	if r.growsDirectly() {
		return need + oldBytes
	}
	return need + rawBytes + rawBytes/16 + storesBeingWritten(oldBytes, r.budget, r.newN)
}

// storesBeingWritten is what spaceNeeded allows for the new stores being
// written while the sort's scratch files are all there: maxStoreWorkers
// stores of about oldBytes/newN each.
func storesBeingWritten(oldBytes, budget int64, newN int) int64 {
	return oldBytes * int64(min(maxStoreWorkers(budget), newN)) / int64(newN)
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
