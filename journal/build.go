package journal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
)

// Building: a directory created with CreateOptions.Build is being written
// under a name no reader opens (gen's <dir>.gen-tmp-*) and is thrown away
// unless it is closed cleanly. Its stores then need no crash recovery of
// their own until Close: they run without a pebble WAL (Close flushes
// every memtable into synced sstables, which is all a reopen needs), with
// larger memtables and a larger block cache, bloom filters for the point
// reads of evicted state (most ID index and dedup lookups of a generator
// are misses), and fewer, larger L0 compactions. The files they leave are
// ordinary pebble stores, read with the ordinary options.
//
// While it is built, each store holds its runs in the build layout
// (store/buildlayout.go): a run's entry and journal as one value under
// its entry key. An evicting engine then reads a run back with one point
// read, which the bloom filters serve, instead of an iterator merging
// every L0 table, and its checkpoints write and delete one key per run
// instead of one per record. Close rewrites each store into the store
// layout (store.FinishBuild: sorted sstables, checked, ingested, synced)
// in place of flushing its memtable; the rewritten stores' keys and
// values are those ordinary checkpoints would have left, and their tables
// are all in the last level.
//
// Nor do they take pebble's tombstone-density compactions: a generator's
// checkpoints delete many keys (the records of tombstoned runs, fired
// timers, acknowledged messages), so nearly every table it flushes has
// tombstone-dense blocks, and those compactions rewrote each store's last
// level again and again (at 1M runs, 8 shards: 19 such compactions per
// store and no other kind, about a quarter of gen's CPU). Without them a
// store compacts when its L0 reaches buildL0Compact files (once per store
// at 1M runs); the tombstones it keeps are dropped by later compactions,
// as in any store. Reading evicted state back through more L0 tables
// costs part of what that saves: net, 9% less CPU at 1M runs
// (bench/results/gen.md; a lower L0 threshold or no compaction at all
// cost more).

// Sizes of a directory being built: a block cache for the index, filter
// and recently read data blocks of the read-backs, and memtables sharing
// buildMemtables (each 2 to 32 MiB; buildSizes).
//
// Pebble reserves every memtable it allocates (the mutable one, those
// waiting to be flushed and the one it keeps for reuse) out of the block
// cache, so the cache is made larger by what the memtables may reserve:
// with a cache of buildCacheSize alone, the memtables' reservations left
// it no room and every block read missed (measured at 300k runs: 1.1M
// misses, no hit; with the reservation added, 89% hits). 64 MiB of blocks
// did as well as 128 MiB at 300k runs (40.4 and 40.5 s of CPU, 701 and
// 694 MiB peak RSS), and keeps gen's peak further from a GiB.
//
// The memtables were 128 MiB in all (16 MiB a store at 8 shards) while
// runs were stored a record a key: smaller ones meant more L0 tables,
// whose compactions and iterator read-backs cost more than the memory
// saved. With the build layout's one key per run, reads are point reads
// through bloom filters and compactions are a few seconds at 1M runs, and
// 4 MiB a store cost no more CPU than 16 MiB (one run each at 1M runs,
// 8 shards: 92.4 and 91.7 s) for 210 MiB less peak RSS (597 and 807 MiB).
//
// Since session 18 the blocks are 32 MiB and the memtables 24 MiB in all
// (were 64 and 32), with fewer resident runs (sim's MaxResident) and a
// lower Go heap limit for gen: together, gen's peak at 1M runs, 8 shards
// went from 427 to 248 MiB for 16% more CPU (medians of four alternating
// pairs, bench/results/gen9.md). In a cgo build these are C memory, and
// with a 128 MiB cache they were, beside the Go heap, most of the peak.
//
// The smaller sizes cost more as the directory grows (2M runs: 1.34x the
// CPU of the larger ones, against 1.15x at 1M), so a directory built to
// hold more than LargeBuildRuns runs (CreateOptions.BuildRuns) keeps the
// larger ones: 64 MiB of blocks and 32 MiB of memtables.
const (
	buildCacheSize      = 32 << 20
	buildMemtables      = 24 << 20
	largeBuildCacheSize = 64 << 20
	largeBuildMemtables = 32 << 20
	buildL0Compact      = 16
	buildBloomBits      = 10
)

// LargeBuildRuns is the run count past which a directory is built with
// the larger sizes above, and gen keeps more runs resident and a higher
// heap limit (sim's MaxResident, cli's genBaseLimit): up to it, gen of
// 1M runs stays within 256 MiB; past it, memory is traded back for speed.
const LargeBuildRuns = 1_500_000

// LargeBuild says whether a directory built to hold runs runs is built
// with the larger sizes.
func LargeBuild(runs int) bool { return runs > LargeBuildRuns }

// buildSizes are the memory sizes of a directory being built: blocks
// for the cache and memtables shared by its stores.
type buildSizes struct{ cache, memtables int64 }

// buildSizesFor gives the sizes of a directory built to hold runs runs
// (0: not known; the smaller sizes).
func buildSizesFor(runs int) buildSizes {
	if LargeBuild(runs) {
		return buildSizes{largeBuildCacheSize, largeBuildMemtables}
	}
	return buildSizes{buildCacheSize, buildMemtables}
}

// memTableSize is the memtable size of each store of a directory of
// shards shards being built (2 to 32 MiB).
func (z buildSizes) memTableSize(shards int) uint64 {
	return uint64(min(max(z.memtables/int64(shards), 2<<20), 32<<20))
}

// cacheTotal is the cache created for a directory of shards shards being
// built: the blocks plus two memtables per store (the mutable one and
// the one kept for reuse).
func (z buildSizes) cacheTotal(shards int) int64 {
	return z.cache + 2*int64(shards)*int64(z.memTableSize(shards))
}

// tuneForBuild changes a store's options for a directory of shards
// shards being built with sizes z.
func tuneForBuild(o *pebble.Options, shards int, z buildSizes) {
	o.DisableWAL = true
	o.MemTableSize = z.memTableSize(shards)
	o.L0CompactionThreshold = buildL0Compact
	o.L0CompactionFileThreshold = 4 * buildL0Compact
	o.L0StopWritesThreshold = 8 * buildL0Compact
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(buildBloomBits)
	}
	o.Experimental.TombstoneDenseCompactionThreshold = -1 // off
	// The tables of a store being built are read back by the same
	// process, often, and rewritten at Close (finishBuild), which
	// compresses the tables it leaves: compressing them here cost CPU at
	// every flush, compaction and block read (at 1M runs, 8 shards, one
	// run each: 79.9 s of CPU without, 91.7 s with Snappy).
	for i := range o.Levels {
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
}

// openShardStore opens shard i's store for the DB, read-write unless the
// DB is read-only.
func (db *DB) openShardStore(i int) (_ *pebble.DB, err error) {
	path := store.StoreDir(db.FS, db.Dir, i)
	if !db.build {
		return store.OpenStore(db.FS, path, db.cache, db.readOnly, false)
	}
	o := store.StoreOptions(db.FS, db.cache, db.readOnly, false)
	tuneForBuild(o, len(db.stores), db.buildSizes)
	return store.OpenStoreWith(path, o, false)
}

// finishBuild rewrites every store of a directory being built from the
// build layout into the store layout, a few stores at a time, and closes
// the working stores. A store that fails leaves the directory unusable;
// a directory being built is thrown away then (CreateOptions.Build).
func (db *DB) finishBuild() error {
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, runtime.GOMAXPROCS(0))
		errs = make([]error, len(db.stores))
	)
	for i := range db.stores {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = db.finishBuildStore(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// finishBuildStore writes shard i's store anew beside the working one
// (<store>.final), closes and removes the working store, renames the new
// one into its place and syncs the shard directory.
func (db *DB) finishBuildStore(i int) error {
	path := store.StoreDir(db.FS, db.Dir, i)
	final := path + ".final"
	if err := store.FinishBuild(db.FS, db.stores[i], path, final); err != nil {
		return fmt.Errorf("finishing shard %d: %w", i, err)
	}
	st := db.stores[i]
	db.stores[i] = nil
	if err := st.Close(); err != nil {
		return fmt.Errorf("closing shard store %s: %w", path, err)
	}
	if err := db.FS.RemoveAll(path); err != nil {
		return fmt.Errorf("finishing shard %d: %w", i, err)
	}
	if err := db.FS.Rename(final, path); err != nil {
		return fmt.Errorf("finishing shard %d: %w", i, err)
	}
	return meta.SyncDir(db.FS, store.ShardDir(db.FS, db.Dir, i))
}
