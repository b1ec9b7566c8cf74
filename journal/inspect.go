package journal

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/wal"
)

// What inspect and verify read cheaply from an open DB, without walking
// the shards' states.

// ShardStats describes one shard's persistence.
type ShardStats struct {
	Shard      int
	Checkpoint model.CheckpointHeader // the store's current checkpoint header
	LSN        uint64                 // the shard's LSN in memory (checkpoint + log tail)
	// TailEntries and TailBytes count the log entries after the checkpoint
	// (replayed at open or committed since) and their encoded size.
	TailEntries int
	TailBytes   int64
	// StoreBytes is the disk space the store uses (pebble's estimate:
	// tables, its own log, manifest).
	StoreBytes uint64
}

// Stats describes a directory's persistence.
type Stats struct {
	Shards []ShardStats
	// LogSegments and LogBytes count the shared log's segment files.
	LogSegments int
	LogBytes    int64
}

// Stats reports per-shard store sizes, checkpoints and log tails, and the
// log's size.
func (db *DB) Stats() (Stats, error) {
	if db.closed {
		return Stats{}, errors.New("the data directory is closed")
	}
	var st Stats
	for i, s := range db.Shards {
		st.Shards = append(st.Shards, ShardStats{
			Shard: i, Checkpoint: db.headers[i], LSN: s.LSN,
			TailEntries: db.tails[i].entries, TailBytes: db.tails[i].bytes,
			StoreBytes: db.stores[i].Metrics().DiskSpaceUsage(),
		})
	}
	var err error
	st.LogSegments, st.LogBytes, err = LogSize(db.FS, db.Dir)
	return st, err
}

// LogSize counts the segment files of the shared log of the data
// directory dir and their bytes.
func LogSize(fs vfs.FS, dir string) (segments int, bytes int64, err error) {
	wd := wal.Dir(fs, dir)
	names, err := fs.List(wd)
	if err != nil {
		return 0, 0, fmt.Errorf("listing %s: %w", wd, err)
	}
	for _, name := range names {
		if len(name) != len("0000000000000001.log") || name[len(name)-4:] != ".log" {
			continue
		}
		fi, err := fs.Stat(fs.PathJoin(wd, name))
		if err != nil {
			return 0, 0, err
		}
		segments++
		bytes += fi.Size()
	}
	return segments, bytes, nil
}

// Header is shard's current checkpoint header.
func (db *DB) Header(shard int) (model.CheckpointHeader, error) {
	if err := db.checkShard(shard); err != nil {
		return model.CheckpointHeader{}, err
	}
	return db.headers[shard], nil
}

// StoreKeys calls fn for every key of shard's store in key order, as the
// store holds them at its checkpoint (the log tail is not in the store).
// Keys follow the layout of journal/store (store.ParseStoreKey,
// model.DecodeRunEntry, …); verify uses it to cross-check the stored index and timers against the
// runs. key and value are valid only during the call. An error from fn
// stops the walk and is returned.
func (db *DB) StoreKeys(shard int, fn func(key, value []byte) error) error {
	if err := db.checkShard(shard); err != nil {
		return err
	}
	it, err := db.stores[shard].NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}
