package model

import "testing"

// storeOf is a Backing over runs written at the last checkpoint; it
// counts the run read-backs.
type storeOf struct {
	runs  map[RunNo]Run
	reads int
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
