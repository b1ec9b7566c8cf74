package model

import "testing"

// storeOf is a Backing over runs written at the last checkpoint; it
// counts the run read-backs.
type storeOf struct {
	runs       map[RunNo]Run
	reads      int
	entryReads int
}

func (b *storeOf) ReadRun(no RunNo) (*Run, error) {
	b.reads++
	r, ok := b.runs[no]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

func (b *storeOf) ReadEntry(no RunNo) (RunEntry, bool, error) {
	b.entryReads++
	r, ok := b.runs[no]
	if !ok {
		return RunEntry{}, false, nil
	}
	return EntryOf(&r), true, nil
}

func (b *storeOf) ReadIndex(string) (RunNo, bool, error) { return 0, false, nil }
func (b *storeOf) ReadSeen(string) (string, bool, error) { return "", false, nil }
func (b *storeOf) AddID(string)                          {}
func (b *storeOf) AddSeen(string)                        {}

// An evicting shard knows which runs it saw end after it drops them, so
// an engine can find their events stale without reading them back.
func TestEndedSurvivesEviction(t *testing.T) {
	s := NewShard(0, 1)
	back := &storeOf{runs: map[RunNo]Run{}}
	s.SetBacking(back)
	for no, wf := range []string{"a", "b", "c"} {
		if err := s.Apply(&Op{Kind: OpStart, Run: RunNo(no + 1), Rec: Record{Kind: KindStart, WorkflowID: wf, Gen: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Apply(&Op{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindDone, Pos: 1, Status: StatusOK}}); err != nil {
		t.Fatal(err)
	}
	for no, r := range s.Runs {
		back.runs[no] = *r
	}
	// Run 3 ended before this shard saw it: the store says so.
	r3 := back.runs[3]
	r3.State = StateFinished
	back.runs[3] = r3
	s.Evict(0)
	if s.Resident() != 0 {
		t.Fatalf("%d runs resident after Evict", s.Resident())
	}
	if !s.Ended(1) {
		t.Error("run 1 finished before the eviction: Ended(1) = false")
	}
	if s.Ended(2) || s.Ended(3) || s.Ended(4) {
		t.Errorf("Ended(2, 3, 4) = %v, %v, %v: want false (running, not seen to end, no such run)", s.Ended(2), s.Ended(3), s.Ended(4))
	}
	if back.reads != 0 {
		t.Errorf("Ended read %d runs back", back.reads)
	}
	if s.Run(3) == nil || !s.Ended(3) {
		t.Error("run 3, read back finished: Ended(3) = false")
	}
	s.Evict(0)
	if !s.Ended(3) {
		t.Error("run 3 was read back finished before the eviction: Ended(3) = false")
	}
}

// A run the shard saw finish is tombstoned while evicted without reading
// its entry; a second tombstone is refused as before (it reads the
// entry), and readers before the checkpoint get the tombstoned run.
func TestTombstoneUnread(t *testing.T) {
	s := NewShard(0, 1)
	back := &storeOf{runs: map[RunNo]Run{}}
	s.SetBacking(back)
	s.TrackChanges()
	if err := s.Apply(&Op{Kind: OpStart, Run: 1, Rec: Record{Kind: KindStart, WorkflowID: "a", Gen: 1, Type: "t"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&Op{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindDone, Pos: 1, Status: StatusOK, Time: 7}}); err != nil {
		t.Fatal(err)
	}
	back.runs[1] = *s.Runs[1]
	s.Evict(0) // as after a checkpoint
	s.TrackChanges()
	if err := s.Apply(&Op{Kind: OpTombstone, Run: 1}); err != nil {
		t.Fatal(err)
	}
	if back.entryReads != 0 || back.reads != 0 || !s.Unread(1) {
		t.Fatalf("tombstone of a run seen to finish: %d entry reads, %d run reads, Unread %v; want 0, 0, true",
			back.entryReads, back.reads, s.Unread(1))
	}
	if err := s.Apply(&Op{Kind: OpTombstone, Run: 1}); err == nil {
		t.Error("a second tombstone of run 1 was accepted")
	}
	if h, ok := s.Head(1); !ok || h.State != StateTombstone || h.WorkflowID != "a" || h.Finished != 7 {
		t.Errorf("Head(1) after the tombstone = %+v, %v; want the tombstoned run", h, ok)
	}
	if n, ok := s.Changed.Stored[1]; !ok || n != 2 || s.Changed.Runs[1] != 2 || s.Unread(1) {
		t.Errorf("after the read: Stored[1] = %d, %v, Runs[1] = %d, Unread %v; want 2, true, 2, false",
			n, ok, s.Changed.Runs[1], s.Unread(1))
	}
}

// ResolveTombstone completes an unread tombstone with the entry a
// checkpoint read, and refuses a run that is not finished.
func TestResolveTombstone(t *testing.T) {
	s := NewShard(0, 1)
	back := &storeOf{runs: map[RunNo]Run{}}
	s.SetBacking(back)
	s.TrackChanges()
	for no, wf := range []string{"a", "b"} {
		if err := s.Apply(&Op{Kind: OpStart, Run: RunNo(no + 1), Rec: Record{Kind: KindStart, WorkflowID: wf, Gen: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(&Op{Kind: OpAppend, Run: RunNo(no + 1), Rec: Record{Kind: KindDone, Pos: 1, Status: StatusOK}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Evict(0)
	s.TrackChanges()
	for no := RunNo(1); no <= 2; no++ {
		if err := s.Apply(&Op{Kind: OpTombstone, Run: no}); err != nil {
			t.Fatal(err)
		}
	}
	e := RunEntry{State: StateFinished, Gen: 1, Records: 2, WorkflowID: "a"}
	if r, err := s.ResolveTombstone(1, &e); err != nil || r.State != StateTombstone || s.Changed.Stored[1] != 2 {
		t.Errorf("ResolveTombstone(1) = %+v, %v; want run 1 tombstoned, 2 records to archive", r, err)
	}
	if _, err := s.ResolveTombstone(1, &e); err == nil {
		t.Error("ResolveTombstone(1) twice: no error")
	}
	e = RunEntry{State: StateRunning, Gen: 1, Records: 1, WorkflowID: "b"}
	if _, err := s.ResolveTombstone(2, &e); err == nil {
		t.Error("ResolveTombstone(2) of a running entry: no error")
	}
}
