package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Records, ops and stored values are encoded with a small tagged binary
// layout: a presence bitmask (uvarint) followed by the present fields in a
// fixed order, integers as varints and strings/bytes length-prefixed. Zero
// fields are omitted, so most records are a few bytes plus their payload.
// Framing and checksums are not done here: the log (pebble's record
// package) and the stores (pebble) do them.

// errShort is returned when an encoding ends early.
var errShort = errors.New("truncated encoding")

type enc struct{ b []byte }

func (e *enc) uv(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) sv(v int64)     { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string)   { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) bytes(p []byte) { e.uv(uint64(len(p))); e.b = append(e.b, p...) }

type dec struct {
	b   []byte
	err error
	// view makes str alias b instead of copying (the View decoders):
	// the strings are valid only while the bytes decoded are unchanged.
	view bool
}

func (d *dec) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) sv() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) raw() []byte {
	n := d.uv()
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) str() string {
	p := d.raw()
	if d.view {
		return unsafe.String(unsafe.SliceData(p), len(p))
	}
	return string(p)
}

func (d *dec) bytesCopy() []byte {
	p := d.raw()
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

// Field presence bits for Record.
const (
	fPos = 1 << iota
	fTime
	fDeadline
	fRef
	fWorkflowID
	fType
	fName
	fMsgID
	fStatus
	fAttempt
	fOrigin
	fGen
	fParent
	fPred
	fNext
	fBy
	fKey
	fToken
	fPayload
	fParentID
)

func (e *enc) record(r *Record) {
	var m uint64
	set := func(bit uint64, ok bool) {
		if ok {
			m |= bit
		}
	}
	set(fPos, r.Pos != 0)
	set(fTime, r.Time != 0)
	set(fDeadline, r.Deadline != 0)
	set(fRef, r.Ref != 0)
	set(fWorkflowID, r.WorkflowID != "")
	set(fType, r.Type != "")
	set(fName, r.Name != "")
	set(fMsgID, r.MsgID != "")
	set(fStatus, r.Status != 0)
	set(fAttempt, r.Attempt != 0)
	set(fOrigin, r.Origin != 0)
	set(fGen, r.Gen != 0)
	set(fParent, !r.Parent.IsZero())
	set(fPred, !r.Pred.IsZero())
	set(fNext, !r.Next.IsZero())
	set(fBy, !r.By.IsZero())
	set(fKey, r.Key.WorkflowID != "")
	set(fToken, r.Token.Run != 0)
	set(fPayload, len(r.Payload) != 0)
	set(fParentID, r.ParentID != "")
	e.b = append(e.b, byte(r.Kind))
	e.uv(m)
	if m&fPos != 0 {
		e.uv(uint64(r.Pos))
	}
	if m&fTime != 0 {
		e.sv(r.Time)
	}
	if m&fDeadline != 0 {
		e.sv(r.Deadline)
	}
	if m&fRef != 0 {
		e.uv(uint64(r.Ref))
	}
	if m&fWorkflowID != 0 {
		e.str(r.WorkflowID)
	}
	if m&fType != 0 {
		e.str(r.Type)
	}
	if m&fName != 0 {
		e.str(r.Name)
	}
	if m&fMsgID != 0 {
		e.str(r.MsgID)
	}
	if m&fStatus != 0 {
		e.uv(uint64(r.Status))
	}
	if m&fAttempt != 0 {
		e.uv(uint64(r.Attempt))
	}
	if m&fOrigin != 0 {
		e.uv(uint64(r.Origin))
	}
	if m&fGen != 0 {
		e.uv(uint64(r.Gen))
	}
	encodeRefFields(e, m, r.Parent, r.Pred, r.Next, r.By, r.Key.WorkflowID, r.Key.Run, r.Key.Pos, r.Token)
	if m&fPayload != 0 {
		e.bytes(r.Payload)
	}
	if m&fParentID != 0 {
		e.str(r.ParentID)
	}
}

// encodeRefFields encodes a record's run-bearing fields, those of m's
// presence bits: the one encoding of them, for EncodeRecord and for
// RecordRefs.Append, which writes them again without decoding the rest.
func encodeRefFields[S ~string | ~[]byte](e *enc, m uint64, parent ParentRef, pred, next, by RunRef, keyID S, keyRun RunNo, keyPos uint32, tok Token) {
	if m&fParent != 0 {
		e.parent(parent)
	}
	if m&fPred != 0 {
		e.runRef(pred)
	}
	if m&fNext != 0 {
		e.runRef(next)
	}
	if m&fBy != 0 {
		e.runRef(by)
	}
	if m&fKey != 0 {
		e.uv(uint64(len(keyID)))
		e.b = append(e.b, keyID...)
		e.uv(uint64(keyRun))
		e.uv(uint64(keyPos))
	}
	if m&fToken != 0 {
		// The token's generation rides above its 10 shard bits.
		e.uv(uint64(tok.Gen&0x3f)<<10 | uint64(tok.Shard&0x3ff))
		e.uv(uint64(tok.Run))
		e.uv(uint64(tok.Pos))
	}
}

func (e *enc) runRef(r RunRef)    { e.uv(uint64(r.Shard)); e.uv(uint64(r.Run)) }
func (e *enc) parent(p ParentRef) { e.uv(uint64(p.Shard)); e.uv(uint64(p.Run)); e.uv(uint64(p.Pos)) }

func (d *dec) runRef() RunRef { return RunRef{Shard: int(d.uv()), Run: RunNo(d.uv())} }
func (d *dec) parent() ParentRef {
	return ParentRef{Shard: int(d.uv()), Run: RunNo(d.uv()), Pos: uint32(d.uv())}
}

func (d *dec) record(r *Record) {
	if d.err != nil {
		return
	}
	if len(d.b) == 0 {
		d.err = errShort
		return
	}
	r.Kind = Kind(d.b[0])
	d.b = d.b[1:]
	if r.Kind == 0 || r.Kind > kindMax {
		d.err = fmt.Errorf("unknown record kind %d", r.Kind)
		return
	}
	m := d.uv()
	if m >= 1<<20 {
		d.err = fmt.Errorf("unknown record fields %#x", m)
		return
	}
	if m&fPos != 0 {
		r.Pos = uint32(d.uv())
	}
	if m&fTime != 0 {
		r.Time = d.sv()
	}
	if m&fDeadline != 0 {
		r.Deadline = d.sv()
	}
	if m&fRef != 0 {
		r.Ref = uint32(d.uv())
	}
	if m&fWorkflowID != 0 {
		r.WorkflowID = d.str()
	}
	if m&fType != 0 {
		r.Type = d.str()
	}
	if m&fName != 0 {
		r.Name = d.str()
	}
	if m&fMsgID != 0 {
		r.MsgID = d.str()
	}
	if m&fStatus != 0 {
		r.Status = Status(d.uv())
	}
	if m&fAttempt != 0 {
		r.Attempt = uint32(d.uv())
	}
	if m&fOrigin != 0 {
		r.Origin = Origin(d.uv())
	}
	if m&fGen != 0 {
		r.Gen = uint32(d.uv())
	}
	if m&fParent != 0 {
		r.Parent = d.parent()
	}
	if m&fPred != 0 {
		r.Pred = d.runRef()
	}
	if m&fNext != 0 {
		r.Next = d.runRef()
	}
	if m&fBy != 0 {
		r.By = d.runRef()
	}
	if m&fKey != 0 {
		r.Key = CtxKey{WorkflowID: d.str(), Run: RunNo(d.uv()), Pos: uint32(d.uv())}
	}
	if m&fToken != 0 {
		gs := d.uv()
		if gs >= 1<<16 {
			d.err = fmt.Errorf("completion token generation and shard %#x: more than 16 bits", gs)
			return
		}
		r.Token = Token{Gen: uint8(gs >> 10), Shard: int(gs & 0x3ff), Run: RunNo(d.uv()), Pos: uint32(d.uv())}
	}
	if m&fPayload != 0 {
		r.Payload = d.bytesCopy()
	}
	if m&fParentID != 0 {
		r.ParentID = d.str()
	}
}

// EncodeRecord appends the encoding of r to dst.
func EncodeRecord(dst []byte, r *Record) []byte {
	e := enc{b: dst}
	e.record(r)
	return e.b
}

// DecodeRecord decodes one record that fills p exactly.
func DecodeRecord(p []byte) (Record, error) {
	var r Record
	d := dec{b: p}
	d.record(&r)
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return r, d.err
}
