package wal

import (
	"errors"
	"fmt"
	"strings"
)

// CorruptError reports damage inside acknowledged data: bytes the log had
// promised to keep are missing, unreadable or do not chain. Recovery cannot
// continue past it; the fix is to restore the data directory from a backup.
// A torn, never-acknowledged tail is not a CorruptError: Read drops it and
// reports it in Tail.Torn.
type CorruptError struct {
	File   string // the segment file, as passed to the filesystem
	Offset int64  // byte offset in File where the damage starts
	Reason string // what is wrong, in words
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s at offset %d: %s; the log is damaged inside acknowledged data: restore the data directory from a backup",
		e.File, e.Offset, e.Reason)
}

// ErrPositionRemoved is returned (wrapped) by Read when the starting position
// lies in a segment that RemoveBefore already deleted: whatever asked to read
// from there (a checkpoint) is older than the log.
var ErrPositionRemoved = errors.New("the log no longer holds that position")

// ErrClosed is returned by a Writer's methods after Close.
var ErrClosed = errors.New("wal: writer is closed")

// TornTail describes the tail that Read dropped from the last segment of a
// log whose writer stopped without closing it: the bytes from Offset to the
// end of File, where no intact batch or end record of the log follows.
type TornTail struct {
	File   string
	Offset int64
	Bytes  int64  // how many bytes were dropped
	Reason string // why the record at Offset was not accepted
	// Batch is the number of the batch the dropped bytes start (the next
	// one the log expected), and Sections what the readable part of its
	// record says it held, shard by shard: read from bytes whose checksum
	// failed, so a claim, kept only as far as it continues the chain (the
	// log id, batch number, previous checksum and each shard's next LSN
	// are the ones the log expected). Batch is 0 and Sections empty when
	// the bytes start no such batch (format 2 logs have no batch numbers:
	// Batch stays 0).
	Batch    uint64
	Sections []TornSection
}

// TornSection is one shard's part of a dropped batch, as its readable
// prefix claims: Entries entries from FirstLSN on.
type TornSection struct {
	Shard    int
	FirstLSN uint64
	Entries  uint64
}

// LastLSN is the last LSN the section claims.
func (s TornSection) LastLSN() uint64 { return s.FirstLSN + s.Entries - 1 }

func (t *TornTail) String() string {
	if t == nil {
		return ""
	}
	s := fmt.Sprintf("%s: dropped %d bytes from offset %d (%s)", t.File, t.Bytes, t.Offset, t.Reason)
	if len(t.Sections) > 0 {
		var b strings.Builder
		for i, sec := range t.Sections {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "shard %d LSNs %d-%d", sec.Shard, sec.FirstLSN, sec.LastLSN())
		}
		if t.Batch != 0 {
			s += fmt.Sprintf("; they start batch %d, whose header claims %s", t.Batch, b.String())
		} else {
			s += fmt.Sprintf("; they start a batch whose header claims %s", b.String())
		}
	}
	return s
}
