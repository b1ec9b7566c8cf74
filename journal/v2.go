package journal

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
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
	Shards  []*Shard
	Headers []CheckpointHeader // each shard's checkpoint header
	Report  *RecoveryReport    // LogFrom/LogEnd/Batches are zero: each shard has its own log
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
	st := &V2State{Meta: lock.Meta(), Shards: make([]*Shard, n), Headers: make([]CheckpointHeader, n),
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
	path := StoreDir(fs, dir, i)
	store, err := openStore(fs, path, cache, true, false)
	if err != nil {
		return err
	}
	s, hdr, err := loadShard(store, path, i, n)
	if cerr := store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing shard store %s: %w", path, cerr)
	}
	if err != nil {
		return err
	}
	sr := &st.Report.Shards[i]
	*sr = ShardRecovery{Shard: i, CheckpointLSN: hdr.LSN}
	logDir := wal.ShardLogDir(fs, dir, i)
	tail, err := wal.ReadV2(fs, logDir, i, func(b wal.Batch) error {
		for _, sec := range b.Sections {
			if sec.Shard != i {
				return &LogError{Pos: b.Pos, Shard: sec.Shard, LSN: sec.FirstLSN, Err: fmt.Errorf("an entry for shard %d in shard %d's log", sec.Shard, i)}
			}
			if err := replaySection(b.Pos, &sec, &s.LSN, sr, nil, applyTo(s)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("recovering shard %d of %s from %s: %w", i, dir, logDir, err)
	}
	if next := tail.NextLSN[i]; next != s.LSN+1 {
		return fmt.Errorf("recovering shard %d of %s: its checkpoint and log disagree: the store reflects LSN %d, the log in %s ends at LSN %d; restore the data directory from a backup",
			i, dir, hdr.LSN, logDir, next-1)
	}
	sr.LSN = s.LSN
	st.Shards[i], st.Headers[i], st.Torn[i] = s, hdr, tail.Torn.String()
	return nil
}
