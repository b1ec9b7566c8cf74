// Package meta owns the two files that make a directory a fusee data
// directory: fusee.meta, its identity, and LOCK, the lock that keeps two
// processes out of it at once. It is also the one home of the primitives
// every writer of a data directory shares: the filesystem wrapper that
// makes every lock a flock(2) (FS), the directory fsync (SyncDir), the
// atomic replace of a file (ReplaceFile) and the shard limit (MaxShards).
// The flock itself (LockFile, with LockHolder to say who holds one) is
// fusee's only lock: package ringfile locks ring files with it too.
//
// Everything here works on a pebble vfs.FS: on the disk callers pass
// vfs.Default; tests pass vfs.NewMem or vfs.NewCrashableMem and run the
// very same code. There is no second path for either.
//
// # fusee.meta
//
// fusee.meta is a short text file of key=value lines, for example
//
//	# fusee data directory: written by fusee, do not edit while it is open
//	format=local
//	log=3
//	shards=8
//
// The parser is strict, because a misread identity file would open a
// directory with the wrong shard count and scatter data:
//
//   - every line ends with a newline, so a file cut short is noticed rather
//     than read as a smaller number (shards=1 from shards=16);
//   - a line is a comment (starting with '#'), empty, or key=value with
//     nothing trimmed: no spaces around '=', no trailing spaces, no CR;
//   - a key is [a-z_]+, known, and appears once; numbers are plain decimal
//     without sign or leading zeros;
//   - format is "local", Switching ("reshard") while a reshard swaps the
//     directory's files, or Upgrading ("upgrade") while an upgrade swaps a
//     log format 2 directory's files for log format 3 ones; with reshard,
//     old_shards and new_shards say what the switch must finish and shards
//     equals new_shards; outside it both are forbidden; upgrade needs log=3
//     (the format it switches to);
//   - log is 3 (one write-ahead log shared by the shards) or 2 (the older
//     log per shard, which only upgrade reads: `fusee upgrade` converts it);
//   - shards is 1..MaxShards.
//
// Every parse error is a *FileError naming the file, the line and the fix.
// Writes produce canonical bytes (fixed key order, one header comment) and
// replace the file through ReplaceFile, atomically and durably: a temporary
// file in the same directory, fsync, rename, then SyncDir of the directory
// so the rename itself survives a crash. A crash at any point leaves the
// old file or the new one, whole.
//
// # Opening
//
// Every program that opens a data directory goes through Open: it refuses
// a directory without fusee.meta before taking any lock (so it leaves no
// LOCK file behind), then takes the lock, reads fusee.meta and refuses a
// directory whose reshard or upgrade was interrupted (ErrSwitching:
// *SwitchingError or *UpgradingError, each naming the command that finishes
// it) or whose log format the caller cannot read (ErrOldLog). Only reshard
// opens with Options.AllowSwitching and only upgrade with
// Options.AllowUpgrading, each to finish its own switch. Create makes a
// new directory: it locks it, lets the caller fill it, and writes
// fusee.meta last.
//
// # LOCK
//
// LOCK is an empty file held with an exclusive flock(2) for as long as
// anything has the directory open: the engine, reshard, inspect. The kernel
// drops the lock when the holder exits, however it exits, so a crash never
// leaves a stale lock behind. Another process that cannot take it gets
// ErrInUse; `flock -n <dir>/LOCK true` fails while it is held.
//
// pebble's vfs.Default.Lock is an fcntl(2) lock, which flock does not see,
// and it opens the file for writing. FS wraps a filesystem so that Lock is
// a flock(2) on the disk, taken on a read-only descriptor when the file
// exists, and the filesystem's own Lock on anything else (memfs). Open,
// Create and Lock go through it, and so does every pebble store of a data
// directory (package journal opens them through FS): the stores' own LOCK
// files are flock(2) locks too, and a read-only open needs no write access
// to a directory whose LOCK files exist.
//
// # What this package must never do
//
// It knows nothing of what the shards contain (that is journal's and
// reshard's business) and nothing of cobra, terminals or colour: it returns
// values and typed errors, and the command layer turns them into messages
// and exit codes.
package meta
