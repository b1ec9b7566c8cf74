package model

import (
	"encoding/binary"
	"fmt"
)

// Byte-level access to runs, for a rewrite that copies what it does not
// change (reshard): a record is checked field by field without being
// decoded into a Record, and only a record whose presence mask shows a
// run reference needs decoding to be rewritten.

// recordRefFields are the presence bits of a record's run-bearing fields
// (the ones Record.MapRefs visits).
const recordRefFields = fParent | fPred | fNext | fBy | fKey | fToken

// RecordHead is what ScanRecord reads of an encoded record on its way
// through it.
type RecordHead struct {
	Kind Kind
	Mask uint64 // the presence bits
	Pos  uint32
	Ref  uint32
	// where the workflow ID field's bytes are in the encoded record
	wfOff, wfLen uint32
	// where the run-bearing fields' bytes are (refbytes.go): from the
	// parent's first byte to the token's last
	refOff, refEnd uint32
}

// WorkflowID is the workflow ID field of rec, the record h is the head of
// (aliasing rec).
func (h *RecordHead) WorkflowID(rec []byte) []byte { return rec[h.wfOff : h.wfOff+h.wfLen] }

// HasRefs reports whether the record has a run-bearing field set: only
// such a record changes when its runs are renumbered or moved.
func (h *RecordHead) HasRefs() bool { return h.Mask&recordRefFields != 0 }

// ScanRecord checks that p is exactly one encoded record, refusing what
// DecodeRecord refuses, without allocating, and returns its head.
func ScanRecord(p []byte) (RecordHead, error) {
	h, d, err := readHead(p)
	if err != nil {
		return h, err
	}
	m := h.Mask
	if m&fTime != 0 {
		d.sv()
	}
	if m&fDeadline != 0 {
		d.sv()
	}
	if m&fRef != 0 {
		h.Ref = uint32(d.uv())
	}
	if m&fWorkflowID != 0 {
		id := d.raw()
		h.wfLen = uint32(len(id))
		h.wfOff = uint32(len(p) - len(d.b) - len(id))
	}
	for _, bit := range [...]uint64{fType, fName, fMsgID} {
		if m&bit != 0 {
			d.raw()
		}
	}
	for _, bit := range [...]uint64{fStatus, fAttempt, fOrigin, fGen} {
		if m&bit != 0 {
			d.uv()
		}
	}
	h.refOff = uint32(len(p) - len(d.b))
	if m&fParent != 0 {
		d.uv()
		d.uv()
		d.uv()
	}
	for _, bit := range [...]uint64{fPred, fNext, fBy} {
		if m&bit != 0 {
			d.uv()
			d.uv()
		}
	}
	if m&fKey != 0 {
		d.raw()
		d.uv()
		d.uv()
	}
	if m&fToken != 0 {
		if gs := d.uv(); gs >= 1<<16 {
			return h, fmt.Errorf("completion token generation and shard %#x: more than 16 bits", gs)
		}
		d.uv()
		d.uv()
	}
	h.refEnd = uint32(len(p) - len(d.b))
	if m&fPayload != 0 {
		d.raw()
	}
	if m&fParentID != 0 {
		d.raw()
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return h, d.err
}

// PeekRecord reads an encoded record's kind, presence bits and position
// and nothing after them: its head has only Kind, Mask and Pos, and the
// rest of the record is not checked. It is for bytes known to be a record
// some other way (the reshard's check, docs/reshard.md §6): anything else
// is for ScanRecord.
func PeekRecord(p []byte) (RecordHead, error) {
	h, d, err := readHead(p)
	if err == nil {
		err = d.err
	}
	return h, err
}

// readHead reads an encoded record's kind, presence bits and position,
// refusing an unknown kind or field, and returns the decoder after them.
func readHead(p []byte) (RecordHead, dec, error) {
	var h RecordHead
	if len(p) == 0 {
		return h, dec{}, errShort
	}
	h.Kind = Kind(p[0])
	if h.Kind == 0 || h.Kind > kindMax {
		return h, dec{}, fmt.Errorf("unknown record kind %d", h.Kind)
	}
	d := dec{b: p[1:]}
	h.Mask = d.uv()
	if h.Mask >= 1<<20 {
		return h, dec{}, fmt.Errorf("unknown record fields %#x", h.Mask)
	}
	if h.Mask&fPos != 0 {
		h.Pos = uint32(d.uv())
	}
	return h, d, nil
}

// EachHistoryRecord calls fn with each encoded record of an encoded
// archived history in order, checked by ScanRecord; the slices alias p.
// It refuses what DecodeHistory refuses.
func EachHistoryRecord(p []byte, fn func(rec []byte, h *RecordHead) error) error {
	return EachHistoryRecordAt(p, func(_ int, rec []byte, h *RecordHead) error { return fn(rec, h) })
}

// EachHistoryRecordAt is EachHistoryRecord that also gives where in p
// each record begins (its length's first byte): p[:at] is the history's
// count and the records before it, as they are.
func EachHistoryRecordAt(p []byte, fn func(at int, rec []byte, h *RecordHead) error) error {
	var h RecordHead // one for every record: fn gets its address
	i := 0
	return eachHistory(p, func(at int, rec []byte) error {
		var err error
		if h, err = ScanRecord(rec); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		i++
		return fn(at, rec, &h)
	})
}

// EachHistoryBytes calls fn with each encoded record of an encoded
// archived history in order, checking the history's framing (its count,
// each record's length, nothing after the last) as EachHistoryRecord does
// but not the records themselves; the slices alias p.
func EachHistoryBytes(p []byte, fn func(rec []byte) error) error {
	return eachHistory(p, func(_ int, rec []byte) error { return fn(rec) })
}

func eachHistory(p []byte, fn func(at int, rec []byte) error) error {
	d := dec{b: p}
	n := d.uv()
	if d.err != nil {
		return d.err
	}
	if n > uint64(len(p)) {
		return fmt.Errorf("history claims %d records in %d bytes", n, len(p))
	}
	for range n {
		at := len(p) - len(d.b)
		raw := d.raw()
		if d.err != nil {
			return d.err
		}
		if err := fn(at, raw); err != nil {
			return err
		}
	}
	return d.finish()
}

// HistoryLen is the record count an encoded archived history begins with.
func HistoryLen(p []byte) (int, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 {
		return 0, errShort
	}
	return int(n), nil
}

// AppendHistoryLen appends the record count that begins an encoded
// archived history; AppendHistoryRecord then appends each record.
func AppendHistoryLen(dst []byte, n int) []byte { return binary.AppendUvarint(dst, uint64(n)) }

// AppendHistoryRecord appends one encoded record to an encoded history.
func AppendHistoryRecord(dst, rec []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(rec))), rec...)
}
