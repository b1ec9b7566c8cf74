package plan

import "github.com/fusee-dev/fusee/reshard/internal/extsort"

// The one place the rule of docs/reshard.md §2 picks the runs that keep
// their number: a merge of the old shards' runs by number, which both the
// compact map (runmap.go) and the paged map's assignment (assignpaged.go)
// make, over their own cursors.

// passRun is what pass 1 keeps of a run: its old number, its dst bits
// (new shard, unfinished, renumbered before) and its generation.
type passRun struct {
	no  uint64
	d   uint16
	gen uint32
}

// A runCursor reads one old shard's runs in ascending number.
type runCursor interface {
	next() (passRun, bool)
}

// mergedRun is a run as mergeRuns visits it: its old shard, its place
// among that shard's runs (its rank), and what pass 1 kept of it.
type mergedRun struct {
	shard, k int
	passRun
}

// mergeRuns visits every run of the old shards cur (cur[i] reads old
// shard i) by number and, among the runs that share one, by old shard,
// saying whether it keeps its number in its new shard: the first
// unfinished one bound there, else the first. It stops at visit's first
// error.
func mergeRuns(cur []runCursor, newN int, visit func(r *mergedRun, wins bool) error) error {
	next := make([]mergedRun, len(cur))
	// h is a heap of old shards by (next number, shard).
	h := make([]int, 0, len(cur))
	for i, c := range cur {
		if r, ok := c.next(); ok {
			next[i] = mergedRun{shard: i, passRun: r}
			h = append(h, i)
		}
	}
	less := func(a, b int) bool { return next[a].no < next[b].no || next[a].no == next[b].no && a < b }
	extsort.HeapInit(h, less)
	stamp := make([]uint64, newN) // the number best[j] is for, plus one
	best := make([]int, newN)     // index in group of new shard j's winner
	var group []mergedRun
	for len(h) > 0 {
		n := next[h[0]].no
		group = group[:0]
		for len(h) > 0 && next[h[0]].no == n {
			i := h[0]
			group = append(group, next[i])
			if r, ok := cur[i].next(); ok {
				next[i] = mergedRun{shard: i, k: next[i].k + 1, passRun: r}
			} else {
				h[0] = h[len(h)-1]
				h = h[:len(h)-1]
			}
			extsort.SiftDown(h, 0, less)
		}
		// group is in old-shard order.
		for g := range group {
			d := group[g].d
			j := int(d & dstShard)
			if stamp[j] != n+1 {
				stamp[j], best[j] = n+1, g
				continue
			}
			if d&dstUnfinished != 0 && group[best[j]].d&dstUnfinished == 0 {
				best[j] = g
			}
		}
		for g := range group {
			if err := visit(&group[g], best[int(group[g].d&dstShard)] == g); err != nil {
				return err
			}
		}
	}
	return nil
}
