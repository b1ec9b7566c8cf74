package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
)

// Streamed recovery, part one: the log tails. A reshard reads every old
// shard of a closed directory in memory bounded by a budget, not by the
// data. Recovery (Open, RecoverShard) loads whole stores; instead, the
// reshard reads each store's checkpoint header (ReadHeader), reads the
// shared log once for all shards (ReadTails), and then streams each store
// with the tail as an overlay (store.ShardReader). A tail is bounded by
// the checkpoints (everything before a shard's checkpoint is in its
// store), so the tails are held in memory whole.

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
func ReadTails(ctx context.Context, fs vfs.FS, dir string, headers []model.CheckpointHeader) ([]store.ShardTail, *RecoveryReport, error) {
	n := len(headers)
	if n == 0 {
		return nil, nil, fmt.Errorf("reading the log tails of %s: no shard headers", dir)
	}
	tails := make([]store.ShardTail, n)
	lsns := make([]uint64, n)
	rep := &RecoveryReport{Shards: make([]ShardRecovery, n)}
	for i := range headers {
		hdr := &headers[i]
		if hdr.Shard != i || hdr.Count != n {
			return nil, nil, fmt.Errorf("reading the log tails of %s: headers[%d] is shard %d's of %d", dir, i, hdr.Shard, hdr.Count)
		}
		tails[i] = store.ShardTail{Shard: i, CheckpointLSN: hdr.LSN}
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
			keep := func(lsn uint64, op *model.Op) error {
				t.Entries = append(t.Entries, store.TailEntry{LSN: lsn, Pos: b.Pos, Op: *op})
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
	rep.WholeLog = end.Whole
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
