package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
)

// genWindow is roughly how much virtual time a generated workload spans
// before gen stops it.
const genWindow = 2 * hour

// freshSource is gen's workload: top-level workflows started at evenly
// spaced times, in index order.
type freshSource struct {
	seed         uint64
	finishedFrac float64
	i, k         int
	spacing      int64
}

func newFreshSource(seed uint64, runs int, finishedFrac float64) *freshSource {
	k := int(math.Ceil(2*float64(runs)/runsPerFresh)) + 1
	spacing := int64(float64(genWindow) * runsPerFresh / float64(runs))
	if spacing < 1 {
		spacing = 1
	}
	return &freshSource{seed: seed, finishedFrac: finishedFrac, k: k, spacing: spacing}
}

func (f *freshSource) more() bool { return f.i < f.k }
func (f *freshSource) at() int64  { return int64(f.i) * f.spacing }
func (f *freshSource) next() event {
	ev := event{at: f.at(), wf: freshID(f.seed, f.i), kind: evFresh, fresh: f.i}
	f.i++
	return ev
}

// GenOptions configure Generate.
type GenOptions struct {
	Shards int
	Runs   int    // runs in the directory when gen stops
	Seed   uint64 // the workload seed
	// FinishedFrac is about the share of runs finished (or tombstoned)
	// when gen stops (default 0.7). It is reached by making top-level
	// workflows short (done within minutes) or long (waiting for hours);
	// even with none short about 0.45 finish, and with all short 0.98.
	FinishedFrac float64
	TailRounds   int // busy rounds logged after the last checkpoint (default 3)
	// Log is the log format of the directory: meta.LogShared (3, the
	// default when 0) or meta.LogPerShard (2: the older log per shard,
	// journal.WriteV2 of the same content, for trying `fusee upgrade`).
	Log      int
	Config   Config
	Progress func(Progress) // called at each checkpoint (nil: not)
	// NoCensus leaves the report's Census nil: the directory is not read
	// back after it is closed (at 1M runs that read is about 3% of gen's
	// CPU). For a caller that prints no report (gen -q).
	NoCensus bool
	spillAt  int  // tests: Engine.spillAt
	noEvict  bool // tests: keep every run in memory (no eviction)
}

// DefaultFinishedFrac is GenOptions.FinishedFrac's default.
const DefaultFinishedFrac = 0.7

func (o GenOptions) check() (GenOptions, error) {
	if o.Shards < 1 || o.Shards > meta.MaxShards {
		return o, fmt.Errorf("shard count %d: want 1..%d", o.Shards, meta.MaxShards)
	}
	if o.Runs < 1 {
		return o, fmt.Errorf("run count %d: want at least 1", o.Runs)
	}
	if o.FinishedFrac == 0 {
		o.FinishedFrac = DefaultFinishedFrac
	}
	if o.FinishedFrac < 0 || o.FinishedFrac > 1 {
		return o, fmt.Errorf("finished fraction %g: want 0..1", o.FinishedFrac)
	}
	if o.Log == 0 {
		o.Log = meta.LogShared
	}
	if o.Log != meta.LogShared && o.Log != meta.LogPerShard {
		return o, fmt.Errorf("log format %d: want %d or %d", o.Log, meta.LogShared, meta.LogPerShard)
	}
	if o.TailRounds <= 0 {
		o.TailRounds = 3
	}
	if o.Config.MaxResident <= 0 && journal.LargeBuild(o.Runs) {
		o.Config.MaxResident = largeMaxResident
	}
	return o, nil
}

// generate runs the workload until Runs runs exist, checkpoints, runs
// TailRounds more rounds that append records (a batch each, unless a
// round outgrows BatchOps; they start no run) and stops without a
// checkpoint: the directory then has a log tail after its last
// checkpoint, as an engine that crashed or was killed leaves it. The
// stop is counted in rounds, not batches, so that it is a logical point,
// and its last round appended records, so that the clock a reopening
// engine reads from the journals is the clock gen stopped at.
func (e *Engine) generate(ctx context.Context, o GenOptions) error {
	e.fresh = newFreshSource(o.Seed, o.Runs, o.FinishedFrac)
	e.cap = o.Runs
	tail := -1
	for {
		before := e.stats.BusyRounds
		more, err := e.step(ctx)
		if err != nil {
			return err
		}
		if tail < 0 && e.started >= e.cap {
			if err := e.checkpoint(); err != nil {
				return err
			}
			tail, e.noAutoCP = 0, true
			continue
		}
		if tail >= 0 {
			tail += e.stats.BusyRounds - before
			if tail >= o.TailRounds {
				return nil
			}
		}
		if !more {
			if tail < 0 {
				return e.checkpoint()
			}
			return nil
		}
	}
}

// GenReport says what Generate made.
type GenReport struct {
	Dir        string  `json:"dir"`
	Shards     int     `json:"shards"`
	Log        int     `json:"log"` // the log format: 3 shared, 2 a log per shard
	Seed       uint64  `json:"seed"`
	TailRounds int     `json:"tail_rounds"` // rounds logged after the last checkpoint
	Now        int64   `json:"now_ms"`
	Census     *Census `json:"census"`
	Stats      Stats   `json:"stats"`
	Elapsed    float64 `json:"elapsed_s"`
}

// Generate creates a closed data directory at dir (which must not exist or
// be empty) holding o.Runs workflow runs stopped mid-flight: running and
// parked runs, finished and tombstoned ones, unacknowledged messages and a
// log tail after the last checkpoint. The same options make the same
// logical content.
//
// It is all-or-nothing: the directory is built in a temporary sibling
// (<dir>.gen-tmp-<random>, in the same parent so that the rename is
// atomic), closed (everything synced, the directory lock released), then
// renamed to dir and the parent synced. On any error or cancellation the
// temporary directory is removed and dir is not created; a cancellation's
// error wraps ctx's error.
func Generate(ctx context.Context, fs vfs.FS, dir string, o GenOptions) (*GenReport, error) {
	o, err := o.check()
	if err != nil {
		return nil, err
	}
	if err := requireEmpty(fs, dir); err != nil {
		return nil, err
	}
	start := time.Now()
	clean := filepath.Clean(dir)
	parent := fs.PathDir(clean)
	tmp := fs.PathJoin(parent, fs.PathBase(clean)+genTmpInfix+randomSuffix())
	e, census, err := generateInto(ctx, fs, tmp, o)
	if err == nil && o.Log == meta.LogPerShard {
		err = journal.WriteV2(ctx, fs, tmp)
	}
	if err == nil {
		err = ctx.Err() // an interrupt during Close still means "not created"
	}
	if err == nil {
		err = moveInto(fs, tmp, clean)
	}
	if err != nil {
		_ = fs.RemoveAll(tmp)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("gen interrupted; %s was not created: %w", dir, err)
		}
		return nil, fmt.Errorf("gen %s failed; %s was not created: %w", dir, dir, err)
	}
	if err := meta.SyncDir(fs, parent); err != nil {
		// dir is complete, but its name may not survive a crash.
		return nil, fmt.Errorf("gen %s: %w", dir, err)
	}
	return &GenReport{Dir: dir, Shards: o.Shards, Log: o.Log, Seed: o.Seed, TailRounds: o.TailRounds, Now: e.now, Census: census,
		Stats: e.stats, Elapsed: time.Since(start).Seconds()}, nil
}

// genTmpInfix names Generate's temporary directories: <dir><infix><random>.
const genTmpInfix = ".gen-tmp-"

// scratchSuffix names the engine's scratch store (its spilled event
// queues), a sibling of the directory it drives: <dir><suffix> for gen's
// temporary directory, <dir><suffix>-<random> for drive. It is removed
// when the engine is done.
const scratchSuffix = ".events"

// generateInto creates the directory tmp, runs the workload into it and
// closes it (so that it is synced and unlocked).
func generateInto(ctx context.Context, fs vfs.FS, tmp string, o GenOptions) (*Engine, *Census, error) {
	db, err := journal.Create(fs, tmp, journal.CreateOptions{Shards: o.Shards, NoSync: true, Build: true, BuildRuns: o.Runs, LogID: genLogID(o)})
	if err != nil {
		return nil, nil, err
	}
	e := newEngine(dbBackend{db}, o.Config)
	e.progress = o.Progress
	e.spillAt = o.spillAt
	e.scratch, err = openScratch(fs, tmp+scratchSuffix)
	if err == nil {
		e.recover()
		if !o.noEvict {
			e.b.evict(e.cfg.MaxResident / 2)
		}
		err = e.generate(ctx, o)
		db.SetNow(e.now)
	}
	// The census phase starts as closing does: closing flushes every store.
	var census func(done, total int)
	if err == nil {
		census = censusProgress(o.Progress, o.Shards)
	}
	if cerr := errors.Join(db.Close(), e.scratch.close()); err == nil {
		err = cerr
	}
	if err != nil || o.NoCensus {
		return e, nil, err
	}
	c, err := censusOfDir(ctx, fs, tmp, o.Shards, census)
	return e, c, err
}

// moveInto renames the closed directory tmp to dir, removing dir first if
// it exists and is empty (a rename does not replace a directory on every
// file system).
func moveInto(fs vfs.FS, tmp, dir string) error {
	if err := requireEmpty(fs, dir); err != nil {
		return err
	}
	if err := fs.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fs.Rename(tmp, dir)
}

func randomSuffix() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

// genLogID is the log ID of a directory Generate makes: a hash of the
// seed and every option that shapes the content, so that the same options
// write the same log bytes (a random log ID would chain into every batch
// checksum), and never 0, which asks the wal for a random one.
func genLogID(o GenOptions) uint64 {
	c := o.Config.withDefaults()
	id := newHasher(o.Seed).str("fusee gen log").u64(uint64(o.Shards)).u64(uint64(o.Runs)).
		u64(math.Float64bits(o.FinishedFrac)).u64(uint64(o.TailRounds)).u64(uint64(c.Retention)).
		u64(uint64(c.Tick)).u64(uint64(c.CheckpointEvery)).u64(uint64(c.ParkAfter)).u64(uint64(c.BatchOps)).sum()
	if id == 0 {
		id = 1
	}
	return id
}

func requireEmpty(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("%s is not empty (gen makes a new directory)", dir)
	}
	return nil
}

// DriveOptions configure Drive.
type DriveOptions struct {
	Config   Config
	NoSync   bool
	Progress func(Progress) // called at each checkpoint (nil: not)
	// Removed is called with each stale event scratch store of an
	// earlier, killed drive of the directory that Drive removed (nil: not).
	Removed func(path string)
	spillAt int // tests: Engine.spillAt
}

// DriveReport says what Drive did and how the runs ended.
type DriveReport struct {
	Dir      string                  `json:"dir"`
	Shards   int                     `json:"shards"`
	From     int64                   `json:"from_ms"`
	Now      int64                   `json:"now_ms"`
	Recovery *journal.RecoveryReport `json:"recovery,omitempty"`
	Census   *Census                 `json:"census"`
	Stats    Stats                   `json:"stats"`
	Elapsed  float64                 `json:"elapsed_s"`
}

// Drive opens a closed data directory as the engine does (recovery), runs
// every run to completion on the virtual clock — delivering messages,
// firing timers, feeding the scripted signals, updates and async answers —
// then checkpoints and closes it.
func Drive(ctx context.Context, fs vfs.FS, dir string, o DriveOptions) (*DriveReport, error) {
	start := time.Now()
	db, rec, err := journal.Open(fs, dir, journal.OpenOptions{NoSync: o.NoSync, Evict: true})
	if err != nil {
		return nil, err
	}
	e := newEngine(dbBackend{db}, o.Config)
	e.progress = o.Progress
	e.spillAt = o.spillAt
	err = removeStaleEventStores(fs, dir, o.Removed)
	if err == nil {
		e.scratch, err = openScratch(fs, filepath.Clean(dir)+scratchSuffix+"-"+randomSuffix())
	}
	from := e.now
	if err == nil {
		e.recover()
		// Drive reports the runs it starts, not e.started, which counts
		// from the next run numbers and so counts every run ever started
		// there (and more after a reshard renumbered runs above them).
		if before := e.started; o.Progress != nil {
			e.progress = func(p Progress) { p.Started -= before; o.Progress(p) }
		}
		e.b.evict(e.cfg.MaxResident / 2)
		from = e.now
		err = e.recErr
		if err == nil {
			err = e.Drive(ctx)
		}
	}
	var progress func(done, total int)
	if err == nil {
		progress = censusProgress(o.Progress, len(db.Shards)) // closing flushes every store
	}
	if cerr := errors.Join(db.Close(), e.scratch.close()); err == nil {
		err = cerr
	}
	var census *Census
	if err == nil {
		census, err = censusOfDir(ctx, fs, dir, len(db.Shards), progress)
	}
	if err != nil {
		return nil, fmt.Errorf("sim drive %s: %w", dir, err)
	}
	return &DriveReport{Dir: dir, Shards: len(db.Shards), From: from, Now: e.now, Recovery: rec,
		Census: census, Stats: e.stats, Elapsed: time.Since(start).Seconds()}, nil
}

// NewEngine returns an engine over an open directory, recovered from it
// (its pending events and clock): the caller can answer completions
// (Engine.Complete), Drive it, and then close the DB.
func NewEngine(db *journal.DB, cfg Config) *Engine {
	e := newEngine(dbBackend{db}, cfg)
	e.recover()
	return e
}

// NewMemEngine returns an engine over in-memory shards (for tests of other
// packages: a reshard's output can be driven without a directory). Ops
// are applied with Shard.Apply; checkpoints do nothing.
func NewMemEngine(shards []*model.Shard, cfg Config) *Engine {
	e := newEngine(&memBackend{sh: shards}, cfg)
	e.recover()
	return e
}

// GenerateShards runs gen's workload on in-memory shards and returns them
// as a directory would recover them (no log, no files).
func GenerateShards(ctx context.Context, o GenOptions) ([]*model.Shard, error) {
	o, err := o.check()
	if err != nil {
		return nil, err
	}
	b := newMemBackend(o.Shards)
	e := newEngine(b, o.Config)
	e.progress = o.Progress
	e.recover()
	if err := e.generate(ctx, o); err != nil {
		return nil, err
	}
	return b.sh, nil
}
