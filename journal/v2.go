package journal

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
)

// Log format 2 (fusee.meta log=2) is the older layout: each shard has its
// own log in shards/NNNN/log beside its store, and there is no wal/. The
// stores have the same layout as in format 3; their headers' log position
// is unused, because a shard's log is read from its first segment and
// entries at or below the checkpoint's LSN are skipped. Open refuses such
// a directory (meta.ErrOldLog); ReadV2 recovers it,
// read-only, for the upgrade.

// V2State is a log format 2 directory recovered in memory.
type V2State struct {
	Meta    meta.Meta
	Shards  []*model.Shard
	Headers []model.CheckpointHeader // each shard's checkpoint header
	Report  *RecoveryReport          // LogFrom/LogEnd/Batches are zero: each shard has its own log
	// Torn lists, per shard, a dropped never-acknowledged tail of its log
	// ("" none).
	Torn []string
}

// ReadV2 recovers every shard of a log format 2 directory, read-only: it
// takes the lock, reads fusee.meta (which must say log=2), loads each
// store (opened read-only) and applies the entries of the shard's own log
// above the checkpoint's LSN. It writes nothing, and releases the lock
// before returning. Memory is O(directory size).
func ReadV2(fs vfs.FS, dir string) (*V2State, error) {
	fs = meta.FS(fs) // the stores' LOCK files are flock(2) locks too
	lock, err := meta.Open(fs, dir, meta.Options{Log: meta.LogPerShard})
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	n := lock.Meta().Shards
	st := &V2State{Meta: lock.Meta(), Shards: make([]*model.Shard, n), Headers: make([]model.CheckpointHeader, n),
		Report: &RecoveryReport{Shards: make([]ShardRecovery, n)}, Torn: make([]string, n)}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref()
	for i := range n {
		if err := readShardV2(fs, dir, i, n, cache, st); err != nil {
			return nil, err
		}
	}
	for _, t := range st.Torn {
		if t != "" {
			st.Report.TornTail = t
		}
	}
	return st, nil
}

// readShardV2 recovers shard i of a format 2 directory into st.
func readShardV2(fs vfs.FS, dir string, i, n int, cache *pebble.Cache, st *V2State) error {
	path := store.StoreDir(fs, dir, i)
	sdb, err := store.OpenStore(fs, path, cache, true, false)
	if err != nil {
		return err
	}
	s, hdr, err := store.LoadShard(sdb, path, i, n)
	if cerr := sdb.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing shard store %s: %w", path, cerr)
	}
	if err != nil {
		return err
	}
	sr := &st.Report.Shards[i]
	*sr = ShardRecovery{Shard: i, CheckpointLSN: hdr.LSN}
	torn, err := readLogV2(fs, dir, i, &s.LSN, sr, func(_ wal.Position, _ uint64, op *model.Op) error { return s.Apply(op) })
	if err != nil {
		return err
	}
	sr.LSN = s.LSN
	st.Shards[i], st.Headers[i], st.Torn[i] = s, hdr, torn
	return nil
}

// readLogV2 reads shard i's own log in the format 2 directory dir from its
// first segment, passing each entry above *lsn to apply (replaySection's
// rules: no gap, every entry decodes) and advancing *lsn, then checks that
// the log ends exactly there. It returns the dropped torn tail ("" none).
func readLogV2(fs vfs.FS, dir string, i int, lsn *uint64, sr *ShardRecovery, apply func(wal.Position, uint64, *model.Op) error) (string, error) {
	checkpoint := *lsn
	logDir := wal.ShardLogDir(fs, dir, i)
	tail, err := wal.ReadV2(fs, logDir, i, func(b wal.Batch) error {
		for _, sec := range b.Sections {
			if sec.Shard != i {
				return &store.LogError{Pos: b.Pos, Shard: sec.Shard, LSN: sec.FirstLSN, Err: fmt.Errorf("an entry for shard %d in shard %d's log", sec.Shard, i)}
			}
			keep := func(n uint64, op *model.Op) error { return apply(b.Pos, n, op) }
			if err := replaySection(b.Pos, &sec, lsn, sr, nil, keep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("recovering shard %d of %s from %s: %w", i, dir, logDir, err)
	}
	if next := tail.NextLSN[i]; next != *lsn+1 {
		return "", fmt.Errorf("recovering shard %d of %s: its checkpoint and log disagree: the store reflects LSN %d, the log in %s ends at LSN %d; restore the data directory from a backup",
			i, dir, checkpoint, logDir, next-1)
	}
	return tail.Torn.String(), nil
}

// ReadTailsV2 is ReadTails for a log format 2 directory: it reads each
// shard's own log (shards/NNNN/log) and returns every shard's entries after
// its checkpoint (headers[i] is shard i's header, len(headers) the shard
// count), decoded and checked as ReadV2 checks them, not applied. A torn,
// never-acknowledged tail of any shard's log is dropped and reported in
// RecoveryReport.TornTail (the last one found). Memory is the tails, which
// the engine's checkpoints bound, as for ReadTails. Nothing is written;
// the caller holds the directory's lock. ctx is checked between shards.
func ReadTailsV2(ctx context.Context, fs vfs.FS, dir string, headers []model.CheckpointHeader) ([]store.ShardTail, *RecoveryReport, error) {
	n := len(headers)
	if n == 0 {
		return nil, nil, fmt.Errorf("reading the log tails of %s: no shard headers", dir)
	}
	tails := make([]store.ShardTail, n)
	rep := &RecoveryReport{Shards: make([]ShardRecovery, n)}
	for i := range headers {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		hdr := &headers[i]
		if hdr.Shard != i || hdr.Count != n {
			return nil, nil, fmt.Errorf("reading the log tails of %s: headers[%d] is shard %d's of %d", dir, i, hdr.Shard, hdr.Count)
		}
		t := &tails[i]
		*t = store.ShardTail{Shard: i, CheckpointLSN: hdr.LSN}
		sr := &rep.Shards[i]
		*sr = ShardRecovery{Shard: i, CheckpointLSN: hdr.LSN}
		lsn := hdr.LSN
		torn, err := readLogV2(fs, dir, i, &lsn, sr, func(pos wal.Position, n uint64, op *model.Op) error {
			t.Entries = append(t.Entries, store.TailEntry{LSN: n, Pos: pos, Op: *op})
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		sr.LSN = lsn
		if torn != "" {
			rep.TornTail = torn
		}
	}
	return tails, rep, nil
}

// WriteV2 converts the closed log format 3 directory dir, in place, into a
// log format 2 directory holding the same state: each shard keeps its store
// (its header's log position set to zero, unused in format 2) and gets its
// own log in shards/NNNN/log, starting at the LSN after its checkpoint and
// holding the entries the shared log has after it, one batch per shared
// log batch; then fusee.meta says log=2 and wal/ is removed. It exists for
// `fusee gen --log 2` (which runs it on a directory it is still building,
// under a temporary name) and for tests: it is not crash-safe in place.
func WriteV2(ctx context.Context, fs vfs.FS, dir string) error {
	fs = meta.FS(fs)
	d, err := meta.Open(fs, dir, meta.Options{Log: meta.LogShared})
	if err != nil {
		return err
	}
	defer d.Close()
	n := d.Meta().Shards
	headers, err := store.ReadHeaders(ctx, fs, dir, n)
	if err != nil {
		return err
	}
	tails, _, err := ReadTails(ctx, fs, dir, headers)
	if err != nil {
		return err
	}
	for i := range tails {
		if err := writeShardV2(fs, dir, &headers[i], &tails[i]); err != nil {
			return err
		}
	}
	if err := d.Write(meta.Meta{Format: meta.FormatLocal, Log: meta.LogPerShard, Shards: n}); err != nil {
		return err
	}
	if err := fs.RemoveAll(wal.Dir(fs, dir)); err != nil {
		return fmt.Errorf("removing %s: %w", wal.Dir(fs, dir), err)
	}
	return meta.SyncDir(fs, dir)
}

// writeShardV2 gives one shard of a directory being converted by WriteV2
// its own log and a header without a log position.
func writeShardV2(fs vfs.FS, dir string, hdr *model.CheckpointHeader, t *store.ShardTail) error {
	w, err := wal.CreateV2From(fs, wal.ShardLogDir(fs, dir, t.Shard), t.Shard, t.CheckpointLSN+1, wal.Options{NoSync: true})
	if err != nil {
		return err
	}
	var batch [][]byte
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, _, err := w.Append(batch)
		batch = batch[:0]
		return err
	}
	for k := range t.Entries {
		if k > 0 && t.Entries[k].Pos != t.Entries[k-1].Pos {
			if err := flush(); err != nil {
				_ = w.Close()
				return err
			}
		}
		batch = append(batch, model.EncodeOp(nil, &t.Entries[k].Op))
	}
	if err := flush(); err != nil {
		_ = w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	h := *hdr
	h.Log = wal.Position{}
	path := store.StoreDir(fs, dir, t.Shard)
	sdb, err := store.OpenStore(fs, path, nil, false, false)
	if err != nil {
		return err
	}
	err = sdb.Set(store.HeaderKey(), model.EncodeHeader(nil, &h), pebble.Sync)
	if cerr := sdb.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the checkpoint header of %s: %w", path, err)
	}
	return meta.SyncDir(fs, store.ShardDir(fs, dir, t.Shard))
}
