package check

import (
	"cmp"
	"slices"
	"sort"

	"github.com/fusee-dev/fusee/journal"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// index checks the ID index and the generations of each workflow ID: the
// runs of one ID are generations 1..k with no gap or repeat, numbered in
// generation order except where a reshard renumbered a run, all finished
// but the latest, and the index points at the latest (the highest
// generation).
func (v *verifier) index(s *journal.Shard) {
	byID := map[string][]*journal.Run{}
	for _, r := range s.SortedRuns() {
		byID[r.WorkflowID] = append(byID[r.WorkflowID], r)
	}
	for _, id := range sortedIDs(byID) {
		runs := byID[id] // in run-number order
		v.genOrder(s, id, runs)
		byGen := slices.Clone(runs)
		sort.SliceStable(byGen, func(a, b int) bool { return byGen[a].Gen < byGen[b].Gen })
		want := uint32(1)
		for i, r := range byGen {
			switch {
			case i > 0 && r.Gen == byGen[i-1].Gen:
				v.addf(KindGenDuplicate, s.Index, r.No, "workflow %q generation %d is also run %d", id, r.Gen, byGen[i-1].No)
				continue
			case r.Gen != want:
				v.addf(KindGenGap, s.Index, r.No, "workflow %q has generation %d where %d is expected", id, r.Gen, want)
			}
			want = r.Gen + 1
		}
		latest := byGen[len(byGen)-1]
		for _, r := range byGen[:len(byGen)-1] {
			if r.State == journal.StateRunning || r.State == journal.StateParked {
				v.addf(KindSupersededActive, s.Index, r.No, "workflow %q generation %d is %s but generation %d (run %d) is newer",
					id, r.Gen, r.State, latest.Gen, latest.No)
			}
		}
		no, ok := s.ByID[id]
		switch {
		case !ok:
			v.addf(KindIndexMissingID, s.Index, latest.No, "workflow %q has no index entry", id)
		case no != latest.No && s.Runs[no] != nil && s.Runs[no].WorkflowID == id:
			v.addf(KindIndexNotLatest, s.Index, no, "the index names generation %d of %q, the latest is generation %d (run %d)",
				s.Runs[no].Gen, id, latest.Gen, latest.No)
		}
	}
	for _, id := range sortedIDs(s.ByID) {
		no := s.ByID[id]
		r, ok := s.Runs[no]
		switch {
		case !ok:
			v.addf(KindIndexMissingRun, s.Index, no, "the index entry for %q names run %d, which the shard does not have", id, no)
		case r.WorkflowID != id:
			v.addf(KindIndexWrongID, s.Index, no, "the index entry for %q names a run of %q", id, r.WorkflowID)
		}
	}
}

// genOrder reports a pair of runs of one workflow ID whose run numbers
// are in the opposite order of their generations, unless a reshard
// renumbered either of them: a renumbered run gets a number above every
// number its old shard used, so it legitimately counts as newer than it
// is. Among the runs that kept their numbers the order must hold, and it
// holds for every pair exactly when it holds for each neighbour in run
// number order, which is what is checked.
func (v *verifier) genOrder(s *journal.Shard, id string, runs []*journal.Run) {
	var prev *journal.Run
	for _, r := range runs { // in run-number order
		if r.Renumbered {
			continue
		}
		if prev != nil && r.Gen < prev.Gen {
			v.addf(KindGenOrder, s.Index, r.No, "workflow %q generation %d has a higher run number than generation %d (run %d), and neither was renumbered",
				id, r.Gen, prev.Gen, prev.No)
		}
		prev = r
	}
}
