package check

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/fusee-dev/fusee/journal/model"
)

// timers compares the timer index with the one the journals imply: the
// implied timers (put into the shard's map as the runs passed) and the
// stored ones meet in the map.
func (v *verifier) timers(s *sh) error {
	err := s.src.timers(func(t model.TimerKey) error { return s.join.Put(append(timerJoinKey(t), 1), nil) })
	if err != nil {
		return err
	}
	var cur []byte
	implied, stored := false, false
	flush := func() {
		if cur == nil || implied == stored {
			return
		}
		run := model.RunNo(binary.BigEndian.Uint64(cur[1:]))
		pos := binary.BigEndian.Uint32(cur[9:])
		at := int64(binary.BigEndian.Uint64(cur[13:]) ^ (1 << 63))
		if implied {
			v.addf(KindTimerMissing, s.Index, run, "position %d implies a timer at %d that the index lacks", pos, at)
		} else {
			v.addf(KindTimerStale, s.Index, run, "the index holds a timer at %d for position %d that no pending record implies", at, pos)
		}
	}
	err = s.join.Each([]byte{joinTimer}, func(k, _ []byte) error {
		t := k[:len(k)-1]
		if !bytes.Equal(t, cur) {
			flush()
			cur, implied, stored = append(cur[:0], t...), false, false
		}
		if k[len(k)-1] == 0 {
			implied = true
		} else {
			stored = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	flush()
	return nil
}

// storeOutbox puts the shard's stored messages into its map before its
// runs pass (see outbox), and notes their IDs in s.stored while they fit.
func (v *verifier) storeOutbox(s *sh) error {
	s.stored = map[string]struct{}{}
	room := v.sp.share / 4
	return s.src.outbox(func(id string, m *model.Message) error {
		if !s.storedAll {
			if room -= int64(len(id)) + 64; room < 0 {
				s.stored, s.storedAll = nil, true
			} else {
				s.stored[id] = struct{}{}
			}
		}
		v.seq++
		k := append(appendStr([]byte{joinOutbox}, id), 1)
		if err := s.join.Put(appendU64(k, v.seq), encodeMsg(nil, m)); err != nil {
			return err
		}
		if !(m.Seq == 0 || m.Seq >= s.NextSeq) {
			if err := s.join.Put(appendStr(appendU64([]byte{joinSeq}, m.Seq), id), appendU64(nil, uint64(m.From.Run))); err != nil {
				return err
			}
		}
		k = appendStr([]byte{'X'}, id)
		v.shared.mu.Lock()
		defer v.shared.mu.Unlock()
		return v.cross.Put(appendU32(k, uint32(s.slot)), appendU64(appendI64(nil, int64(s.Index)), uint64(m.From.Run)))
	})
}

// outbox checks every message against the record of its sender that
// produced it, and the run-number-free rule for message IDs. The messages
// the journals produce (put into the shard's map as the runs passed, with
// their fields when a stored message has their ID) and the stored ones
// (put in before the runs) meet in the map by message ID, the produced
// first, in run-number order; the first is the one a stored message must
// equal.
func (v *verifier) outbox(s *sh) error {
	var cur []byte
	var want *model.Message
	produced := false
	err := s.join.Each([]byte{joinOutbox}, func(k, val []byte) error {
		e := 1 + strEnd(k[1:])
		id, _, err := cutStr(k[1:])
		if err != nil {
			return err
		}
		if !bytes.Equal(k[:e], cur) {
			cur, want, produced = append(cur[:0], k[:e]...), nil, false
		}
		if k[e] == 0 { // produced
			if len(k) < e+9 {
				return errors.New("check: a damaged spilled message key")
			}
			if produced {
				v.addf(KindMsgIDDuplicate, s.Index, model.RunNo(binary.BigEndian.Uint64(k[e+1:])), "message ID %q is produced by two records", id)
				return nil
			}
			produced = true
			if len(val) > 0 {
				want, err = decodeMsg(val)
			}
			return err
		}
		m, err := decodeMsg(val)
		if err != nil {
			return err
		}
		return v.message(s, id, m, want)
	})
	if err != nil {
		return err
	}
	// Sequence numbers: the first message by ID keeps a number, the others
	// that share it are reported.
	var seq uint64
	var first string
	return s.join.Each([]byte{joinSeq}, func(k, val []byte) error {
		n := binary.BigEndian.Uint64(k[1:])
		id, _, err := cutStr(k[9:])
		if err != nil {
			return err
		}
		if first != "" && n == seq {
			v.addf(KindOutboxSeq, s.Index, model.RunNo(binary.BigEndian.Uint64(val)), "message %q: sequence number %d is also message %q's", id, n, first)
			return nil
		}
		seq, first = n, id
		return nil
	})
}

// message checks one stored message (under key id) against want, the
// message its sender's records produced under that ID (nil: none).
func (v *verifier) message(s *sh, id string, m, want *model.Message) error {
	if !messageRules(v.addf, s.Index, s.NextSeq, id, m) {
		return nil
	}
	diff := ""
	if want != nil {
		diff = messageDiff(m, want)
	}
	if !v.w.pointRefs {
		v.deferSender(s, id, m.From, want == nil, diff)
		return nil
	}
	from, _, err := s.src.entry(m.From.Run)
	if err != nil {
		return err
	}
	senderRules(v.addf, v.place(s), id, m.From, from, want == nil, diff)
	return nil
}

// The rules of a stored message, made by the streaming verifier and by
// the whole-memory oracle of the tests, which each gather what they need
// (the sender's entry, the message its records produce) their own way.

// aboutMessage reports findings about the message stored under id on
// shard, sent by run.
func aboutMessage(addf addFinding, shard int, run model.RunNo, id string) addRunFinding {
	return func(k Kind, format string, args ...any) {
		addf(k, shard, run, "message %q: %s", id, fmt.Sprintf(format, args...))
	}
}

// messageRules checks the message m stored under key id on shard (whose
// next sequence number is nextSeq): its own fields, and that its sender
// is on this shard, which it says (true) before the sender's checks.
func messageRules(addf addFinding, shard int, nextSeq uint64, id string, m *model.Message) bool {
	add := aboutMessage(addf, shard, m.From.Run, id)
	if m.ID != id {
		add(KindOutboxKey, "stored under this ID but says it is %q", m.ID)
	}
	if m.Kind < model.MsgStartChild || m.Kind > model.MsgUpdateResult {
		add(KindOutboxKind, "unknown kind %d", uint8(m.Kind))
	}
	if m.Target == "" {
		add(KindOutboxKind, "no target workflow ID")
	}
	if m.Seq == 0 || m.Seq >= nextSeq {
		add(KindOutboxSeq, "sequence number %d, the shard's next is %d", m.Seq, nextSeq)
	}
	if m.Kind != model.MsgSignal && m.Kind != model.MsgCancel {
		if m.Parent.IsZero() {
			add(KindOutboxParent, "a %s without the parent position it is for", m.Kind)
		}
		if m.ParentID == "" {
			add(KindOutboxParent, "a %s without the parent's workflow ID", m.Kind)
		}
	}
	if m.From.Shard != shard {
		add(KindOutboxFrom, "sender %s is not a run of this shard", m.From)
		return false
	}
	return true
}

// senderRules finishes the check of a stored message (under key id) once
// its sender's entry is read: from is the run (nil: none), unproduced
// says no record produced the message, diff how it differs from the one
// that did.
func senderRules(addf addFinding, p runPlace, id string, ref model.RunRef, from *model.Run, unproduced bool, diff string) {
	add := aboutMessage(addf, p.shard, ref.Run, id)
	if from == nil {
		add(KindOutboxFrom, "sender %s is not a run of this shard", ref)
		return
	}
	msgIDRunNumber(addf, p, from, id)
	if unproduced {
		add(KindOutboxSource, "no record of sender %s (%q generation %d) produces it", ref, from.WorkflowID, from.Gen)
		return
	}
	if diff != "" {
		add(KindOutboxSource, "differs from what its sender's record produced: %s", diff)
	}
}

// encodeMsg appends m to dst for a spill map, every field as it is
// (damaged ones too); decodeMsg reads it back.
func encodeMsg(dst []byte, m *model.Message) []byte {
	str := func(s string) { dst = binary.AppendUvarint(dst, uint64(len(s))); dst = append(dst, s...) }
	dst = append(dst, byte(m.Kind), byte(m.Status))
	str(m.ID)
	dst = appendI64(dst, int64(m.From.Shard))
	dst = appendU64(dst, uint64(m.From.Run))
	str(m.Target)
	dst = appendI64(dst, int64(m.Parent.Shard))
	dst = appendU64(dst, uint64(m.Parent.Run))
	dst = appendU32(dst, m.Parent.Pos)
	str(m.ParentID)
	str(m.Type)
	str(m.Name)
	dst = appendI64(dst, m.Deadline)
	dst = appendI64(dst, m.Sent)
	dst = appendU64(dst, m.Seq)
	return append(dst, m.Payload...)
}

func decodeMsg(b []byte) (*model.Message, error) {
	bad := errors.New("check: a damaged spilled message")
	if len(b) < 2 {
		return nil, bad
	}
	m := &model.Message{Kind: model.MsgKind(b[0]), Status: model.Status(b[1])}
	b = b[2:]
	ok := true
	str := func() string {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			ok = false
			return ""
		}
		s := string(b[w : w+int(n)])
		b = b[w+int(n):]
		return s
	}
	fixed := func(n int) []byte {
		if len(b) < n {
			ok = false
			return make([]byte, n)
		}
		out := b[:n]
		b = b[n:]
		return out
	}
	i64 := func() int64 { return int64(binary.BigEndian.Uint64(fixed(8)) ^ (1 << 63)) }
	m.ID = str()
	m.From.Shard = int(i64())
	m.From.Run = model.RunNo(binary.BigEndian.Uint64(fixed(8)))
	m.Target = str()
	m.Parent.Shard = int(i64())
	m.Parent.Run = model.RunNo(binary.BigEndian.Uint64(fixed(8)))
	m.Parent.Pos = binary.BigEndian.Uint32(fixed(4))
	m.ParentID, m.Type, m.Name = str(), str(), str()
	m.Deadline, m.Sent = i64(), i64()
	m.Seq = binary.BigEndian.Uint64(fixed(8))
	if !ok {
		return nil, bad
	}
	if len(b) > 0 {
		m.Payload = bytes.Clone(b)
	}
	return m, nil
}

// produces regenerates the messages a run's history sends, as Apply does:
// every field but Seq, including the parent's workflow ID and the send
// time (the producing record's time).
func produces(shard int, r *model.Run, h []model.Record) []model.Message {
	from := model.RunRef{Shard: shard, Run: r.No}
	var out []model.Message
	for i := range h {
		rec := &h[i]
		switch rec.Kind {
		case model.KindChild:
			out = append(out, model.Message{ID: rec.MsgID, Kind: model.MsgStartChild, From: from, Target: rec.WorkflowID,
				Parent: model.ParentRef{Shard: shard, Run: r.No, Pos: rec.Pos}, ParentID: r.WorkflowID, Type: rec.Type,
				Deadline: rec.Deadline, Sent: rec.Time, Payload: rec.Payload})
		case model.KindSend:
			kind := model.MsgSignal
			if rec.Attempt == model.SendCancel {
				kind = model.MsgCancel
			}
			out = append(out, model.Message{ID: rec.MsgID, Kind: kind, From: from, Target: rec.WorkflowID, Name: rec.Name,
				Sent: rec.Time, Payload: rec.Payload})
		case model.KindUpdateDone:
			if int(rec.Ref) >= len(h) {
				continue
			}
			if u := &h[rec.Ref]; !u.Parent.IsZero() {
				out = append(out, model.Message{ID: fmt.Sprintf("%s/%d/u%d", r.WorkflowID, r.Gen, rec.Ref), Kind: model.MsgUpdateResult,
					From: from, Target: u.ParentID, Parent: u.Parent, ParentID: u.ParentID, Status: rec.Status,
					Sent: rec.Time, Payload: rec.Payload})
			}
		case model.KindDone:
			if st := &h[0]; st.Kind == model.KindStart && !st.Parent.IsZero() {
				out = append(out, model.Message{ID: fmt.Sprintf("%s/%d/r", r.WorkflowID, r.Gen), Kind: model.MsgChildResult,
					From: from, Target: st.ParentID, Parent: st.Parent, ParentID: st.ParentID, Status: rec.Status,
					Sent: rec.Time, Payload: rec.Payload})
			}
		}
	}
	return out
}

// messageDiff names the fields in which m differs from want (Seq aside).
func messageDiff(m, want *model.Message) string {
	var d []string
	if m.Kind != want.Kind {
		d = append(d, fmt.Sprintf("kind %s, want %s", m.Kind, want.Kind))
	}
	if m.From != want.From {
		d = append(d, fmt.Sprintf("from %s, want %s", m.From, want.From))
	}
	if m.Target != want.Target {
		d = append(d, fmt.Sprintf("target %q, want %q", m.Target, want.Target))
	}
	if m.Parent != want.Parent {
		d = append(d, fmt.Sprintf("parent %s, want %s", m.Parent, want.Parent))
	}
	if m.ParentID != want.ParentID {
		d = append(d, fmt.Sprintf("parent ID %q, want %q", m.ParentID, want.ParentID))
	}
	if m.Type != want.Type {
		d = append(d, fmt.Sprintf("type %q, want %q", m.Type, want.Type))
	}
	if m.Name != want.Name {
		d = append(d, fmt.Sprintf("name %q, want %q", m.Name, want.Name))
	}
	if m.Status != want.Status {
		d = append(d, fmt.Sprintf("status %s, want %s", m.Status, want.Status))
	}
	if m.Deadline != want.Deadline {
		d = append(d, fmt.Sprintf("deadline %d, want %d", m.Deadline, want.Deadline))
	}
	if m.Sent != want.Sent {
		d = append(d, fmt.Sprintf("sent at %d, want %d", m.Sent, want.Sent))
	}
	if !bytes.Equal(m.Payload, want.Payload) {
		d = append(d, "payload differs")
	}
	return strings.Join(d, "; ")
}

// recordMsgIDs applies the run-number rule to the message IDs a run's
// records carry (sent messages, and the IDs of updates it accepted), so
// that an offending ID is caught even after its message was acknowledged.
func recordMsgIDs(addf addFinding, p runPlace, r *model.Run, h []model.Record) {
	for i := range h {
		if rec := &h[i]; rec.MsgID != "" && (rec.Kind == model.KindChild || rec.Kind == model.KindSend) {
			msgIDRunNumber(addf, p, r, rec.MsgID)
		}
	}
}

// msgIDRunNumber warns when a message ID sent by r contains text derived
// from r's run number: r's Ctx::key prefix "<ID>/<run>/" or the shard-and-
// run part of its completion tokens. It can only tell when r's number
// differs from its generation (the "<ID>/<gen>/" prefix is the intended
// one), so it is a heuristic, and a warning.
func msgIDRunNumber(addf addFinding, p runPlace, r *model.Run, id string) {
	if r.No != model.RunNo(r.Gen) && strings.Contains(id, fmt.Sprintf("%s/%d/", r.WorkflowID, r.No)) {
		addf(KindMsgIDRunNumber, p.shard, r.No, "message ID %q contains this run's Ctx::key prefix %q", id, fmt.Sprintf("%s/%d/", r.WorkflowID, r.No))
	}
	tok := model.Token{Gen: model.TokenGen(p.storeGen), Shard: p.shard, Run: r.No}.String()[:18] // "tk" + gen, shard and run, without the position
	if strings.Contains(strings.ToLower(id), tok) {
		addf(KindMsgIDRunNumber, p.shard, r.No, "message ID %q contains this run's completion token prefix %q", id, tok)
	}
}

// seen checks the receiver dedup entries: each names the workflow its
// message was delivered to, and a repeat of the message is routed by that
// workflow ID, so the entry must be on that workflow's shard.
func (v *verifier) seen(s *sh) error {
	return s.src.seen(func(id, wf string) error {
		seenRule(v.addf, v.place(s), id, wf)
		return nil
	})
}

// seenRule checks the dedup entry of message id, delivered to workflow
// wf, at place p.
func seenRule(addf addFinding, p runPlace, id, wf string) {
	if wf == "" {
		addf(KindSeenWrongShard, p.shard, 0, "dedup entry %q names no receiving workflow", id)
		return
	}
	if want := model.ShardOf(wf, p.shards); want != p.shard {
		addf(KindSeenWrongShard, p.shard, 0, "dedup entry %q was delivered to %q, which belongs on shard %d of %d",
			id, wf, want, p.shards)
	}
}

// outboxIDsAcrossShards reports one message ID in two shards' outboxes:
// the first shard (by slot) keeps it.
func (v *verifier) outboxIDsAcrossShards() error {
	var cur []byte
	var prev int
	return v.cross.Each(nil, func(k, val []byte) error {
		e := 1 + strEnd(k[1:])
		index := int(int64(binary.BigEndian.Uint64(val) ^ (1 << 63)))
		if !bytes.Equal(k[:e], cur) {
			cur, prev = append(cur[:0], k[:e]...), index
			return nil
		}
		id, _, err := cutStr(k[1:])
		if err != nil {
			return err
		}
		v.addf(KindMsgIDDuplicate, index, model.RunNo(binary.BigEndian.Uint64(val[8:])), "message %q is also in shard %d's outbox", id, prev)
		return nil
	})
}
