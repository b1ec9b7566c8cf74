package journal

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
)

// This file is the contract between the engine (the simulator under
// journal/sim), the checks (inspect, verify, dump) and the persistence
// layer: a data directory opened as a DB. Recovery is in recover.go, the
// stores in package journal/store, the layout in dir.go; docs/format.md
// describes the bytes.

// ErrReadOnly is returned by Commit and Checkpoint on a DB opened
// read-only.
var ErrReadOnly = errors.New("the data directory is open read-only")

// ShardOp is one log entry addressed to a shard.
type ShardOp struct {
	Shard int
	Op    model.Op
}

// CreateOptions configure a new data directory.
type CreateOptions struct {
	Shards int
	Now    int64 // virtual creation time (ms), recorded in checkpoints
	NoSync bool  // bulk generation: skip per-commit fsyncs; Close syncs everything
	// SegmentSize is the log's segment size target (0: wal's default).
	SegmentSize int64
	// LogID is the new shared log's ID (wal.Options.LogID), which chains
	// into every batch's checksum; 0 picks a random one. A generator that
	// must write the same bytes for the same input derives it from that
	// input.
	LogID uint64
	// Build says the directory is built under a temporary name and thrown
	// away unless Close succeeds: its stores skip their own crash
	// recovery until Close (build.go). Implies NoSync.
	Build bool
	// BuildRuns is how many runs a directory being built is to hold (0:
	// not known). Past LargeBuildRuns its stores get larger caches and
	// memtables (build.go).
	BuildRuns int
}

// OpenOptions configure how an existing directory is opened.
type OpenOptions struct {
	// ReadOnly recovers without ever ticking: no log append, no checkpoint,
	// no truncation, nothing expires; the directory's bytes do not change.
	ReadOnly bool
	NoSync   bool
	// SegmentSize is the log's segment size target (0: wal's default).
	SegmentSize int64
	// Evict recovers without loading runs, for an engine that evicts
	// (recover_evict.go): the DB starts and stays evicting.
	Evict bool
}

// RecoveryReport says what recovery found.
type RecoveryReport struct {
	Shards []ShardRecovery
	// TornTail describes the log tail recovery dropped ("" none): bytes
	// after the last intact batch of a log whose writer stopped without
	// closing it. Torn is the same in detail (nil none).
	TornTail string
	Torn     *wal.TornTail
	// LogEnding says how the log ends: closed cleanly (its last batches
	// are vouched for, and damage to them is an error), stopped without
	// closing (a crash or kill: a torn tail is what a batch being written
	// leaves), or without close evidence (a log an older fusee closed).
	LogEnding wal.Ending
	// LogFrom is where the log was read from (the earliest checkpoint's
	// position) and LogEnd where its last good batch ends.
	LogFrom, LogEnd wal.Position
	// Batches is how many log batches were read from LogFrom.
	Batches int
	// WholeLog says the read began at the log's first segment
	// (wal.Tail.Whole: LogFrom was in it): every batch of the log was
	// read and checked, as ReadLogEnd reads them, and TornTail, Torn,
	// LogEnding and LogEnd are what ReadLogEnd would return. ReadTails
	// sets it.
	WholeLog bool
}

// ShardRecovery is one shard's recovery.
type ShardRecovery struct {
	Shard         int
	CheckpointLSN uint64
	Replayed      int // log entries applied after the checkpoint
	LSN           uint64
	// Skipped counts entries read at or below the checkpoint LSN: already
	// in the store.
	Skipped int
}

// DB is an open data directory: its lock, its meta file, its shared log
// and one store per shard, with every shard's state recovered in memory.
// Memory is O(directory size): every run's journal is loaded. A DB is not
// safe for concurrent use.
type DB struct {
	Dir    string
	FS     vfs.FS
	Shards []*model.Shard
	Now    int64 // the virtual clock as last checkpointed or set

	lock       *meta.Dir
	readOnly   bool
	noSync     bool
	cache      *pebble.Cache
	stores     []*pebble.DB
	headers    []model.CheckpointHeader // each shard's current checkpoint
	tails      []tailStats              // each shard's log entries after its checkpoint
	log        *wal.Writer              // nil when read-only
	created    int64
	err        error // set once the in-memory state may be ahead of the log
	closed     bool
	build      bool       // CreateOptions.Build (build.go)
	buildSizes buildSizes // the sizes of a directory being built (CreateOptions.BuildRuns)
	evictKeep  int        // running runs each shard keeps across a checkpoint (evict.go)
	evict      bool       // drop what the stores hold from memory after each checkpoint (evict.go)
	// entryBuf and opBuf are the previous Commit's entries and their
	// encodings, for the next to reuse: the log copies a batch's bytes
	// before Append returns, and they were a tenth of gen's allocation.
	entryBuf []wal.Entry
	opBuf    []byte
}

// tailStats counts one shard's log entries after its checkpoint.
type tailStats struct {
	entries int
	bytes   int64
}

// cacheSize is the block cache shared by a directory's stores.
const cacheSize = 32 << 20

// Create makes a new, empty data directory and opens it: fusee.meta
// (format=local, log=3, shards=N), LOCK, an empty shared log and one empty
// store per shard whose checkpoint is at LSN 0. dir must not exist or be
// empty. Everything is synced; fusee.meta is written last, so a crash
// during Create leaves no data directory (only files to delete).
func Create(fs vfs.FS, dir string, opts CreateOptions) (*DB, error) {
	if opts.Shards < 1 || opts.Shards > meta.MaxShards {
		return nil, fmt.Errorf("creating %s: %d shards: a data directory has 1 to %d", dir, opts.Shards, meta.MaxShards)
	}
	shards := make([]*model.Shard, opts.Shards)
	for i := range shards {
		shards[i] = model.NewShard(i, opts.Shards)
	}
	return CreateFrom(fs, dir, shards, opts)
}

// CreateFrom makes a new data directory whose shards start with the given
// states, and opens it; Create is CreateFrom with empty shards. Each
// store is built by WriteShardStore (sorted sstables, ingested), so this is
// how a generator writes a large directory fast. shards[i] must be shard i
// of len(shards) (opts.Shards is ignored) with LSN 0: the directory starts
// a new log, whose LSNs start at 1. Each store's header gets its shard's
// StoreGen (1 for a NewShard; a rebuild passes shards with the old
// generation + 1). The shards are not modified or retained.
func CreateFrom(fs vfs.FS, dir string, shards []*model.Shard, opts CreateOptions) (*DB, error) {
	n := len(shards)
	if n < 1 || n > meta.MaxShards {
		return nil, fmt.Errorf("creating %s: %d shards: a data directory has 1 to %d", dir, n, meta.MaxShards)
	}
	for i, s := range shards {
		if s.Index != i || s.Count != n || s.LSN != 0 {
			return nil, fmt.Errorf("creating %s: shards[%d] is shard %d of %d at LSN %d; want shard %d of %d at LSN 0", dir, i, s.Index, s.Count, s.LSN, i, n)
		}
	}
	fs = meta.FS(fs) // the stores' LOCK files are flock(2) locks too
	m := meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: n}
	walOpts := wal.Options{NoSync: opts.NoSync, SegmentSize: opts.SegmentSize, LogID: opts.LogID}
	var w *wal.Writer
	build := func() error {
		var err error
		if w, err = wal.Create(fs, wal.Dir(fs, dir), walOpts); err != nil {
			return err
		}
		if err := w.Sync(); err != nil {
			return err
		}
		pos, err := w.NextPosition()
		if err != nil {
			return err
		}
		if err := fs.MkdirAll(fs.PathJoin(dir, "shards"), 0o755); err != nil {
			return err
		}
		for i, s := range shards {
			if err := fs.MkdirAll(store.ShardDir(fs, dir, i), 0o755); err != nil {
				return err
			}
			hdr := model.CheckpointHeader{Log: pos, Now: opts.Now, Created: opts.Now} // gen: s.StoreGen
			if err := store.WriteShardStore(fs, store.StoreDir(fs, dir, i), s, hdr); err != nil {
				return err
			}
			if err := meta.SyncDir(fs, store.ShardDir(fs, dir, i)); err != nil {
				return err
			}
		}
		if err := meta.SyncDir(fs, fs.PathJoin(dir, "shards")); err != nil {
			return err
		}
		return meta.SyncDir(fs, dir)
	}
	lock, err := meta.Create(fs, dir, m, build)
	if err != nil {
		if w != nil {
			_ = w.Close()
		}
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	db := &DB{Dir: dir, FS: fs, Now: opts.Now, lock: lock, noSync: opts.NoSync || opts.Build, build: opts.Build, buildSizes: buildSizesFor(opts.BuildRuns), created: opts.Now, log: w}
	if err := db.openStores(n); err != nil {
		db.closeAll(false)
		return nil, err
	}
	for i := range db.Shards {
		s, hdr, err := store.LoadShard(db.stores[i], store.StoreDir(fs, dir, i), i, n)
		if err != nil {
			db.closeAll(false)
			return nil, err
		}
		s.TrackChanges()
		db.Shards[i], db.headers[i] = s, hdr
	}
	return db, nil
}

// openStores opens every shard's store.
func (db *DB) openStores(n int) error {
	size := int64(cacheSize)
	if db.build {
		size = db.buildSizes.cacheTotal(n)
	}
	db.cache = pebble.NewCache(size)
	db.Shards = make([]*model.Shard, n)
	db.stores = make([]*pebble.DB, n)
	db.headers = make([]model.CheckpointHeader, n)
	db.tails = make([]tailStats, n)
	for i := range n {
		st, err := db.openShardStore(i)
		if err != nil {
			return err
		}
		db.stores[i] = st
	}
	return nil
}

// Meta is the directory's fusee.meta as read when it was opened.
func (db *DB) Meta() meta.Meta { return db.lock.Meta() }

// ReadOnly reports whether the DB was opened read-only.
func (db *DB) ReadOnly() bool { return db.readOnly }

// Commit appends ops to the log as one batch (one section per shard) and
// applies them to the shards' states; it returns once the batch is synced
// (in NoSync mode, at the next Checkpoint or Close). Each op is applied
// first, in order, so that an op that does not fit its shard never reaches
// the log, where it would stop every later recovery. Such an op, or a
// failed log write, leaves the memory ahead of the log: the DB then
// refuses everything but Close, and the directory reopens to the state of
// the last acknowledged Commit.
func (db *DB) Commit(ops []ShardOp) error {
	if err := db.writable(); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	entries := slices.Grow(db.entryBuf[:0], len(ops))[:len(ops)]
	// The entries' encodings share one buffer (an allocation per op was a
	// good part of gen's); an entry's bytes stay where they were written
	// when the buffer grows.
	buf := slices.Grow(db.opBuf[:0], 64*len(ops))
	defer func() { db.entryBuf, db.opBuf = entries, buf[:0] }()
	for i := range ops {
		sop := &ops[i]
		if sop.Shard < 0 || sop.Shard >= len(db.Shards) {
			return fmt.Errorf("commit: op %d is for shard %d, but the directory has %d shards", i, sop.Shard, len(db.Shards))
		}
	}
	for i := range ops {
		sop := &ops[i]
		s := db.Shards[sop.Shard]
		if err := s.Apply(&sop.Op); err != nil {
			if lerr := db.loadErr(); lerr != nil {
				err = lerr
			}
			db.err = fmt.Errorf("commit refused op %d (%s on shard %d): %w; the in-memory state is now ahead of the log: close and reopen the directory", i, sop.Op.Kind, sop.Shard, err)
			return db.err
		}
		s.LSN++
		start := len(buf)
		buf = model.EncodeOp(buf, &sop.Op)
		entries[i] = wal.Entry{Shard: sop.Shard, Data: buf[start:len(buf):len(buf)]}
	}
	if _, err := db.log.Append(entries); err != nil {
		db.err = fmt.Errorf("commit: writing the log: %w; the in-memory state is now ahead of the log: close and reopen the directory", err)
		return db.err
	}
	for i := range entries {
		e := &entries[i]
		t := &db.tails[e.Shard]
		t.entries++
		t.bytes += int64(len(e.Data))
		// The log numbers each shard's entries in the order given, as
		// Commit counted them above; the last of each shard's must agree.
		if s := db.Shards[e.Shard]; db.log.NextLSN(e.Shard) != s.LSN+1 {
			db.err = fmt.Errorf("commit: shard %d is at LSN %d but its log entries reach %d: close and reopen the directory",
				e.Shard, s.LSN, db.log.NextLSN(e.Shard)-1)
			return db.err
		}
	}
	return nil
}

func (db *DB) writable() error {
	switch {
	case db.closed:
		return errors.New("the data directory is closed")
	case db.readOnly:
		return ErrReadOnly
	case db.err == nil && db.evict:
		// A failed read-back may have made the engine decide on a
		// state it could not see.
		if err := db.loadErr(); err != nil {
			db.err = err
		}
	}
	return db.err
}

// SetNow records the engine's virtual clock (persisted at checkpoints).
func (db *DB) SetNow(now int64) { db.Now = now }

// checkpointParallelism bounds how many stores commit at once: each commit
// waits for an fsync, so a few in flight overlap them.
const checkpointParallelism = 8

// checkpointInFlight is how many stores commit a checkpoint at once. The
// stores of a directory being built commit without syncing, so more
// commits in flight than processors overlap nothing; but each holds its
// batch (every changed run encoded whole) on the Go heap, at the moment
// the engine's resident runs are most: at 1M runs, 8 shards, the eight
// batches were 16 MB of a live heap of 93 MB.
func (db *DB) checkpointInFlight() int {
	if db.build {
		return min(checkpointParallelism, runtime.GOMAXPROCS(0))
	}
	return checkpointParallelism
}

// Checkpoint makes every shard's store reflect its state up to its LSN and
// lets the log drop what no checkpoint still needs. It first syncs the log
// (so no checkpoint can point past its durable end), then writes each
// changed shard's store in one atomic, synced pebble batch: the changed
// keys and the new header. A shard with no change since its checkpoint is
// rewritten only if its header pins a log segment that could otherwise be
// removed. Last, the log's segments before every header's position are
// deleted. A crash at any point leaves each store at its old or its new
// checkpoint, and the log holds what both need.
func (db *DB) Checkpoint() error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := db.log.Sync(); err != nil {
		db.err = fmt.Errorf("checkpoint: syncing the log: %w", err)
		return db.err
	}
	pos, err := db.log.NextPosition()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, db.checkpointInFlight())
		errs = make([]error, len(db.Shards))
	)
	for i, s := range db.Shards {
		old := db.headers[i]
		if s.PendingChanges() == 0 && old.LSN == s.LSN && old.Log.Segment == pos.Segment {
			continue
		}
		hdr := store.HeaderFor(s, model.CheckpointHeader{Log: pos, Now: db.Now, Created: db.created, Seq: old.Seq + 1})
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = db.checkpointShard(i, &hdr)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// A store that failed may or may not have its new checkpoint; its
		// change tracking no longer says what it lacks.
		db.err = fmt.Errorf("checkpoint: %w", err)
		return db.err
	}
	oldest := pos
	for _, h := range db.headers {
		if comparePos(h.Log, oldest) < 0 {
			oldest = h.Log
		}
	}
	if err := wal.RemoveBefore(db.FS, wal.Dir(db.FS, db.Dir), oldest); err != nil {
		return fmt.Errorf("checkpoint: truncating the log: %w", err)
	}
	if db.evict {
		for _, s := range db.Shards {
			s.Evict(db.evictKeep)
		}
	}
	return nil
}

// checkpointShard writes shard i's changes and header hdr in one synced
// batch.
func (db *DB) checkpointShard(i int, hdr *model.CheckpointHeader) (err error) {
	defer store.RecoverStoreFatal(store.StoreDir(db.FS, db.Dir, i), &err)
	s := db.Shards[i]
	b := db.stores[i].NewBatch()
	defer b.Close()
	write := store.WriteChanges
	if db.build {
		write = store.WriteBuildChanges // build.go
	}
	if err := write(b, db.stores[i], s, hdr); err != nil {
		return fmt.Errorf("shard %d: %w", i, err)
	}
	opt := pebble.Sync
	if db.build {
		opt = pebble.NoSync // no store WAL: Close flushes and syncs
	}
	if err := b.Commit(opt); err != nil {
		return fmt.Errorf("shard store %s: %w", store.StoreDir(db.FS, db.Dir, i), err)
	}
	s.TrackChanges()
	db.headers[i] = *hdr
	db.tails[i] = tailStats{}
	return nil
}

// comparePos orders log positions.
func comparePos(a, b wal.Position) int {
	switch {
	case a.Segment != b.Segment:
		if a.Segment < b.Segment {
			return -1
		}
		return 1
	case a.Offset < b.Offset:
		return -1
	case a.Offset > b.Offset:
		return 1
	}
	return 0
}

// Close flushes each store's memtable into an sstable (a read-write DB: so
// a closed directory holds no pebble WAL that the next open must replay),
// closes the stores, then syncs and closes the log, which records that the
// directory was closed cleanly, and releases the lock; it does not
// checkpoint. Calling it again does nothing.
func (db *DB) Close() error {
	if db.closed {
		return nil
	}
	var errs []error
	if db.build {
		errs = append(errs, db.finishBuild()) // build.go
	} else if !db.readOnly {
		for i, st := range db.stores {
			if err := flushStore(st, store.StoreDir(db.FS, db.Dir, i)); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	errs = append(errs, db.closeAll(errors.Join(errs...) == nil && !db.readOnly))
	return errors.Join(errs...)
}

// sweepStoreLogs opens a flushed, closed store and closes it again: on
// open pebble deletes the logs no memtable needs, and closing a store
// with nothing written leaves its new log empty.
func sweepStoreLogs(fs vfs.FS, path string) error {
	st, err := store.OpenStore(fs, path, nil, false, false)
	if err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("closing shard store %s: %w", path, err)
	}
	return nil
}

// flushStore writes a store's memtable to an sstable and syncs it, so that
// its pebble WAL holds nothing a later open must replay.
func flushStore(st *pebble.DB, path string) (err error) {
	defer store.RecoverStoreFatal(path, &err)
	if st == nil {
		return nil
	}
	if err := st.Flush(); err != nil {
		return fmt.Errorf("flushing shard store %s: %w", path, err)
	}
	return nil
}

func (db *DB) closeAll(sweep bool) error {
	db.closed = true
	var errs []error
	stores := len(db.stores)
	for i, st := range db.stores {
		if st != nil {
			if err := st.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing shard store %s: %w", store.StoreDir(db.FS, db.Dir, i), err))
			}
		}
	}
	db.stores = nil
	if sweep && len(errs) == 0 {
		// Pebble keeps the logs it flushed (to recycle them) until the
		// store is opened again: opening and closing each store once more,
		// still under the directory lock, lets pebble itself delete them.
		for i := range stores {
			if err := sweepStoreLogs(db.FS, store.StoreDir(db.FS, db.Dir, i)); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if db.cache != nil {
		db.cache.Unref()
		db.cache = nil
	}
	// The log's Close writes its clean-close evidence (docs/format-wal.md):
	// the last thing before the lock is released, once the stores are
	// closed.
	if db.log != nil {
		errs = append(errs, db.log.Close())
		db.log = nil
	}
	if db.lock != nil {
		errs = append(errs, db.lock.Close())
	}
	return errors.Join(errs...)
}
