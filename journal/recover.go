package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
)

// Open takes the directory's lock and recovers every shard: it reads
// fusee.meta (refusing an interrupted reshard, meta.ErrSwitching, and log
// format 2, meta.ErrOldLog), loads each
// shard's store (its checkpoint) into memory and checks it, then reads the
// shared log from the earliest checkpoint's position and applies each
// shard's entries above its checkpoint's LSN. A torn, never-acknowledged
// log tail is dropped and reported; damage anywhere is an error naming the
// file and offset or the store and key.
//
// Read-write, the log then continues after its last good batch. Read-only,
// nothing is written: stores are opened read-only, the log is only read,
// and the directory's bytes do not change.
func Open(fs vfs.FS, dir string, opts OpenOptions) (*DB, *RecoveryReport, error) {
	return OpenContext(context.Background(), fs, dir, opts)
}

// OpenContext is Open that gives up when ctx is done: recovery checks ctx
// before each shard's store is loaded and between log batches, and then
// returns ctx.Err() (context.Canceled after Ctrl-C) with the directory
// closed again and its lock released.
func OpenContext(ctx context.Context, fs vfs.FS, dir string, opts OpenOptions) (*DB, *RecoveryReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	fs = meta.FS(fs) // the stores' LOCK files are flock(2) locks too
	if opts.ReadOnly {
		fs = meta.ReadOnlyFS(fs) // and read-only, none is created
	}
	lock, err := meta.Open(fs, dir, meta.Options{Log: meta.LogShared})
	if err != nil {
		return nil, nil, err
	}
	// Recovery reads every store read-only, whatever opts say: a directory
	// that recovery refuses (a store missing, damage, a log that does not
	// fit) must be left byte for byte as it was, and a pebble store opened
	// for writing rewrites its own files at once (it flushes its WAL).
	// Only a directory that recovered whole is reopened for writing.
	db := &DB{Dir: dir, FS: fs, lock: lock, readOnly: true, noSync: opts.NoSync}
	rep, err := db.recover(ctx, opts)
	if err != nil {
		db.closeAll(false)
		return nil, nil, err
	}
	return db, rep, nil
}

func (db *DB) recover(ctx context.Context, opts OpenOptions) (*RecoveryReport, error) {
	fs, n := db.FS, db.lock.Meta().Shards
	if err := db.openStores(n); err != nil {
		return nil, err
	}
	rep := &RecoveryReport{Shards: make([]ShardRecovery, n)}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		load := store.LoadShard
		if opts.Evict {
			load, db.evict = loadShardEvicting, true
		}
		s, hdr, err := load(db.stores[i], store.StoreDir(fs, db.Dir, i), i, n)
		if err != nil {
			return nil, err
		}
		s.TrackChanges()
		db.Shards[i], db.headers[i] = s, hdr
		rep.Shards[i] = ShardRecovery{Shard: i, CheckpointLSN: hdr.LSN, LSN: hdr.LSN}
		if i == 0 || comparePos(hdr.Log, rep.LogFrom) < 0 {
			rep.LogFrom = hdr.Log
		}
		db.Now = max(db.Now, hdr.Now)
		db.created = hdr.Created
	}
	walDir := wal.Dir(fs, db.Dir)
	tail, err := wal.Read(fs, walDir, rep.LogFrom, func(b wal.Batch) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep.Batches++
		return db.replay(&b, rep)
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, cerr
		}
		return nil, fmt.Errorf("recovering %s: %w", db.Dir, err)
	}
	if err := db.loadErr(); err != nil {
		return nil, err
	}
	rep.LogEnd = tail.End
	rep.TornTail, rep.Torn, rep.LogEnding = tail.Torn.String(), tail.Torn, tail.Ending
	for i, s := range db.Shards {
		rep.Shards[i].LSN = s.LSN
	}
	if err := checkLogEnd(db.Dir, &tail, rep.Shards); err != nil {
		return nil, err
	}
	if !opts.ReadOnly {
		if err := db.reopenStoresWritable(); err != nil {
			return nil, err
		}
		db.rebindBacking()
		w, err := wal.OpenAppend(fs, walDir, tail, wal.Options{NoSync: opts.NoSync, SegmentSize: opts.SegmentSize})
		if err != nil {
			return nil, fmt.Errorf("recovering %s: continuing the log: %w", db.Dir, err)
		}
		db.log = w
	}
	return rep, nil
}

// reopenStoresWritable closes the stores recovery read (read-only) and
// opens them again for writing. The directory's lock is held throughout,
// so they are the same stores.
func (db *DB) reopenStoresWritable() error {
	for i, st := range db.stores {
		db.stores[i] = nil
		if err := st.Close(); err != nil {
			return fmt.Errorf("closing shard store %s: %w", store.StoreDir(db.FS, db.Dir, i), err)
		}
	}
	db.readOnly = false
	for i := range db.stores {
		st, err := store.OpenStore(db.FS, store.StoreDir(db.FS, db.Dir, i), db.cache, false, false)
		if err != nil {
			return err
		}
		db.stores[i] = st
	}
	return nil
}

// replay applies one log batch's entries above each shard's LSN.
func (db *DB) replay(b *wal.Batch, rep *RecoveryReport) error {
	for si := range b.Sections {
		sec := &b.Sections[si]
		if err := checkSectionShard(b.Pos, sec, len(db.Shards)); err != nil {
			return err
		}
		s := db.Shards[sec.Shard]
		if err := replaySection(b.Pos, sec, &s.LSN, &rep.Shards[sec.Shard], &db.tails[sec.Shard], applyTo(s)); err != nil {
			return err
		}
	}
	return nil
}

// checkSectionShard refuses a log section for a shard the directory, which
// has count shards, does not have.
func checkSectionShard(pos wal.Position, sec *wal.Section, count int) error {
	if sec.Shard >= count {
		return &store.LogError{Pos: pos, Shard: sec.Shard, LSN: sec.FirstLSN,
			Err: fmt.Errorf("an entry for shard %d, but the directory has %d shards", sec.Shard, count)}
	}
	return nil
}

// replaySection passes a log section's entries above *lsn to apply, each
// decoded, with its LSN, in LSN order, and advances *lsn past each one
// apply accepts. The next entry must be exactly *lsn + 1: a gap is
// damage, and so is an entry that does not decode or that apply refuses.
// Recovery applies the entries to the shard (Shard.Apply); ReadTails
// keeps them. t, if not nil, counts what was applied.
func replaySection(pos wal.Position, sec *wal.Section, lsn *uint64, sr *ShardRecovery, t *tailStats, apply func(lsn uint64, op *model.Op) error) error {
	for j, data := range sec.Entries {
		n := sec.FirstLSN + uint64(j)
		if n <= *lsn {
			sr.Skipped++
			continue
		}
		fail := func(err error) error { return &store.LogError{Pos: pos, Shard: sec.Shard, LSN: n, Err: err} }
		if n != *lsn+1 {
			return fail(fmt.Errorf("a gap: the shard is at LSN %d", *lsn))
		}
		op, err := model.DecodeOp(data)
		if err != nil {
			return fail(fmt.Errorf("entry does not decode: %w", err))
		}
		if err := apply(n, &op); err != nil {
			return fail(err)
		}
		*lsn = n
		sr.Replayed++
		if t != nil {
			t.entries++
			t.bytes += int64(len(data))
		}
	}
	return nil
}

// applyTo is replaySection's apply for recovery: Shard.Apply on s.
func applyTo(s *model.Shard) func(uint64, *model.Op) error {
	return func(_ uint64, op *model.Op) error { return s.Apply(op) }
}

// checkLogEnd checks, at the end of a read of the shared log of dir, that
// each shard's entries in the log end exactly where its recovered state
// does (shards[i].LSN; shards[i].CheckpointLSN is its store's), and that
// the log holds no entry for a shard the directory does not have. A store
// that reflects more than the log holds, or a log that starts after
// entries a store lacks, is damage.
func checkLogEnd(dir string, tail *wal.Tail, shards []ShardRecovery) error {
	for i := range shards {
		if next := tail.NextLSN[i]; next != shards[i].LSN+1 {
			return fmt.Errorf("recovering %s: shard %d's checkpoint and log disagree: the store reflects LSN %d, the log's entries for it end at LSN %d; restore the data directory from a backup",
				dir, i, shards[i].CheckpointLSN, next-1)
		}
	}
	for k := len(shards); k < len(tail.NextLSN); k++ {
		if tail.NextLSN[k] != 1 {
			return fmt.Errorf("recovering %s: the log has entries for shard %d, but the directory has %d shards; restore the data directory from a backup", dir, k, len(shards))
		}
	}
	return nil
}

// RecoverShard recovers one shard of a log format 3 directory whose lock
// the caller already holds (reshard, after meta.Open), read-only: it opens
// the shard's store read-only, loads it and applies that shard's entries
// of the shared log after its checkpoint. count is the directory's shard
// count. Nothing is written. Memory is O(that shard's size), which is why
// reshard reads one old shard at a time with it; the shared log is read
// once per call.
func RecoverShard(fs vfs.FS, dir string, shard, count int) (*model.Shard, model.CheckpointHeader, *ShardRecovery, error) {
	if shard < 0 || shard >= count {
		return nil, model.CheckpointHeader{}, nil, fmt.Errorf("shard %d: the directory has shards 0..%d", shard, count-1)
	}
	fs = meta.FS(fs)
	path := store.StoreDir(fs, dir, shard)
	sdb, err := store.OpenStore(fs, path, nil, true, false)
	if err != nil {
		return nil, model.CheckpointHeader{}, nil, err
	}
	s, hdr, err := store.LoadShard(sdb, path, shard, count)
	if cerr := sdb.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing shard store %s: %w", path, cerr)
	}
	if err != nil {
		return nil, hdr, nil, err
	}
	sr := &ShardRecovery{Shard: shard, CheckpointLSN: hdr.LSN}
	tail, err := wal.Read(fs, wal.Dir(fs, dir), hdr.Log, func(b wal.Batch) error {
		for si := range b.Sections {
			if sec := &b.Sections[si]; sec.Shard == shard {
				return replaySection(b.Pos, sec, &s.LSN, sr, nil, applyTo(s))
			}
		}
		return nil
	})
	if err != nil {
		return nil, hdr, nil, fmt.Errorf("recovering shard %d of %s: %w", shard, dir, err)
	}
	if next := tail.NextLSN[shard]; next != s.LSN+1 {
		return nil, hdr, nil, fmt.Errorf("recovering shard %d of %s: its checkpoint and log disagree: the store reflects LSN %d, the log's entries for it end at LSN %d; restore the data directory from a backup",
			shard, dir, hdr.LSN, next-1)
	}
	sr.LSN = s.LSN
	return s, hdr, sr, nil
}

// checkShard refuses a shard number out of range, and a closed DB.
func (db *DB) checkShard(shard int) error {
	if shard < 0 || shard >= len(db.Shards) {
		return fmt.Errorf("shard %d: the directory has shards 0..%d", shard, len(db.Shards)-1)
	}
	if db.closed {
		return errors.New("the data directory is closed")
	}
	return nil
}
