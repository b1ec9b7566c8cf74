package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/wal"
)

// Streamed recovery, part one: the log tails. A reshard reads every old
// shard of a closed directory in memory bounded by a budget, not by the
// data. Recovery (Open, RecoverShard) loads whole stores; instead, the
// reshard reads each store's checkpoint header (ReadHeader), reads the
// shared log once for all shards (ReadTails), and then streams each store
// with the tail as an overlay (ShardReader, shardreader.go). A tail is
// bounded by the checkpoints (everything before a shard's checkpoint is in
// its store), so the tails are held in memory whole.

// TailEntry is one log entry of a shard after its checkpoint.
type TailEntry struct {
	LSN uint64
	Pos wal.Position // the batch holding it (for errors)
	Op  Op
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
func ReadHeader(fs vfs.FS, dir string, shard, count int) (CheckpointHeader, error) {
	if shard < 0 || shard >= count {
		return CheckpointHeader{}, fmt.Errorf("shard %d: the directory has shards 0..%d", shard, count-1)
	}
	path := StoreDir(fs, dir, shard)
	store, err := openStore(fs, path, nil, true, false)
	if err != nil {
		return CheckpointHeader{}, err
	}
	hdr, err := readStoreHeader(store, path, shard, count)
	if cerr := store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing shard store %s: %w", path, cerr)
	}
	return hdr, err
}

// readStoreHeader reads and checks the "H" key of an open store.
func readStoreHeader(store *pebble.DB, path string, shard, count int) (_ CheckpointHeader, err error) {
	defer recoverStoreFatal(path, &err)
	val, closer, err := store.Get(headerKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return CheckpointHeader{}, &StoreError{Path: path, Err: errors.New("no checkpoint header (key \"H\")")}
	}
	if err != nil {
		return CheckpointHeader{}, storeError(path, "reading", err)
	}
	hdr, err := DecodeHeader(val)
	closer.Close()
	if err != nil {
		return hdr, &StoreError{Path: path, Key: StoreKey{Kind: KeyHeader}.String(), Err: err}
	}
	if err := checkHeader(&hdr, shard, count); err != nil {
		return hdr, &StoreError{Path: path, Err: err}
	}
	return hdr, nil
}

// checkHeader checks a checkpoint header read from shard index's store in
// a directory of count shards.
func checkHeader(hdr *CheckpointHeader, index, count int) error {
	switch {
	case hdr.Shard != index:
		return fmt.Errorf("the checkpoint header says shard %d, but the store is shard %d's", hdr.Shard, index)
	case hdr.Count != count:
		return fmt.Errorf("the checkpoint header says %d shards, but fusee.meta says %d", hdr.Count, count)
	case hdr.NextRun == 0 || hdr.NextRun > NoSuchRun || hdr.NextSeq == 0:
		return fmt.Errorf("the checkpoint header has next run %d and next outbox seq %d", hdr.NextRun, hdr.NextSeq)
	case hdr.Gen == 0:
		return errors.New("the checkpoint header has store generation 0")
	}
	return nil
}

// ReadTails reads the shared log of the log format 3 directory dir once,
// from the oldest checkpoint's position, and returns every shard's entries
// after its checkpoint: headers[i] is shard i's checkpoint header
// (ReadHeader), and len(headers) the directory's shard count. The entries
// are decoded and checked as recovery checks them (§8 of docs/format.md):
// no gap in a shard's LSNs, no entry for a shard the directory does not
// have, and each shard's entries in the log end exactly at its last LSN.
// They are not applied: a ShardReader applies them over its store, and a
// refusal is reported there. A torn, never-acknowledged tail is dropped and
// reported in RecoveryReport.TornTail, whose Shards say how many entries
// each shard has after its checkpoint.
//
// Nothing is written. The caller holds the directory's lock. ReadTails
// checks ctx between batches and returns ctx.Err() when it is done.
func ReadTails(ctx context.Context, fs vfs.FS, dir string, headers []CheckpointHeader) ([]ShardTail, *RecoveryReport, error) {
	n := len(headers)
	if n == 0 {
		return nil, nil, fmt.Errorf("reading the log tails of %s: no shard headers", dir)
	}
	tails := make([]ShardTail, n)
	lsns := make([]uint64, n)
	rep := &RecoveryReport{Shards: make([]ShardRecovery, n)}
	for i := range headers {
		hdr := &headers[i]
		if hdr.Shard != i || hdr.Count != n {
			return nil, nil, fmt.Errorf("reading the log tails of %s: headers[%d] is shard %d's of %d", dir, i, hdr.Shard, hdr.Count)
		}
		tails[i] = ShardTail{Shard: i, CheckpointLSN: hdr.LSN}
		lsns[i] = hdr.LSN
		rep.Shards[i] = ShardRecovery{Shard: i, CheckpointLSN: hdr.LSN, LSN: hdr.LSN}
		if i == 0 || comparePos(hdr.Log, rep.LogFrom) < 0 {
			rep.LogFrom = hdr.Log
		}
	}
	end, err := wal.Read(fs, wal.Dir(fs, dir), rep.LogFrom, func(b wal.Batch) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.Batches++
		for si := range b.Sections {
			sec := &b.Sections[si]
			if err := checkSectionShard(b.Pos, sec, n); err != nil {
				return err
			}
			t := &tails[sec.Shard]
			keep := func(lsn uint64, op *Op) error {
				t.Entries = append(t.Entries, TailEntry{LSN: lsn, Pos: b.Pos, Op: *op})
				return nil
			}
			var st tailStats
			if err := replaySection(b.Pos, sec, &lsns[sec.Shard], &rep.Shards[sec.Shard], &st, keep); err != nil {
				return err
			}
			t.Bytes += st.bytes
		}
		return nil
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, nil, cerr
		}
		return nil, nil, fmt.Errorf("recovering %s: %w", dir, err)
	}
	rep.LogEnd = end.End
	rep.TornTail, rep.Torn, rep.LogEnding = end.Torn.String(), end.Torn, end.Ending
	for i := range rep.Shards {
		rep.Shards[i].LSN = lsns[i]
	}
	if err := checkLogEnd(dir, &end, rep.Shards); err != nil {
		return nil, nil, err
	}
	return tails, rep, nil
}

// ReadLogEnd reads the whole shared log of the log format 3 directory dir,
// from its first segment, keeping nothing, and returns its tail: how the
// log ends and the torn tail a recovery drops, if any. Damage anywhere in
// the log is an error (a *wal.CorruptError names the file and offset),
// including before the oldest checkpoint, where a recovery does not read.
// Nothing is written; the caller holds the directory's lock.
func ReadLogEnd(fs vfs.FS, dir string) (wal.Tail, error) {
	tail, err := wal.Read(fs, wal.Dir(fs, dir), wal.Position{}, nil)
	if err != nil {
		return wal.Tail{}, fmt.Errorf("reading the log of %s: %w", dir, err)
	}
	return tail, nil
}
