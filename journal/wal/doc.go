// Package wal owns the engine's write-ahead logs as opaque bytes: framing,
// segment files, the batch chain, and telling a torn tail from damage, for
// both log formats (3: one log shared by every shard, in <datadir>/wal; 2:
// one log per shard, in <datadir>/shards/NNNN/log).
//
// It must never interpret an entry (the journal package encodes and decodes
// them), touch a shard's store, or decide checkpoint policy: it assigns
// LSNs, says where each batch starts (a Position), and deletes whole
// segments when told to (RemoveBefore). It reads and writes only through a
// vfs.FS. From package meta it takes the shard limit (meta.MaxShards) and
// the directory fsync (meta.SyncDir), and nothing else.
//
// # Invariants
//
//   - A batch is acknowledged only once it is fsynced: Append returns after
//     the sync (in NoSync mode, Sync or Close is that point). A batch is
//     written only after the previous one's Append returned, so an intact
//     batch in the file proves that everything before it was acknowledged.
//   - Batches of a shared log are numbered 1, 2, 3… across all segments;
//     each names the CRC-32C of the previous batch's record payload (batch 1
//     names 0). Each shard's entries get LSNs 1, 2, 3… in append order, and
//     every section says where its shard's LSNs resume. Read checks all
//     three; stale bytes (from a reused file, another log, a forked copy)
//     cannot join the chain.
//   - A file named like a segment always starts with an intact header: the
//     header is written and fsynced under a temporary name, then the file is
//     renamed and the directory fsynced. The header names the previous
//     segment and the offset where its batches end, and carries the chain's
//     state (last batch number and checksum, every shard's next LSN). So
//     segments are linked explicitly, a read can start in any segment after
//     RemoveBefore deleted the earlier ones, and a torn tail that a recovery
//     dropped (the previous segment's bytes past that offset) is never read
//     again.
//   - After a failed write or fsync a writer accepts nothing more: a failed
//     fsync may have lost data the kernel had accepted, and retrying would
//     hide it. Recover by reading the log again.
//
// # Clean close
//
// A format 3 writer finishes a segment (full, or the writer closed) by
// first creating the next segment, then appending an end record to the
// finished one and pebble's trailer. Close makes the next segment a close
// segment, a header only, and marks the end record "closed". So the last
// batches of a cleanly closed log are vouched for by the close segment's
// header like any others, and the end record says the log was closed. A
// writer that failed writes no end record. Format 2 writers write neither.
//
// # Torn or corrupt
//
// A read stops at the first record that is not intact (pebble's reader says
// so: ErrInvalidChunk, ErrZeroedChunk, ErrUnexpectedEOF), is not a valid
// batch, or does not continue the chain. Where it stops decides what it is:
//
//   - In a segment followed by another, it is damage (*CorruptError): the
//     next header vouches for every byte up to its declared end. A segment
//     ending early, or a record crossing the declared end, is damage too.
//   - In a close segment (the end record before it says so), anything after
//     the header but pebble's trailer is damage.
//   - In the last segment, an intact end record is damage: the segment it
//     names next was created before it and is missing. If an intact later
//     batch or an end record of this log starts anywhere after a bad record
//     in the file, it is damage: it proves the bad one was acknowledged.
//   - Pebble recognises its end-of-log trailer by the log number alone, so
//     a damaged log number can pass for one: in the last segment, bytes
//     beyond the trailer's 11 count as a bad record at the trailer.
//   - Otherwise it is a torn tail of a writer that stopped without closing
//     the log: dropped and reported in Tail.Torn with the file, offset,
//     bytes dropped and what the readable part of the record claims. A
//     sync-mode writer never acknowledged it; the read cannot tell it from
//     a damaged last batch of a log that no close evidence vouches for.
//
// Tail.Ending says which case ended the log: EndClosed, EndStopped, or
// EndUnproven (a trailer but no end record: a log an older fusee closed).
//
// OpenAppend continues a log only from a Tail that still matches the last
// segment's size, so a stale tail cannot hide batches appended after it.
//
// CorruptError names the file and offset and says to restore the data
// directory from a backup. A NoSync log that crashed before Sync can read as
// damaged (the kernel may write later pages first); such a log was never
// acknowledged and is regenerated, not recovered.
//
// # Framing: pebble's LogWriter
//
// Segments are written with pebble's record.LogWriter, not record.Writer.
// Its recyclable chunk headers carry a log number, and we pass the segment
// number: pebble's reader rejects a chunk stamped for another file, so stale
// bytes in a reused or preallocated file read as a torn tail, never as
// records. The stamp is also what lets the damage scan (scan.go) find the
// intact records after a bad one without parsing anything but header
// fields; every checksum is pebble's. The LogWriter also ends a closed
// segment with an end-of-log trailer. Its cost, a flush goroutine per open
// segment and syncs that ride along with a record, is hidden in
// segmentWriter; NoSync mode keeps the last batch back so that Sync has a
// record to ride on. Chunks are the recyclable kind, not WAL-sync chunks:
// pebble fills in their sync offsets only when a latency histogram is
// configured, and the scan needs none.
//
// # On disk
//
// A segment file is <dir>/<16-digit zero-padded decimal segment number>.log,
// numbers from 1, consecutive. Its bytes are pebble record framing: 32 KiB
// blocks of chunks, each chunk CRC-32C (4, masked as pebble does) | length
// (2) | type (1) | log number (4, the segment number's low 32 bits) |
// payload; a block tail under 11 bytes is zero padding; a closed segment
// ends with pebble's end-of-log trailer (a chunk header stamped with the
// next log number). A record is one or more chunks. Its payload is one of
// the records below (uvarint is encoding/binary's; u32/u64 little endian).
//
// Segment header, the first record of every segment:
//
//	0x01 | uvarint format (3 or 2) | format 3: u64 log id | uvarint segment |
//	  uvarint previous segment (0: none) | uvarint offset where the previous
//	  segment's batches end | uvarint last batch number before this segment |
//	  u32 its checksum | uvarint n | n × (uvarint shard, uvarint next LSN),
//	  shards ascending, listing those whose next LSN is above 1
//	format 2 instead: uvarint shard | uvarint segment | uvarint previous
//	  segment | uvarint its end offset | uvarint next LSN
//
// Format 3 batch, every later record of a shared log:
//
//	0x03 | u64 log id | uvarint batch number | u32 CRC-32C of the previous
//	  batch's payload | uvarint sections (≥1) | sections, shards ascending:
//	  uvarint shard (<1024) | uvarint first LSN | uvarint entries (≥1) |
//	  entries × (uvarint length, bytes)
//
// Format 3 end record, after a finished segment's last batch (at the end
// the next header declares), before pebble's trailer:
//
//	0x04 | u64 log id | uvarint segment | uvarint last batch number |
//	  u32 its checksum | uvarint next segment (segment + 1) | byte closed
//	  (1: the next segment is the log's close segment)
//
// Format 2 batch, every later record of a shard's log:
//
//	0x02 | uvarint shard | uvarint first LSN | uvarint entries (≥1) |
//	  entries × (uvarint length, bytes)
//
// A Position is a segment number and the byte offset of a batch's first
// chunk in that file; the offset just past a segment's last batch (where a
// closed segment's trailer starts) is valid too. docs/format-wal.md says
// the same in prose, as part of the on-disk format (docs/format.md).
package wal
