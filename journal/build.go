package journal

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// Building: a directory created with CreateOptions.Build is being written
// under a name no reader opens (gen's <dir>.gen-tmp-*) and is thrown away
// unless it is closed cleanly. Its shards' stores need no crash recovery
// of their own, and need not even exist until Close: every checkpoint
// goes into one working store (below), and Close writes the shard stores
// from it. The files they leave are ordinary pebble stores, read with the
// ordinary options.

// Pebble settings of the working store: bloom filters for the point reads
// of evicted state (most ID index and dedup lookups of a generator are
// misses), and fewer, larger L0 compactions.
const (
	buildL0Compact = 16
	buildBloomBits = 10
)

// The working store: while a directory is built, its shards' stores do not
// exist. Every checkpoint writes into one pebble store, <dir>/build.work,
// that holds all the shards, each shard's keys under its shardPrefix; the
// engine reads evicted state back from it. Close writes each shard's store
// from it in one pass in key order (store.StoreWriter: sorted tables,
// ingested) and removes it. One store instead of one a shard means one
// memtable budget and one set of compactions for the directory, and the
// shard stores are written once, as sorted tables, instead of by every
// checkpoint's batches, flushes and compactions. The keys and values the
// shard stores end up with are the same either way: those of the last
// checkpoint.

// workStoreName is the working store's directory inside the directory
// being built.
const workStoreName = "build.work"

// Sizes of the working store: its memtable and its block cache for the
// read-backs' index, filter and data blocks. Pebble reserves every
// memtable it allocates out of the cache, so the cache is made larger by
// two of them (the mutable one and the one kept for reuse). Its
// tables are compressed as the shard stores' are (Snappy). Measured at
// 300k runs, 8 shards, beside main's 8 stores (memtables of 16 MiB each,
// 64 MiB of blocks): 32 MiB memtables took 21% more CPU than main, 64 MiB
// the same (34.8 / 34.1 s) at 648 / 727 MiB peak RSS; without compression
// (32 MiB) 42 s; LBaseMaxBytes 256 MiB or an L0 threshold of 4 changed
// nothing measurable.
const (
	workMemTable  = 64 << 20
	workCacheSize = 32 << 20
)

// shardPrefix is shard i's key prefix in the working store: its number,
// big-endian, so that the shards' key ranges follow each other in shard
// order (shardPrefix(i+1) bounds shard i's range).
func shardPrefix(i int) []byte { return []byte{byte(i >> 8), byte(i)} }

// shardStore is where shard i's keys are: its own store (no prefix), or
// the working store under shardPrefix(i); path names it in errors.
func (db *DB) shardStore(i int) (st *pebble.DB, pre []byte, path string) {
	if db.work != nil {
		return db.work, shardPrefix(i), db.workDir()
	}
	return db.stores[i], nil, store.StoreDir(db.FS, db.Dir, i)
}

func (db *DB) workDir() string { return db.FS.PathJoin(db.Dir, workStoreName) }

// checkEmpty refuses shards with any state: a directory is built from
// empty shards (the working store starts with their headers alone).
func checkEmpty(shards []*model.Shard) error {
	for i, s := range shards {
		if len(s.Runs)+len(s.ByID)+len(s.Outbox)+len(s.Seen)+len(s.Archive)+len(s.Timers) > 0 {
			return fmt.Errorf("shard %d is not empty: a directory is built (CreateOptions.Build) from empty shards", i)
		}
	}
	return nil
}

// startBuild opens the working store and starts n empty shards in it,
// each with its header: hdr with the shard's own numbers.
func (db *DB) startBuild(n int, hdr model.CheckpointHeader) (err error) {
	path := db.workDir()
	defer store.RecoverStoreFatal(path, &err)
	db.cache = pebble.NewCache(workCacheSize + 2*workMemTable)
	o := store.StoreOptions(store.NoSyncFS(db.FS), db.cache, false, true)
	o.DisableWAL = true
	o.MemTableSize = workMemTable
	o.L0CompactionThreshold = buildL0Compact
	o.L0CompactionFileThreshold = 4 * buildL0Compact
	o.L0StopWritesThreshold = 8 * buildL0Compact
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(buildBloomBits)
	}
	if db.work, err = store.OpenStoreWith(path, o, true); err != nil {
		return err
	}
	db.Shards = make([]*model.Shard, n)
	db.headers = make([]model.CheckpointHeader, n)
	db.tails = make([]tailStats, n)
	b := db.work.NewBatch()
	defer b.Close()
	for i := range n {
		s := model.NewShard(i, n)
		s.TrackChanges()
		db.Shards[i], db.headers[i] = s, store.HeaderFor(s, hdr)
		if err := store.WriteChangesUnder(b, db.work, shardPrefix(i), s, &db.headers[i]); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("working store %s: %w", path, err)
	}
	return nil
}

// finishBuild writes every shard's store from the working store, as of
// the last checkpoint, and removes the working store.
func (db *DB) finishBuild() error {
	for i := range db.Shards {
		path := store.StoreDir(db.FS, db.Dir, i)
		sw, err := store.NewStoreWriter(db.FS, path)
		if err != nil {
			return err
		}
		if err := db.StoreKeys(i, sw.Add); err != nil {
			sw.Abort()
			return fmt.Errorf("writing shard store %s: %w", path, err)
		}
		if err := sw.Finish(); err != nil {
			return err
		}
	}
	err := db.work.Close()
	db.work = nil
	if err != nil {
		return fmt.Errorf("closing working store %s: %w", db.workDir(), err)
	}
	return db.FS.RemoveAll(db.workDir())
}

// Discard closes a directory being built without writing its shard stores:
// for a build that failed or was interrupted, whose directory is removed
// next (writing the stores would only delay that). On any other DB it is
// Close.
func (db *DB) Discard() error {
	if db.work == nil || db.closed {
		return db.Close()
	}
	return db.closeAll(false)
}
