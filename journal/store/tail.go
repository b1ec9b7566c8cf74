package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/wal"
)

// A shard's log tail and its store's checkpoint header: what a
// ShardReader needs besides the store. The directory layer (package
// journal) reads the tails from the shared log (ReadTails); this file
// only holds them, and the error for an entry that does not apply.

// TailEntry is one log entry of a shard after its checkpoint.
type TailEntry struct {
	LSN uint64
	Pos wal.Position // the batch holding it (for errors)
	Op  model.Op
}

// ShardTail is one shard's log entries after its checkpoint, in LSN order:
// Entries[i] has LSN CheckpointLSN+1+i.
type ShardTail struct {
	Shard         int
	CheckpointLSN uint64 // the LSN of the checkpoint (store header) the tail follows
	Entries       []TailEntry
	Bytes         int64 // the entries' encoded size in the log
}

// LSN is the shard's LSN after its tail.
func (t *ShardTail) LSN() uint64 { return t.CheckpointLSN + uint64(len(t.Entries)) }

// ReadHeader reads the checkpoint header of shard's store in dir (a
// directory of count shards) and checks that it names that shard and count.
// The store is opened read-only and closed again; nothing is written. The
// caller holds the directory's lock.
func ReadHeader(fs vfs.FS, dir string, shard, count int) (model.CheckpointHeader, error) {
	return readHeader(fs, dir, shard, count, nil, nil)
}

// readHeader is ReadHeader with the store's block cache (nil: a cache of
// its own); with raw not nil it also measures the store in the same open
// (*raw: storeRawBytes).
func readHeader(fs vfs.FS, dir string, shard, count int, cache *pebble.Cache, raw *uint64) (model.CheckpointHeader, error) {
	if shard < 0 || shard >= count {
		return model.CheckpointHeader{}, fmt.Errorf("shard %d: the directory has shards 0..%d", shard, count-1)
	}
	path := StoreDir(fs, dir, shard)
	store, err := OpenStore(fs, path, cache, true, false)
	if err != nil {
		return model.CheckpointHeader{}, err
	}
	hdr, err := readStoreHeader(store, path, shard, count)
	if err == nil && raw != nil {
		*raw, err = storeRawBytes(store, path)
	}
	if cerr := store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing shard store %s: %w", path, cerr)
	}
	return hdr, err
}

// ReadHeaders reads the checkpoint headers of the count shards of dir
// (ReadHeader, shard by shard), stopping when ctx is done. The stores share
// one block cache: a store opened with none makes a cache of its own
// (pebble's cache.New: at 20k runs 8 -> 16, a reshard reading the headers
// of its 8 old and 16 new shards spent 3.7 of those reads' 17.6 ms of CPU
// making caches), and each open reads only its header's few blocks.
func ReadHeaders(ctx context.Context, fs vfs.FS, dir string, count int) ([]model.CheckpointHeader, error) {
	return readHeaders(ctx, fs, dir, count, nil)
}

// ReadHeadersRaw is ReadHeaders that also measures each store in the open
// that reads its header: raw[i] is what ShardReader.RawBytes says of
// shard i's store. A reshard's space check needs that figure of every old
// store before it starts, and opening a reader for it was one open more
// of each (about 1% of a 100k-run reshard's CPU).
func ReadHeadersRaw(ctx context.Context, fs vfs.FS, dir string, count int) ([]model.CheckpointHeader, []uint64, error) {
	raw := make([]uint64, count)
	headers, err := readHeaders(ctx, fs, dir, count, raw)
	if err != nil {
		return nil, nil, err
	}
	return headers, raw, nil
}

// readHeaders is ReadHeaders, measuring the stores into raw when it is not
// nil.
func readHeaders(ctx context.Context, fs vfs.FS, dir string, count int, raw []uint64) ([]model.CheckpointHeader, error) {
	cache := pebble.NewCache(headerCacheBytes)
	defer cache.Unref()
	headers := make([]model.CheckpointHeader, count)
	for i := range headers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var r *uint64
		if raw != nil {
			r = &raw[i]
		}
		var err error
		if headers[i], err = readHeader(fs, dir, i, count, cache, r); err != nil {
			return nil, err
		}
	}
	return headers, nil
}

// headerCacheBytes is the block cache ReadHeaders' stores share: a
// header is a key in a block or two of each store.
const headerCacheBytes = 1 << 20

// readStoreHeader reads and checks the "H" key of an open store.
func readStoreHeader(store *pebble.DB, path string, shard, count int) (_ model.CheckpointHeader, err error) {
	defer RecoverStoreFatal(path, &err)
	val, closer, err := store.Get(headerKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return model.CheckpointHeader{}, &StoreError{Path: path, Err: errors.New("no checkpoint header (key \"H\")")}
	}
	if err != nil {
		return model.CheckpointHeader{}, WrapStoreError(path, "reading", err)
	}
	hdr, err := model.DecodeHeader(val)
	closer.Close()
	if err != nil {
		return hdr, &StoreError{Path: path, Key: StoreKey{Kind: KeyHeader}.String(), Err: err}
	}
	if err := CheckHeader(&hdr, shard, count); err != nil {
		return hdr, &StoreError{Path: path, Err: err}
	}
	return hdr, nil
}

// CheckHeader checks a checkpoint header read from shard index's store in
// a directory of count shards.
func CheckHeader(hdr *model.CheckpointHeader, index, count int) error {
	switch {
	case hdr.Shard != index:
		return fmt.Errorf("the checkpoint header says shard %d, but the store is shard %d's", hdr.Shard, index)
	case hdr.Count != count:
		return fmt.Errorf("the checkpoint header says %d shards, but fusee.meta says %d", hdr.Count, count)
	case hdr.NextRun == 0 || hdr.NextRun > model.NoSuchRun || hdr.NextSeq == 0:
		return fmt.Errorf("the checkpoint header has next run %d and next outbox seq %d", hdr.NextRun, hdr.NextSeq)
	case hdr.Gen == 0:
		return errors.New("the checkpoint header has store generation 0")
	}
	return nil
}

// LogError is a log entry that recovery cannot use although the log's
// framing and chain are intact: it does not decode, it does not fit its
// shard's state, or its shard's LSNs have a gap. The log or a store is
// damaged.
type LogError struct {
	Pos   wal.Position // the batch holding the entry
	Shard int
	LSN   uint64
	Err   error
}

func (e *LogError) Error() string {
	return fmt.Sprintf("log batch at %s, shard %d, LSN %d: %v; the log and the shard's store disagree: restore the data directory from a backup",
		e.Pos, e.Shard, e.LSN, e.Err)
}

func (e *LogError) Unwrap() error { return e.Err }
