package model

import "encoding/binary"

// Rewriting an encoded record's run references without decoding it. The
// run-bearing fields (parent, pred, next, by, key, token) are consecutive
// in the encoding, after every field that does not change and before the
// payload and the parent ID, so a rewritten record is the bytes before
// them, the fields encoded again, and the bytes after them: no Record is
// built and no string or payload is copied out. ScanRecord notes where
// the fields are (RecordHead.refOff, refEnd).

// RecordRefs are the run-bearing fields of one encoded record, read by
// ReadRecordRefs, to be mapped (MapRefs) and written back (Append). Only
// the fields the presence mask shows are meaningful.
type RecordRefs struct {
	rec      []byte // the encoded record (aliased)
	mask     uint64 // its presence bits
	off, end uint32 // rec[off:end] are the fields below, as read
	Parent   ParentRef
	Pred     RunRef
	Next     RunRef
	By       RunRef
	keyID    []byte // the key's workflow ID (aliasing rec)
	KeyRun   RunNo
	keyPos   uint32
	Token    Token
}

// ReadRecordRefs reads the run-bearing fields of rec, a record ScanRecord
// returned h for. ok is false when the fields are not as EncodeRecord
// writes them (a parent or token present with no run, or a field whose
// varint does not end where ScanRecord found it): such a record is for
// DecodeRecord, whose encoding again leaves that field out.
func ReadRecordRefs(rec []byte, h *RecordHead) (r RecordRefs, ok bool) {
	r.rec, r.mask, r.off, r.end = rec, h.Mask, h.refOff, h.refEnd
	if int(r.end) > len(rec) || r.off > r.end {
		return r, false
	}
	d := dec{b: rec[r.off:r.end]}
	m := h.Mask
	if m&fParent != 0 {
		r.Parent = d.parent()
		if r.Parent.Run == 0 {
			return r, false
		}
	}
	if m&fPred != 0 {
		if r.Pred = d.runRef(); r.Pred.Run == 0 {
			return r, false
		}
	}
	if m&fNext != 0 {
		if r.Next = d.runRef(); r.Next.Run == 0 {
			return r, false
		}
	}
	if m&fBy != 0 {
		if r.By = d.runRef(); r.By.Run == 0 {
			return r, false
		}
	}
	if m&fKey != 0 {
		r.keyID = d.raw()
		r.KeyRun = RunNo(d.uv())
		r.keyPos = uint32(d.uv())
		if len(r.keyID) == 0 {
			return r, false
		}
	}
	if m&fToken != 0 {
		gs := d.uv()
		r.Token = Token{Gen: uint8(gs >> 10), Shard: int(gs & 0x3ff), Run: RunNo(d.uv()), Pos: uint32(d.uv())}
		if r.Token.Run == 0 || gs >= 1<<16 {
			return r, false
		}
	}
	return r, d.err == nil && len(d.b) == 0
}

// MapRefs replaces the run references by what m returns for them, as
// Record.MapRefs does: the same fields, in the same order, with the same
// arguments.
func (r *RecordRefs) MapRefs(keyShard int, m RunMapper) {
	if r.mask&fParent != 0 {
		n := m(RefParent, r.Parent.RunRef())
		r.Parent.Shard, r.Parent.Run = n.Shard, n.Run
	}
	if r.mask&fPred != 0 {
		r.Pred = m(RefPred, r.Pred)
	}
	if r.mask&fNext != 0 {
		r.Next = m(RefNext, r.Next)
	}
	if r.mask&fBy != 0 {
		r.By = m(RefBy, r.By)
	}
	if r.mask&fKey != 0 && r.KeyRun != 0 {
		r.KeyRun = m(RefKey, RunRef{Shard: keyShard, Run: r.KeyRun}).Run
	}
	if r.mask&fToken != 0 {
		n := m(RefToken, RunRef{Shard: r.Token.Shard, Run: r.Token.Run})
		r.Token.Shard, r.Token.Run = n.Shard, n.Run
	}
}

// SetTokenGen sets the token's generation, if the record has a token
// that names a run.
func (r *RecordRefs) SetTokenGen(gen uint8) {
	if r.mask&fToken != 0 && r.Token.Run != 0 {
		r.Token.Gen = gen
	}
}

// Append appends the record with its run-bearing fields as r now holds
// them: for a record EncodeRecord wrote, what EncodeRecord gives for the
// decoded record with the same changes. A field whose reference now names
// no run is left out, and its presence bit cleared, as EncodeRecord does.
func (r *RecordRefs) Append(dst []byte) []byte {
	m := r.mask
	if m&fParent != 0 && r.Parent.Run == 0 {
		m &^= fParent
	}
	if m&fPred != 0 && r.Pred.Run == 0 {
		m &^= fPred
	}
	if m&fNext != 0 && r.Next.Run == 0 {
		m &^= fNext
	}
	if m&fBy != 0 && r.By.Run == 0 {
		m &^= fBy
	}
	if m&fToken != 0 && r.Token.Run == 0 {
		m &^= fToken
	}
	if m == r.mask {
		dst = append(dst, r.rec[:r.off]...)
	} else {
		_, n := binary.Uvarint(r.rec[1:])
		dst = binary.AppendUvarint(append(dst, r.rec[0]), m)
		dst = append(dst, r.rec[1+n:r.off]...)
	}
	e := enc{b: dst}
	encodeRefFields(&e, m, r.Parent, r.Pred, r.Next, r.By, r.keyID, r.KeyRun, r.keyPos, r.Token)
	return append(e.b, r.rec[r.end:]...)
}
