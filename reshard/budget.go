package reshard

import (
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// The memory budget (Options.Memory) and how it is shared: one home for
// every fraction of it.

// DefaultMemory is the default memory budget (Options.Memory): the one of
// verify, dump and inspect (check.DefaultMemory), so that one figure is
// written once.
const DefaultMemory = check.DefaultMemory

// mapShare is the part of the memory budget a spill map may hold in
// memory (or in its scratch store's memtables once spilled), and the unit
// of the other shares. Pass 1 and the assignment hold the compact run map
// or, past it, pass 1's run files' buffers and the paged assignment's
// sorts (compactShares); the rewrite holds the compact run map and the
// sort's arena (a share), or the paged run map's cache (pagedCacheShares)
// and the sort's arena, with what the Go heap's part of the budget leaves
// of the compact map's other shares (sortBudget); and the report's two
// lists, half a share each (listShare), and a plan's two (applied) or its
// renumbered runs (made). The rest of the budget is for the Go runtime,
// the store readers' and writers' buffers and pebble's caches.
const mapShare = 8

// compactShares is the part of the budget (in mapShare units) the compact
// map may hold: half of it (the other maps are not made on this path).
const compactShares = mapShare / 2

// pagedCacheShares is the part of the budget (in mapShare units) the
// paged run map's page cache holds in the rewrite: two shares, where
// the spilled run map and its reverse had one each.
const pagedCacheShares = 2

// sortBudget is what the run sorter's arenas hold: a share, and when the
// run map is paged (no compact map is made), as many of the shares of the
// compact map's allowance its page cache leaves as the Go heap's part of
// the budget (goHeap) holds beside the page cache, that share, the
// report's lists and a share to spare for the collector. At 16 MiB that
// is 6 MiB instead of 2 (a third of the chunks, each a file per new
// shard); from 128 MiB up, where the heap's part is five eighths of the
// budget, nothing: at the default budget the bonus put the live heap of a
// 10M-run 8->3 reshard (paged) above its soft limit, and the collector ran
// back to back (12,000 collections in its first 100 s).
func (r *resharder) sortBudget(p *plan.Plan) int64 {
	share := r.budget / mapShare
	if !p.Spilled() || share == 0 {
		return share
	}
	room := goHeap(r.budget) - share*(pagedCacheShares+1+1+1)
	return share * (1 + min(max(room/share, 0), compactShares-pagedCacheShares))
}

// listShare is the part of the budget (in mapShare units) each of the
// report's two lists, and a plan's, may hold.
const listShare = 2 // half a share each

// HeapLimit is the soft memory limit while reshard or upgrade
// rebuilds shards with a memory budget (at least 64 MiB). Built with cgo,
// pebble keeps its block caches and memtables in C memory, which the Go
// runtime does not count: the limit is then five eighths of the budget,
// the Go heap's share (the run map, the sort's arena, the readers'
// buffers), and the other three eighths are pebble's. Built without cgo,
// as the releases are, pebble allocates them on the Go heap, and the limit
// must hold them too: three quarters of the budget. At five eighths the
// live heap of a 10M-run reshard (about 140 MB) sat at the collector's
// goal and it collected 27,098 times in 161 s.
//
// The limit is process-wide, so the commands set it, never this package
// (tests run many reshards in one process).
func HeapLimit(budget int64) int64 {
	if pebbleMemoryInGoHeap {
		return max(budget/4*3, 64<<20)
	}
	return goHeap(budget)
}

// goHeap is the Go heap's own part of a budget (HeapLimit of a build with
// cgo): five eighths, at least 64 MiB.
func goHeap(budget int64) int64 { return max(budget/8*5, 64<<20) }
