package wal

import (
	"errors"
	"fmt"
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

// TornTail describes a never-acknowledged tail that Read dropped: the bytes
// from Offset to the end of File.
type TornTail struct {
	File   string
	Offset int64
	Bytes  int64  // how many bytes were dropped
	Reason string // why the record at Offset was not accepted
}

func (t *TornTail) String() string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%s: dropped %d bytes from offset %d (%s)", t.File, t.Bytes, t.Offset, t.Reason)
}
