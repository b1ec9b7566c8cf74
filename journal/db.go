package journal

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file is the contract between the engine (the simulator under
// journal/sim), the checks (inspect, verify, dump) and the persistence
// layer. Bodies marked "not implemented" are being written.

var errNotImplemented = errors.New("not implemented yet")

// ShardOp is one log entry addressed to a shard.
type ShardOp struct {
	Shard int
	Op    Op
}

// CreateOptions configure a new data directory.
type CreateOptions struct {
	Shards int
	Now    int64 // virtual creation time (ms), recorded in checkpoints
	NoSync bool  // bulk generation: skip per-commit fsyncs; Close syncs everything
}

// OpenOptions configure how an existing directory is opened.
type OpenOptions struct {
	// ReadOnly recovers without ever ticking: no log append, no checkpoint,
	// no truncation, nothing expires; the directory's bytes do not change.
	ReadOnly bool
	NoSync   bool
}

// RecoveryReport says what recovery found.
type RecoveryReport struct {
	Shards []ShardRecovery
	// TornTail describes a dropped, never-acknowledged log tail ("" none).
	TornTail string
}

// ShardRecovery is one shard's recovery.
type ShardRecovery struct {
	Shard         int
	CheckpointLSN uint64
	Replayed      int // log entries applied after the checkpoint
	LSN           uint64
}

// DB is an open data directory: its lock, its meta file, its shared log
// and one store per shard, with every shard's state recovered in memory.
type DB struct {
	Dir    string
	FS     vfs.FS
	Shards []*Shard
	Now    int64 // the virtual clock as last checkpointed or logged
}

// Create makes a new, empty data directory and opens it.
func Create(fs vfs.FS, dir string, opts CreateOptions) (*DB, error) { return nil, errNotImplemented }

// Open takes the directory's lock and recovers every shard.
func Open(fs vfs.FS, dir string, opts OpenOptions) (*DB, *RecoveryReport, error) {
	return nil, nil, errNotImplemented
}

// Commit appends ops to the log as one batch (one section per shard),
// syncs it (unless NoSync) and then applies them to the shards' states.
func (db *DB) Commit(ops []ShardOp) error { return errNotImplemented }

// SetNow records the engine's virtual clock (persisted at checkpoints).
func (db *DB) SetNow(now int64) { db.Now = now }

// Checkpoint makes every shard's store reflect its state up to its LSN and
// lets the log drop what no checkpoint still needs.
func (db *DB) Checkpoint() error { return errNotImplemented }

// Close releases the lock; it does not checkpoint.
func (db *DB) Close() error { return errNotImplemented }
