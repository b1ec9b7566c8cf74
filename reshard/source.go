package reshard

import (
	"context"
	"fmt"
	"runtime"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// A shardSource streams one shard's recovered state: what the engine's own
// recovery (checkpoint, store, log tail and the outputs the tail
// regenerates) says the shard holds, read-only, without ticking anything,
// one run at a time. store.ShardReader is the implementation.
type shardSource interface {
	Header() model.CheckpointHeader
	// Runs calls fn for every run in ascending number; archive is the
	// history of a tombstoned run (nil otherwise). fn must not modify
	// what it is given.
	Runs(ctx context.Context, fn func(r *model.Run, archive []model.Record) error) error
	// RawRuns is Runs with each run's records as checked bytes.
	RawRuns(ctx context.Context, fn func(r *store.RawRun) error) error
	// Recycle gives back a run RawRuns handed out, once nothing of it is
	// used any more: a later run may be read into its memory.
	Recycle(r *store.RawRun)
	// RunEntries is Runs without journals: who each run is.
	RunEntries(ctx context.Context, fn func(no model.RunNo, e model.RunEntry) error) error
	// RunEntryViews is RunEntries with each entry valid only until fn
	// returns.
	RunEntryViews(ctx context.Context, fn func(no model.RunNo, e model.RunEntry) error) error
	Outbox(fn func(m *model.Message) error) error
	Seen(fn func(msgID, workflowID string) error) error
	Index(fn func(workflowID string, no model.RunNo) error) error
	Timers(fn func(model.TimerKey) error) error
	// RawBytes is what the store's keys and values take uncompressed, at
	// most (the bound on what a sort of its content writes to scratch).
	RawBytes() (uint64, error)
	Close() error
}

// logTails reads the shared log of the count-shard directory dir once and
// returns every shard's entries after its checkpoint (small: bounded by
// how often the engine checkpoints), for openSource, and what the read
// found (journal.ReadTails). With raw not nil (count long) it measures
// each store in the open that reads its header (store.ReadHeadersRaw).
func logTails(ctx context.Context, fs vfs.FS, dir string, count int, raw []uint64) ([]store.ShardTail, *journal.RecoveryReport, error) {
	var headers []model.CheckpointHeader
	var err error
	if raw == nil {
		headers, err = store.ReadHeaders(ctx, fs, dir, count)
	} else {
		var measured []uint64
		headers, measured, err = store.ReadHeadersRaw(ctx, fs, dir, count)
		copy(raw, measured)
	}
	if err != nil {
		return nil, nil, err
	}
	tails, rep, err := journal.ReadTails(ctx, fs, dir, headers)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the log of %s: %w", dir, err)
	}
	return tails, rep, nil
}

// openSource opens shard i of the count shards of the directory at dir,
// read-only, with its log tail as an overlay, its blocks in cache (nil: a
// cache of its own) and its tables read through bufs (nil: a block at a
// time).
func openSource(fs vfs.FS, dir string, i, count int, tails []store.ShardTail, cache *pebble.Cache, bufs *store.ReadBuffers) (shardSource, error) {
	return store.OpenShardReaderWith(fs, dir, i, count, &tails[i], cache, bufs)
}

// source is openSource with a block cache of its own and the read
// buffers every store reader of r shares. Every store r reads is a closed
// directory's (the old shards, or the new ones once written), which
// nothing writes while it is open: what the buffers hold stays the
// file's.
//
// The readers shared one cache until session 19, so that their memory
// did not grow with the cores; but two workers reading at once then
// waited on its shards' locks (a trace of a 1M-run 8->3 plan pass: 2,157
// waits in 0.8 s, both cores busy but 1.4-1.5 of them working), and a
// store's blocks are read once, so sharing saves nothing. Each reader's
// cache is now its share of readerCacheBytes (readerCacheShare): the same
// memory, no lock shared. At 1M runs, 8->3 on two cores, four alternating
// pairs: 5.06 s of wall time against 5.44, 9.30 s of CPU against 9.58, the
// plan 0.52 s against 0.70.
func (r *resharder) source(dir string, i, count int, tails []store.ShardTail) (shardSource, error) {
	r.bufsOnce.Do(func() {
		r.readBufs = store.NewReadBuffers(readBuffers, readBufferBytes)
	})
	cache := pebble.NewCache(readerCacheShare(runtime.GOMAXPROCS(0)))
	defer cache.Unref() // the store holds its own reference while open
	return openSource(r.fs, dir, i, count, tails, cache, r.readBufs)
}

// readerCacheBytes is the block cache of the store readers open at once,
// at most, in all (each worker reads one store at a time): pebble's
// default cache size for one store.
const readerCacheBytes = 8 << 20

// readerCacheShare is each store reader's block cache on cores cores:
// readerCacheBytes among as many readers as the workers (at least two)
// read at once, at least 1 MiB each (a store's index and filter blocks
// for the reads in flight).
func readerCacheShare(cores int) int64 {
	return max(readerCacheBytes/int64(max(cores, 2)), 1<<20)
}

// readBuffers of readBufferBytes each are the store readers' read
// buffers (store.ReadBuffers): 2 MiB, a buffer for each of the streams
// two workers' iterators read at once (a few levels of the runs and of
// the archives each), 16 blocks of about 4 KiB a read.
const (
	readBuffers     = 32
	readBufferBytes = 64 << 10
)
