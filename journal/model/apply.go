package model

import "fmt"

// OpKind says what a log entry does to its shard.
type OpKind uint8

// Log entry kinds. Every change to a shard's state is one of these; the
// write-ahead log holds them and recovery replays them through Apply.
const (
	OpStart     OpKind = 1 // a new run numbered Run begins with Rec (a Start record)
	OpAppend    OpKind = 2 // Rec is appended to Run's journal
	OpPark      OpKind = 3 // Run is suspended into the run store
	OpLoad      OpKind = 4 // Run is loaded back into memory
	OpAck       OpKind = 5 // the receiver has outbox message MsgID: drop it
	OpSeen      OpKind = 6 // message MsgID was delivered here, to workflow WorkflowID (receiver dedup)
	OpTombstone OpKind = 7 // Run's retention ended: archive its history
	opMax              = OpTombstone
)

var opNames = [...]string{"", "start", "append", "park", "load", "ack", "seen", "tombstone"}

func (k OpKind) String() string {
	if k >= 1 && k <= opMax {
		return opNames[k]
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// Op is one log entry for one shard. Which fields are meaningful depends
// on Kind: Run for start, append, park, load and tombstone; Rec for start
// and append; MsgID for ack and seen; WorkflowID for seen only.
type Op struct {
	Kind  OpKind
	Run   RunNo
	MsgID string
	// WorkflowID is, for OpSeen, the receiving workflow ID: the Target of
	// the message delivered, which decides the shard the dedup entry
	// belongs on (a reshard moves it with that workflow). It is a field
	// of its own rather than Rec.WorkflowID so that a seen entry carries
	// no record.
	WorkflowID string
	Rec        Record
	// Journal is, for OpStart only, an array the new run's journal may
	// start in: Rec at index 0 and room after it. An engine passes the
	// array its own view of the new run appended into, so that the run's
	// records are not allocated and copied a second time (at 1M gen runs
	// the two arrays were a third of all allocation); Apply then appends
	// the view's later records into the same slots, as it does for a view
	// grown by Run.ExtendJournal. It is no part of the log entry: nil, or
	// an op read back from the log, starts a journal of its own.
	Journal []Record
}

// EncodeOp appends the encoding of op to dst.
func EncodeOp(dst []byte, op *Op) []byte {
	e := enc{b: dst}
	e.b = append(e.b, byte(op.Kind))
	switch op.Kind {
	case OpStart, OpAppend:
		e.uv(uint64(op.Run))
		e.record(&op.Rec)
	case OpPark, OpLoad, OpTombstone:
		e.uv(uint64(op.Run))
	case OpAck:
		e.str(op.MsgID)
	case OpSeen:
		e.str(op.MsgID)
		e.str(op.WorkflowID)
	}
	return e.b
}

// DecodeOp decodes one log entry.
func DecodeOp(p []byte) (Op, error) {
	var op Op
	if len(p) == 0 {
		return op, errShort
	}
	op.Kind = OpKind(p[0])
	d := dec{b: p[1:]}
	switch op.Kind {
	case OpStart, OpAppend:
		op.Run = RunNo(d.uv())
		d.record(&op.Rec)
	case OpPark, OpLoad, OpTombstone:
		op.Run = RunNo(d.uv())
	case OpAck:
		op.MsgID = d.str()
	case OpSeen:
		op.MsgID = d.str()
		op.WorkflowID = d.str()
	default:
		return op, fmt.Errorf("unknown log entry kind %d", op.Kind)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return op, d.err
}

// Apply performs one log entry on the shard and regenerates its outputs
// (index entries, timers, outbox messages). It refuses an entry that does
// not fit the state (a sign of a damaged log or store) and then leaves the
// shard unchanged.
func (s *Shard) Apply(op *Op) error {
	switch op.Kind {
	case OpStart:
		return s.applyStart(op)
	case OpAppend:
		return s.applyAppend(op)
	case OpPark, OpLoad:
		r, err := s.run(op)
		if err != nil {
			return err
		}
		from, to := StateRunning, StateParked
		if op.Kind == OpLoad {
			from, to = StateParked, StateRunning
		}
		if r.State != from {
			return fmt.Errorf("%s of run %d: run is %s, want %s", op.Kind, op.Run, r.State, from)
		}
		r.State = to
		s.touchRun(r.No, uint32(len(r.Journal)))
	case OpAck:
		m, ok := s.Outbox[op.MsgID]
		if !ok {
			return fmt.Errorf("ack of message %q: not in the outbox", op.MsgID)
		}
		delete(s.Outbox, op.MsgID)
		s.touchOutbox(m)
	case OpSeen:
		if op.WorkflowID == "" {
			return fmt.Errorf("seen of message %q: no receiving workflow ID", op.MsgID)
		}
		s.addSeen(op.MsgID, op.WorkflowID)
	case OpTombstone:
		if _, resident := s.Runs[op.Run]; !resident && s.back != nil && s.Changed != nil {
			return s.tombstoneStored(op)
		}
		r, err := s.run(op)
		if err != nil {
			return err
		}
		if r.State != StateFinished {
			return fmt.Errorf("tombstone of run %d: run is %s, want finished", op.Run, r.State)
		}
		s.touchRun(r.No, uint32(len(r.Journal)))
		s.Archive[r.No] = r.Journal
		r.Journal = nil
		r.State = StateTombstone
		s.noteEnded(r.No, r.State)
		s.touchArchive(r.No)
	default:
		return fmt.Errorf("unknown log entry kind %d", op.Kind)
	}
	return nil
}

// tombstoneStored is OpTombstone of a run an evicting shard dropped: it
// does not read the run's journal, and leaves the move of the journal
// into the archive to the checkpoint, which reads the records the store
// holds in one pass (Changes.Stored). A run the shard knows to be
// finished and not tombstoned (FinishedEvicted) is not read at all: its
// entry is read by the checkpoint too (Unread, ResolveTombstone), or by
// the first reader that needs the run before it. Any other run's entry
// is read now (Head). The state after the checkpoint is the same as if
// the run had been read back whole and archived in memory.
func (s *Shard) tombstoneStored(op *Op) error {
	if _, cached := s.heads[op.Run]; !cached && s.FinishedEvicted(op.Run) {
		if s.unread == nil {
			s.unread = map[RunNo]struct{}{}
		}
		s.unread[op.Run] = struct{}{}
		s.noteEnded(op.Run, StateTombstone)
		s.touchRun(op.Run, 0) // ResolveTombstone sets the journal length
		s.touchArchive(op.Run)
		return nil
	}
	e, ok := s.Head(op.Run) // the entry the engine's check just read, cached
	if !ok {
		if err := s.LoadErr(); err != nil {
			return err
		}
		return fmt.Errorf("%s of run %d: no such run on shard %d", op.Kind, op.Run, s.Index)
	}
	return s.tombstoneEntry(op.Run, &e)
}

// tombstoneEntry tombstones evicted run no, whose entry is e, leaving its
// journal in the store for the checkpoint to archive.
func (s *Shard) tombstoneEntry(no RunNo, e *RunEntry) error {
	if e.State != StateFinished {
		return fmt.Errorf("tombstone of run %d: run is %s, want finished", no, e.State)
	}
	r := RunOfEntry(no, e)
	r.State = StateTombstone
	s.Runs[no] = r
	delete(s.heads, no)
	delete(s.unread, no)
	s.noteEnded(no, StateTombstone)
	s.Changed.Runs[no] = e.Records // nothing else changed it: it was evicted
	s.touchArchive(no)
	s.Changed.Stored[no] = e.Records
	return nil
}

func (s *Shard) run(op *Op) (*Run, error) {
	r := s.Run(op.Run)
	if r == nil {
		return nil, fmt.Errorf("%s of run %d: no such run on shard %d", op.Kind, op.Run, s.Index)
	}
	return r, nil
}

func (s *Shard) applyStart(op *Op) error {
	rec := &op.Rec
	switch {
	case op.Run >= NoSuchRun:
		return fmt.Errorf("start of run %d: run numbers end at %d (%d is reserved for references to no run)", op.Run, NoSuchRun-1, NoSuchRun)
	case op.Run != s.NextRun:
		return fmt.Errorf("start of run %d: shard %d's next run number is %d", op.Run, s.Index, s.NextRun)
	case rec.Kind != KindStart || rec.Pos != 0:
		return fmt.Errorf("start of run %d: first record is %s at %d, want start at 0", op.Run, rec.Kind, rec.Pos)
	case rec.WorkflowID == "":
		return fmt.Errorf("start of run %d: empty workflow ID", op.Run)
	}
	j := op.Journal[:0:cap(op.Journal)]
	if cap(j) == 0 {
		j = make([]Record, 0, startJournalCap)
	}
	r := &Run{
		No: op.Run, WorkflowID: rec.WorkflowID, Gen: rec.Gen, Type: rec.Type,
		State: StateRunning, Started: rec.Time, Journal: append(j, *rec),
	}
	s.Runs[op.Run] = r
	// The index names the ID's highest generation, not its highest number:
	// after a reshard an older run can have a number above a newer one's.
	if cur := s.Latest(rec.WorkflowID); cur == nil || r.NewerThan(cur) {
		s.setLatest(rec.WorkflowID, op.Run)
	}
	s.NextRun = op.Run + 1
	s.touchRun(op.Run, 0)
	return nil
}

// startJournalCap is the capacity a new run's journal starts with: most
// runs append a few records soon after their start, and growing from one
// record copied the journal at two, three and five records.
const startJournalCap = 4

func (s *Shard) applyAppend(op *Op) error {
	r, err := s.run(op)
	if err != nil {
		return err
	}
	rec := &op.Rec
	if r.State != StateRunning {
		return fmt.Errorf("append %s to run %d: run is %s, want running", rec.Kind, r.No, r.State)
	}
	if int(rec.Pos) != len(r.Journal) || rec.Kind == KindStart {
		return fmt.Errorf("append %s at %d to run %d: journal has %d records", rec.Kind, rec.Pos, r.No, len(r.Journal))
	}
	if completes(rec.Kind) && int(rec.Ref) >= len(r.Journal) {
		return fmt.Errorf("append %s to run %d: it completes position %d, past the journal's end", rec.Kind, r.No, rec.Ref)
	}
	r.Journal = append(r.Journal, *rec)
	s.touchRun(r.No, rec.Pos)
	s.regenerate(r, rec)
	return nil
}

// completes reports whether records of kind k finish an earlier position.
func completes(k Kind) bool {
	switch k {
	case KindFired, KindWaited, KindChildDone, KindUpdateDone, KindAsyncDone:
		return true
	}
	return false
}

// regenerate derives the outputs of one appended record.
func (s *Shard) regenerate(r *Run, rec *Record) {
	from := RunRef{Shard: s.Index, Run: r.No}
	switch rec.Kind {
	case KindTimer, KindAttempt:
		if rec.Time != 0 {
			s.addTimer(TimerKey{At: rec.Time, Run: r.No, Pos: rec.Pos})
		}
	case KindWait:
		if rec.Deadline != 0 {
			s.addTimer(TimerKey{At: rec.Deadline, Run: r.No, Pos: rec.Pos})
		}
	case KindFired, KindWaited:
		if k, ok := timerOf(r, rec.Ref); ok {
			s.deleteTimer(k)
		}
	case KindChild:
		s.send(&Message{ID: rec.MsgID, Kind: MsgStartChild, From: from, Target: rec.WorkflowID,
			Parent: ParentRef{Shard: s.Index, Run: r.No, Pos: rec.Pos}, ParentID: r.WorkflowID, Type: rec.Type,
			Deadline: rec.Deadline, Sent: rec.Time, Payload: rec.Payload})
	case KindSend:
		kind := MsgSignal
		if rec.Attempt == SendCancel {
			kind = MsgCancel
		}
		s.send(&Message{ID: rec.MsgID, Kind: kind, From: from, Target: rec.WorkflowID,
			Name: rec.Name, Sent: rec.Time, Payload: rec.Payload})
	case KindUpdateDone:
		if u := r.Journal[rec.Ref]; !u.Parent.IsZero() {
			s.send(&Message{ID: fmt.Sprintf("%s/%d/u%d", r.WorkflowID, r.Gen, rec.Ref), Kind: MsgUpdateResult,
				From: from, Target: u.ParentID, Parent: u.Parent, ParentID: u.ParentID, Status: rec.Status,
				Sent: rec.Time, Payload: rec.Payload})
		}
	case KindDone:
		for _, k := range PendingTimers(r) {
			s.deleteTimer(k)
		}
		r.State, r.Status, r.Finished = StateFinished, rec.Status, rec.Time
		s.noteEnded(r.No, r.State)
		if st := r.Start(); !st.Parent.IsZero() {
			s.send(&Message{ID: fmt.Sprintf("%s/%d/r", r.WorkflowID, r.Gen), Kind: MsgChildResult,
				From: from, Target: st.ParentID, Parent: st.Parent, ParentID: st.ParentID, Status: rec.Status,
				Sent: rec.Time, Payload: rec.Payload})
		}
	}
}

func (s *Shard) send(m *Message) {
	m.Seq = s.NextSeq
	s.NextSeq++
	if old, ok := s.Outbox[m.ID]; ok {
		s.touchOutbox(old) // replaced: its key goes
	}
	s.Outbox[m.ID] = m
	s.touchOutbox(m)
}

// timerOf is the timer that the record at pos set, if any.
func timerOf(r *Run, pos uint32) (TimerKey, bool) {
	if int(pos) >= len(r.Journal) {
		return TimerKey{}, false
	}
	rec := &r.Journal[pos]
	switch {
	case (rec.Kind == KindTimer || rec.Kind == KindAttempt) && rec.Time != 0:
		return TimerKey{At: rec.Time, Run: r.No, Pos: pos}, true
	case rec.Kind == KindWait && rec.Deadline != 0:
		return TimerKey{At: rec.Deadline, Run: r.No, Pos: pos}, true
	}
	return TimerKey{}, false
}

// PendingTimers lists the run's timers that have not fired or been
// satisfied.
func PendingTimers(r *Run) []TimerKey {
	done := map[uint32]bool{}
	for i := range r.Journal {
		if rec := &r.Journal[i]; rec.Kind == KindFired || rec.Kind == KindWaited {
			done[rec.Ref] = true
		}
	}
	var out []TimerKey
	if r.State == StateFinished || r.State == StateTombstone {
		return nil
	}
	for i := range r.Journal {
		if k, ok := timerOf(r, uint32(i)); ok && !done[uint32(i)] {
			out = append(out, k)
		}
	}
	return out
}

// RebuildTimers recomputes the timer index from the journals, as recovery
// does when a store's derived index is missing or suspect.
func (s *Shard) RebuildTimers() {
	old := s.Timers
	s.Timers = map[TimerKey]struct{}{}
	for _, r := range s.Runs {
		for _, k := range PendingTimers(r) {
			s.Timers[k] = struct{}{}
		}
	}
	if c := s.Changed; c != nil {
		for k := range old {
			c.Timers[k] = struct{}{}
		}
		for k := range s.Timers {
			c.Timers[k] = struct{}{}
		}
	}
}
