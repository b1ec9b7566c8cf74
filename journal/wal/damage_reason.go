package wal

import (
	"errors"
	"io"

	"github.com/cockroachdb/pebble/v2/record"
)

// recordDamage says in an operator's terms what the record reader found
// wrong with a record (err is a record damage: isRecordDamage), instead of
// the reader's own "pebble/record: ..." text. The file and offset go with
// it in the *CorruptError.
func recordDamage(err error) string {
	switch {
	case errors.Is(err, record.ErrInvalidChunk):
		return "damaged or incomplete record: checksum mismatch (the record's bytes, or its header, are not what was written)"
	case errors.Is(err, record.ErrZeroedChunk):
		return "damaged or incomplete record: zeroed bytes where a record should be"
	case errors.Is(err, record.ErrUnexpectedEOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The reader reports a checksum mismatch it cannot prove is more
		// than a torn write this way too: the two read the same.
		return "damaged or incomplete record: checksum mismatch, or the record is cut short"
	}
	return "damaged or incomplete record: " + err.Error()
}
