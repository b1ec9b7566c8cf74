package journal

// A data directory:
//
//	<dir>/fusee.meta                 identity: format, log format, shard count (package meta)
//	<dir>/LOCK                       held (flock) while anything has the directory open (package meta)
//	<dir>/wal/                       the shared write-ahead log, log format 3 (package wal)
//	<dir>/shards/NNNN/store/         shard NNNN's pebble store (4 digits, zero padded)
//	<dir>/shards/NNNN/log/           shard NNNN's own log, log format 2 only
//
// fusee.meta and LOCK are package meta's on every vfs.FS, the disk and the
// memory filesystems of the tests alike: Open, Create and ReadV2 call
// meta.Open and meta.Create with the filesystem they were given, wrapped
// by meta.FS, and open the shards' pebble stores through that same wrapped
// filesystem, so that the stores' own LOCK files are flock(2) locks too.
//
// The paths of a shard's directory and of its store are store.ShardDir and
// store.StoreDir (journal/store/dir.go).
