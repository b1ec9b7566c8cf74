package model

import "testing"

// TestExtendJournal checks the contract an engine's view relies on: the
// run's journal keeps its records and length, the view keeps its own
// records past them, and Apply's append of those records then lands in
// the view's array (no copy), whether or not the array had to grow.
func TestExtendJournal(t *testing.T) {
	for _, start := range []int{1, 3, 4} {
		s := NewShard(0, 1)
		if err := s.Apply(&Op{Kind: OpStart, Run: 1, Rec: Record{Kind: KindStart, WorkflowID: "w", Gen: 1}}); err != nil {
			t.Fatal(err)
		}
		r := s.Runs[1]
		for pos := 1; pos < start; pos++ {
			if err := s.Apply(&Op{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindValue, Pos: uint32(pos), Name: "v"}}); err != nil {
				t.Fatal(err)
			}
		}
		view := r.Journal
		var added []Record
		for pos := start; pos < start+6; pos++ {
			rec := Record{Kind: KindValue, Pos: uint32(pos), Name: "added"}
			view = r.ExtendJournal(view, 1)
			view = append(view, rec)
			added = append(added, rec)
			if len(r.Journal) != start || r.Journal[0].WorkflowID != "w" {
				t.Fatalf("start %d: the run's journal changed: %d records", start, len(r.Journal))
			}
			for i, a := range added {
				if got := view[start+i]; got.Pos != a.Pos || got.Name != "added" {
					t.Fatalf("start %d: the view lost record %d: %+v", start, start+i, got)
				}
			}
		}
		for _, rec := range added {
			if err := s.Apply(&Op{Kind: OpAppend, Run: 1, Rec: rec}); err != nil {
				t.Fatal(err)
			}
		}
		if len(r.Journal) != len(view) || &r.Journal[0] != &view[0] {
			t.Fatalf("start %d: Apply did not append in the view's array", start)
		}
	}
}

// TestStartInOpJournal checks Op.Journal: a start with an array begins
// the run's journal in it, and the appends that follow (the records the
// engine's view already put there) land in the same slots; a start
// without one gets an array of its own.
func TestStartInOpJournal(t *testing.T) {
	start := Record{Kind: KindStart, WorkflowID: "w", Gen: 1}
	view := append(make([]Record, 0, 8), start, Record{Kind: KindValue, Pos: 1, Name: "v"})
	s := NewShard(0, 1)
	if err := s.Apply(&Op{Kind: OpStart, Run: 1, Rec: start, Journal: view[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&Op{Kind: OpAppend, Run: 1, Rec: view[1]}); err != nil {
		t.Fatal(err)
	}
	r := s.Runs[1]
	if len(r.Journal) != 2 || &r.Journal[0] != &view[0] || r.Journal[1].Name != "v" || r.Journal[0].WorkflowID != "w" {
		t.Fatalf("the run's journal is not the op's array with both records: %+v", r.Journal)
	}
	if err := s.Apply(&Op{Kind: OpStart, Run: 2, Rec: Record{Kind: KindStart, WorkflowID: "x", Gen: 1}}); err != nil {
		t.Fatal(err)
	}
	if j := s.Runs[2].Journal; len(j) != 1 || j[0].WorkflowID != "x" {
		t.Fatalf("a start without an array: journal %+v", j)
	}
}
