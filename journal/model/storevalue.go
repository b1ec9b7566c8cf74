package model

import (
	"encoding/binary"
	"fmt"

	"github.com/fusee-dev/fusee/journal/wal"
)

// Store values. Each is a fixed sequence of fields (uvarints, zigzag
// varints, and length-prefixed strings/bytes, the encodings of codec.go)
// with nothing after the last one; a decoder refuses trailing bytes.
// docs/format.md is the reference.

// StoreVersion is the version of the store layout, in every header.
// Version 3: the ID index names each workflow ID's highest-generation run
// (not its highest-numbered one), completion tokens carry the store
// generation that minted them, and run number NoSuchRun is reserved for
// references a reshard could not resolve. A store of another version is
// refused as a whole. Versions 1 and 2 were never released: only a
// development build wrote them.
const StoreVersion = 3

// CheckpointHeader is the value of a store's "H" key: what the store
// reflects and where recovery continues in the log.
type CheckpointHeader struct {
	Version uint64 // StoreVersion
	Shard   int    // the shard this store belongs to
	Count   int    // the directory's shard count when it was written
	LSN     uint64 // every log entry of this shard up to LSN is reflected
	NextRun RunNo  // the number the next run started here gets
	NextSeq uint64 // the next outbox sequence number
	// Log is the position in the shared log of the first batch that can
	// hold this shard's entries after LSN: recovery reads from there. In a
	// log format 2 directory it is unused (zero): a shard's own log is
	// read from its first segment.
	Log     wal.Position
	Now     int64  // the engine's virtual clock at the checkpoint (ms)
	Created int64  // the directory's creation time (virtual ms)
	Gen     uint64 // store generation: 1 when created; each rebuild (reshard, upgrade) adds one
	Seq     uint64 // checkpoints written into this store generation (0: the initial one)
}

// EncodeHeader appends the encoding of h to dst.
func EncodeHeader(dst []byte, h *CheckpointHeader) []byte {
	e := enc{b: dst}
	e.uv(h.Version)
	e.uv(uint64(h.Shard))
	e.uv(uint64(h.Count))
	e.uv(h.LSN)
	e.uv(uint64(h.NextRun))
	e.uv(h.NextSeq)
	e.uv(h.Log.Segment)
	e.sv(h.Log.Offset)
	e.sv(h.Now)
	e.sv(h.Created)
	e.uv(h.Gen)
	e.uv(h.Seq)
	return e.b
}

// DecodeHeader decodes a checkpoint header.
func DecodeHeader(p []byte) (CheckpointHeader, error) {
	var h CheckpointHeader
	d := dec{b: p}
	h.Version = d.uv()
	if d.err == nil && h.Version != StoreVersion {
		return h, &StoreVersionError{Version: h.Version}
	}
	h.Shard = int(d.uv())
	h.Count = int(d.uv())
	h.LSN = d.uv()
	h.NextRun = RunNo(d.uv())
	h.NextSeq = d.uv()
	h.Log.Segment = d.uv()
	h.Log.Offset = d.sv()
	h.Now = d.sv()
	h.Created = d.sv()
	h.Gen = d.uv()
	h.Seq = d.uv()
	return h, d.finish()
}

// StoreVersionError is a checkpoint header of a store layout version
// this fusee does not read. The store is not damaged; it was written by
// another build. Versions below StoreVersion were only ever written by
// development builds, so there is nothing to upgrade from: such a
// directory must be generated again.
type StoreVersionError struct {
	Version uint64 // the version the header has
}

func (e *StoreVersionError) Error() string {
	if e.Version < StoreVersion {
		return fmt.Sprintf("store layout version %d, this fusee reads only version %d: version %d was never released, "+
			"so the directory was written by a development build of fusee and must be regenerated", e.Version, StoreVersion, e.Version)
	}
	return fmt.Sprintf("store layout version %d, this fusee reads only version %d: the directory was written by a newer fusee",
		e.Version, StoreVersion)
}

// finish reports a decoding error or trailing bytes.
func (d *dec) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return d.err
}

// RunEntry is the value of a run's "R" key: everything about the run but
// its journal records, which have keys of their own.
type RunEntry struct {
	State      RunState
	Renumbered bool
	Gen        uint32
	Status     Status
	Started    int64
	Finished   int64
	Records    uint32 // journal length: records at positions 0..Records-1 follow (0 for a tombstone)
	WorkflowID string
	Type       string
}

// Run entry flags.
const runFlagRenumbered = 1

// EncodeRunEntry appends the encoding of a run entry to dst.
func EncodeRunEntry(dst []byte, r *RunEntry) []byte {
	e := enc{b: dst}
	e.b = append(e.b, byte(r.State))
	var flags uint64
	if r.Renumbered {
		flags |= runFlagRenumbered
	}
	e.uv(flags)
	e.uv(uint64(r.Gen))
	e.uv(uint64(r.Status))
	e.sv(r.Started)
	e.sv(r.Finished)
	e.uv(uint64(r.Records))
	e.str(r.WorkflowID)
	e.str(r.Type)
	return e.b
}

// DecodeRunEntry decodes a run entry.
func DecodeRunEntry(p []byte) (RunEntry, error) { return decodeRunEntry(p, false) }

// ViewRunEntry is DecodeRunEntry with the entry's strings aliasing p
// instead of copied from it: nothing is allocated, and the entry is valid
// only while p is unchanged (a reader that looks at each entry once).
func ViewRunEntry(p []byte) (RunEntry, error) { return decodeRunEntry(p, true) }

func decodeRunEntry(p []byte, view bool) (RunEntry, error) {
	var r RunEntry
	if len(p) == 0 {
		return r, errShort
	}
	r.State = RunState(p[0])
	if r.State < StateRunning || r.State > StateTombstone {
		return r, fmt.Errorf("unknown run state %d", p[0])
	}
	d := dec{b: p[1:], view: view}
	flags := d.uv()
	if flags&^runFlagRenumbered != 0 {
		return r, fmt.Errorf("unknown run flags %#x", flags)
	}
	r.Renumbered = flags&runFlagRenumbered != 0
	r.Gen = uint32(d.uv())
	r.Status = Status(d.uv())
	r.Started = d.sv()
	r.Finished = d.sv()
	r.Records = uint32(d.uv())
	r.WorkflowID = d.str()
	r.Type = d.str()
	return r, d.finish()
}

// EntryOf is the run entry of r.
func EntryOf(r *Run) RunEntry {
	return RunEntry{State: r.State, Renumbered: r.Renumbered, Gen: r.Gen, Status: r.Status,
		Started: r.Started, Finished: r.Finished, Records: uint32(len(r.Journal)),
		WorkflowID: r.WorkflowID, Type: r.Type}
}

// RunOfEntry is run no as its entry e describes it, without its journal
// (EntryOf's inverse but for the records).
func RunOfEntry(no RunNo, e *RunEntry) *Run {
	return &Run{No: no, WorkflowID: e.WorkflowID, Gen: e.Gen, Type: e.Type, State: e.State,
		Status: e.Status, Started: e.Started, Finished: e.Finished, Renumbered: e.Renumbered}
}

// EncodeMessage appends the encoding of an outbox message (all but its
// Seq, which is in the key) to dst.
func EncodeMessage(dst []byte, m *Message) []byte {
	e := enc{b: dst}
	e.b = append(e.b, byte(m.Kind))
	e.str(m.ID)
	e.runRef(m.From)
	e.str(m.Target)
	e.parent(m.Parent)
	e.str(m.ParentID)
	e.str(m.Type)
	e.str(m.Name)
	e.uv(uint64(m.Status))
	e.sv(m.Deadline)
	e.sv(m.Sent)
	e.bytes(m.Payload)
	return e.b
}

// DecodeMessage decodes an outbox message stored under sequence seq.
func DecodeMessage(p []byte, seq uint64) (*Message, error) {
	if len(p) == 0 {
		return nil, errShort
	}
	m := &Message{Kind: MsgKind(p[0]), Seq: seq}
	if m.Kind < MsgStartChild || m.Kind > MsgUpdateResult {
		return nil, fmt.Errorf("unknown message kind %d", p[0])
	}
	d := dec{b: p[1:]}
	m.ID = d.str()
	m.From = d.runRef()
	m.Target = d.str()
	m.Parent = d.parent()
	m.ParentID = d.str()
	m.Type = d.str()
	m.Name = d.str()
	m.Status = Status(d.uv())
	m.Deadline = d.sv()
	m.Sent = d.sv()
	m.Payload = d.bytesCopy()
	return m, d.finish()
}

// EncodeHistory appends the encoding of an archived history (a record
// count, then each record length-prefixed) to dst.
func EncodeHistory(dst []byte, recs []Record) []byte {
	dst = AppendHistoryLen(dst, len(recs))
	var scratch []byte
	for i := range recs {
		scratch = EncodeRecord(scratch[:0], &recs[i])
		dst = AppendHistoryRecord(dst, scratch)
	}
	return dst
}

// DecodeHistory decodes an archived history.
func DecodeHistory(p []byte) ([]Record, error) {
	d := dec{b: p}
	n := d.uv()
	if d.err != nil {
		return nil, d.err
	}
	if n > uint64(len(p)) { // every record takes at least one byte
		return nil, fmt.Errorf("history claims %d records in %d bytes", n, len(p))
	}
	recs := make([]Record, n)
	for i := range recs {
		raw := d.raw()
		if d.err != nil {
			return nil, d.err
		}
		r, err := DecodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs[i] = r
	}
	return recs, d.finish()
}

// EncodeSeenValue appends the value of an "S" key (a receiver dedup
// entry) to dst: the receiving workflow ID, as a length-prefixed string.
func EncodeSeenValue(dst []byte, workflowID string) []byte {
	e := enc{b: dst}
	e.str(workflowID)
	return e.b
}

// DecodeSeenValue decodes the value of an "S" key: the workflow ID the
// message was delivered to, which must not be empty.
func DecodeSeenValue(p []byte) (string, error) { return decodeSeenValue(p, false) }

// ViewSeenValue is DecodeSeenValue with the workflow ID aliasing p (see
// ViewRunEntry).
func ViewSeenValue(p []byte) (string, error) { return decodeSeenValue(p, true) }

func decodeSeenValue(p []byte, view bool) (string, error) {
	d := dec{b: p, view: view}
	wf := d.str()
	if err := d.finish(); err != nil {
		return "", fmt.Errorf("seen value: %w", err)
	}
	if wf == "" {
		return "", fmt.Errorf("seen value without the receiving workflow ID")
	}
	return wf, nil
}

// EncodeRunNo is the value of an "I" key.
func EncodeRunNo(no RunNo) []byte { return AppendRunNo(nil, no) }

// AppendRunNo appends EncodeRunNo(no) to dst.
func AppendRunNo(dst []byte, no RunNo) []byte { return binary.BigEndian.AppendUint64(dst, uint64(no)) }

// DecodeIndexValue decodes the value of an "I" key.
func DecodeIndexValue(p []byte) (RunNo, error) {
	if len(p) != 8 {
		return 0, fmt.Errorf("index value of %d bytes, want 8", len(p))
	}
	return RunNo(binary.BigEndian.Uint64(p)), nil
}
