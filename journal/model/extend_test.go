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
