package check

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/fusee-dev/fusee/journal"
)

// timers compares the timer index with the one the journals imply. It
// regenerates on a fresh shard that shares only the runs: RebuildTimers
// reads the runs and replaces the copy's timer map, and a fresh shard
// tracks no changes, so the shard itself (and its change bookkeeping) is
// untouched.
func (v *verifier) timers(s *journal.Shard) {
	cp := &journal.Shard{Index: s.Index, Count: s.Count, Runs: s.Runs}
	cp.RebuildTimers()
	var missing, stale []journal.TimerKey
	for k := range cp.Timers {
		if _, ok := s.Timers[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range s.Timers {
		if _, ok := cp.Timers[k]; !ok {
			stale = append(stale, k)
		}
	}
	sortTimers(missing)
	sortTimers(stale)
	for _, k := range missing {
		v.addf(KindTimerMissing, s.Index, k.Run, "position %d implies a timer at %d that the index lacks", k.Pos, k.At)
	}
	for _, k := range stale {
		v.addf(KindTimerStale, s.Index, k.Run, "the index holds a timer at %d for position %d that no pending record implies", k.At, k.Pos)
	}
}

func sortTimers(ks []journal.TimerKey) {
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		if a.Pos != b.Pos {
			return a.Pos < b.Pos
		}
		return a.At < b.At
	})
}

// outbox checks every message against the record of its sender that
// produced it, and the run-number-free rule for message IDs.
func (v *verifier) outbox(s *journal.Shard) {
	// Regenerate what each sender's history produces, keyed by ID.
	produced := map[string]journal.Message{}
	for _, r := range s.SortedRuns() {
		h := history(s, r)
		for _, m := range produces(s.Index, r, h) {
			if _, dup := produced[m.ID]; dup {
				v.addf(KindMsgIDDuplicate, s.Index, r.No, "message ID %q is produced by two records", m.ID)
				continue
			}
			produced[m.ID] = m
		}
		v.recordMsgIDs(s, r, h)
	}
	seqs := map[uint64]string{}
	for _, id := range sortedIDs(s.Outbox) {
		m := s.Outbox[id]
		run := m.From.Run
		add := func(k Kind, format string, args ...any) {
			v.addf(k, s.Index, run, "message %q: %s", id, fmt.Sprintf(format, args...))
		}
		if m.ID != id {
			add(KindOutboxKey, "stored under this ID but says it is %q", m.ID)
		}
		if m.Kind < journal.MsgStartChild || m.Kind > journal.MsgUpdateResult {
			add(KindOutboxKind, "unknown kind %d", uint8(m.Kind))
		}
		if m.Target == "" {
			add(KindOutboxKind, "no target workflow ID")
		}
		switch {
		case m.Seq == 0 || m.Seq >= s.NextSeq:
			add(KindOutboxSeq, "sequence number %d, the shard's next is %d", m.Seq, s.NextSeq)
		case seqs[m.Seq] != "":
			add(KindOutboxSeq, "sequence number %d is also message %q's", m.Seq, seqs[m.Seq])
		default:
			seqs[m.Seq] = id
		}
		if m.Kind != journal.MsgSignal && m.Kind != journal.MsgCancel {
			if m.Parent.IsZero() {
				add(KindOutboxParent, "a %s without the parent position it is for", m.Kind)
			}
			if m.ParentID == "" {
				add(KindOutboxParent, "a %s without the parent's workflow ID", m.Kind)
			}
		}
		from, ok := s.Runs[m.From.Run]
		if m.From.Shard != s.Index || !ok {
			add(KindOutboxFrom, "sender %s is not a run of this shard", m.From)
			continue
		}
		v.msgIDRunNumber(s, from, id)
		want, ok := produced[id]
		if !ok {
			add(KindOutboxSource, "no record of sender %s (%q generation %d) produces it", m.From, from.WorkflowID, from.Gen)
			continue
		}
		if diff := messageDiff(m, &want); diff != "" {
			add(KindOutboxSource, "differs from what its sender's record produced: %s", diff)
		}
	}
}

// produces regenerates the messages a run's history sends, as Apply does:
// every field but Seq, including the parent's workflow ID and the send
// time (the producing record's time).
func produces(shard int, r *journal.Run, h []journal.Record) []journal.Message {
	from := journal.RunRef{Shard: shard, Run: r.No}
	var out []journal.Message
	for i := range h {
		rec := &h[i]
		switch rec.Kind {
		case journal.KindChild:
			out = append(out, journal.Message{ID: rec.MsgID, Kind: journal.MsgStartChild, From: from, Target: rec.WorkflowID,
				Parent: journal.ParentRef{Shard: shard, Run: r.No, Pos: rec.Pos}, ParentID: r.WorkflowID, Type: rec.Type,
				Deadline: rec.Deadline, Sent: rec.Time, Payload: rec.Payload})
		case journal.KindSend:
			kind := journal.MsgSignal
			if rec.Attempt == journal.SendCancel {
				kind = journal.MsgCancel
			}
			out = append(out, journal.Message{ID: rec.MsgID, Kind: kind, From: from, Target: rec.WorkflowID, Name: rec.Name,
				Sent: rec.Time, Payload: rec.Payload})
		case journal.KindUpdateDone:
			if int(rec.Ref) >= len(h) {
				continue
			}
			if u := &h[rec.Ref]; !u.Parent.IsZero() {
				out = append(out, journal.Message{ID: fmt.Sprintf("%s/%d/u%d", r.WorkflowID, r.Gen, rec.Ref), Kind: journal.MsgUpdateResult,
					From: from, Target: u.ParentID, Parent: u.Parent, ParentID: u.ParentID, Status: rec.Status,
					Sent: rec.Time, Payload: rec.Payload})
			}
		case journal.KindDone:
			if st := &h[0]; st.Kind == journal.KindStart && !st.Parent.IsZero() {
				out = append(out, journal.Message{ID: fmt.Sprintf("%s/%d/r", r.WorkflowID, r.Gen), Kind: journal.MsgChildResult,
					From: from, Target: st.ParentID, Parent: st.Parent, ParentID: st.ParentID, Status: rec.Status,
					Sent: rec.Time, Payload: rec.Payload})
			}
		}
	}
	return out
}

// messageDiff names the fields in which m differs from want (Seq aside).
func messageDiff(m, want *journal.Message) string {
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
func (v *verifier) recordMsgIDs(s *journal.Shard, r *journal.Run, h []journal.Record) {
	for i := range h {
		if rec := &h[i]; rec.MsgID != "" && (rec.Kind == journal.KindChild || rec.Kind == journal.KindSend) {
			v.msgIDRunNumber(s, r, rec.MsgID)
		}
	}
}

// msgIDRunNumber warns when a message ID sent by r contains text derived
// from r's run number: r's Ctx::key prefix "<ID>/<run>/" or the shard-and-
// run part of its completion tokens. It can only tell when r's number
// differs from its generation (the "<ID>/<gen>/" prefix is the intended
// one), so it is a heuristic, and a warning.
func (v *verifier) msgIDRunNumber(s *journal.Shard, r *journal.Run, id string) {
	if r.No != journal.RunNo(r.Gen) && strings.Contains(id, fmt.Sprintf("%s/%d/", r.WorkflowID, r.No)) {
		v.addf(KindMsgIDRunNumber, s.Index, r.No, "message ID %q contains this run's Ctx::key prefix %q", id, fmt.Sprintf("%s/%d/", r.WorkflowID, r.No))
	}
	tok := journal.Token{Gen: journal.TokenGen(s.StoreGen), Shard: s.Index, Run: r.No}.String()[:18] // "tk" + gen, shard and run, without the position
	if strings.Contains(strings.ToLower(id), tok) {
		v.addf(KindMsgIDRunNumber, s.Index, r.No, "message ID %q contains this run's completion token prefix %q", id, tok)
	}
}

// seen checks the receiver dedup entries: each names the workflow its
// message was delivered to, and a repeat of the message is routed by that
// workflow ID, so the entry must be on that workflow's shard.
func (v *verifier) seen(s *journal.Shard) {
	for _, id := range sortedIDs(s.Seen) {
		wf := s.Seen[id]
		if wf == "" {
			v.addf(KindSeenWrongShard, s.Index, 0, "dedup entry %q names no receiving workflow", id)
			continue
		}
		if want := journal.ShardOf(wf, v.st.ShardCount); want != s.Index {
			v.addf(KindSeenWrongShard, s.Index, 0, "dedup entry %q was delivered to %q, which belongs on shard %d of %d",
				id, wf, want, v.st.ShardCount)
		}
	}
}

// outboxIDsAcrossShards reports one message ID in two shards' outboxes.
func (v *verifier) outboxIDsAcrossShards() {
	where := map[string]int{}
	for _, s := range v.st.Shards {
		if s == nil {
			continue
		}
		for _, id := range sortedIDs(s.Outbox) {
			if prev, ok := where[id]; ok {
				v.addf(KindMsgIDDuplicate, s.Index, s.Outbox[id].From.Run, "message %q is also in shard %d's outbox", id, prev)
				continue
			}
			where[id] = s.Index
		}
	}
}
