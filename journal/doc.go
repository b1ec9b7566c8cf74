// Package journal owns a fusee data directory as a whole (its directory
// layer): the DB (fusee.meta and LOCK through package meta, the shared
// write-ahead log through journal/wal, one pebble store per shard through
// journal/store), recovery and the log tails (recover.go, tails.go),
// checkpoints, eviction (evict.go), the stores of a directory being built
// (build.go), the log format 2 reader and upgrade
// support (v2.go) and inspection (inspect.go). The data model (records,
// ops, the Shard state machine) is package journal/model; one shard's
// pebble store, its keys and the ShardReader are package journal/store.
// Imports flow journal -> journal/store -> journal/model. It has no
// filesystem code of its own for those files: every vfs.FS it is given,
// the disk or a memory filesystem, goes through meta.FS (so the stores'
// LOCK files are flock(2) locks) and meta.Open/meta.Create, and every
// directory fsync is meta.SyncDir.
//
// # Invariants
//
//   - A shard's state changes only through (*model.Shard).Apply, which also
//     regenerates its outputs (ID index, timers, outbox); recovery replays
//     the log with the same function, so it rebuilds exactly what the
//     engine had.
//   - Commit returns only once its batch is in the log and fsynced (in
//     NoSync mode: at the next Checkpoint or Close); an op that does not
//     fit its shard is refused before it reaches the log.
//   - A checkpoint is one atomic, synced pebble batch per shard, written
//     after the log is synced; the log keeps every segment some header
//     still points into. After a crash each store is at its old or new
//     checkpoint and the log holds what either needs.
//   - A store's LSN always matches the log it is opened with; every gap,
//     mismatch or undecodable key is an error naming the file and offset or
//     the store and key, never silently skipped.
//   - A read-only open changes no byte of the directory.
//   - The ID index names each workflow ID's highest generation
//     (Run.NewerThan), never its highest run number: a reshard can number
//     an older run above a newer one. Run number NoSuchRun is never given
//     to a run; references carry it when the run they named is gone.
//   - A store's header gen is its shard's StoreGen; completion tokens carry
//     it mod 64 (Token.Gen), so tokens minted before a rebuild are refused.
//
// docs/format.md specifies the bytes. Memory is O(directory size) when a
// DB is opened: it recovers every run's journal, so tools that rewrite a
// directory (reshard, upgrade) process one old shard at a time. An engine
// can then turn on eviction (DB.SetEvict, evict.go): each checkpoint drops
// what the stores hold, and runs, index and dedup entries are read back
// by key when needed, so the DB's memory stays bounded by what changed
// since the last checkpoint (plus the outbox) instead of growing with the
// directory.
//
// # What this package must never do
//
// It never changes a shard's state except through (*model.Shard).Apply and
// never encodes a store key or value itself (journal/store and
// journal/model do). It runs no workflow code and never ticks a shard by
// itself (timers fire and retention expires only through ops the engine
// commits). It knows nothing of cobra, terminals or colours: it returns
// values and typed errors (store.StoreError, store.LogError,
// wal.CorruptError, meta's errors), and the command layer turns them into
// messages and exit codes.
package journal
