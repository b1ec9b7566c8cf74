package reshard

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/fusee-dev/fusee/journal/model"
)

// The compact run map (docs/reshard.md §4, "Run lookups"). Pass 1 reads
// each old shard's runs in ascending number, so the map is a few sorted
// arrays per old shard, appended to as the runs come:
//
//	old shard i: nos[k] (old number, ascending), to[k] (new number),
//	             dst[k] (new shard, and flag bits)
//
// and, once the numbers are assigned, per new shard j:
//
//	winners: wNos (ascending; a winner keeps its number), wShard (its old shard)
//	losers:  lShard, lNo, indexed by new number - maxUsed - 1 (losers are
//	         numbered consecutively from maxUsed+1)
//
// About 16 bytes a run once the plan is made (10 forward, 6 back), and
// 16 more while it is made (the generation, needed only to order losers,
// and the losers' list); a lookup is a binary search, or a direct index
// when the shard's numbers are dense. Run numbers must fit 32 bits here
// (10M runs use 24): a directory whose numbers do not, or whose runs do
// not fit the map's share of the budget, is planned through the spill
// maps and looked up in the paged run map (runmapfile.go), which give the
// same answers.
//
// The identity of a run (the digests' name for it, §6) is its old
// (shard, number) packed by runKey, in both maps: unique per run, the
// same whether it is reached by its old number (forward) or its new one
// (back), which is all the digests need.

// compactEntryBytes is what a run costs the compact map at its peak
// (while the plan is made): 10 bytes forward, 6 back, 4 for the
// generation and 12 on the losers' list if it loses (the worst case).
const compactEntryBytes = 32

// compactShares is the part of the budget (in mapShare units) the compact
// map may hold: half of it (the other maps are not made on this path).
const compactShares = mapShare / 2

// dst bits.
const (
	dstShard      = 0x3ff   // the new shard (meta.MaxShards is 1024)
	dstUnfinished = 1 << 13 // running or parked (pass 1)
	dstPrior      = 1 << 14 // renumbered by an earlier reshard (pass 1)
	dstFlag       = 1 << 15 // the new entry's renumbered flag (assigned)
)

// errMapFull stops pass 1 when the runs outgrow the compact map: the
// plan is made again through the spill maps.
var errMapFull = errors.New("the compact run map is full")

type oldRuns struct {
	nos []uint32
	to  []uint32
	dst []uint16
	gen []uint32 // pass 1 only
}

type runMap struct {
	old     []oldRuns
	wNos    [][]uint32
	wShard  [][]uint16
	lShard  [][]uint16
	lNo     [][]uint32
	maxUsed model.RunNo
	runs    int64
	limit   int64 // runs the allowance holds
}

// newRunMap is an empty compact map for oldN old and newN new shards
// holding at most allowance bytes' worth of runs.
func newRunMap(oldN, newN int, allowance int64) *runMap {
	return &runMap{old: make([]oldRuns, oldN), wNos: make([][]uint32, newN), wShard: make([][]uint16, newN),
		lShard: make([][]uint16, newN), lNo: make([][]uint32, newN), limit: allowance / compactEntryBytes}
}

// reserve sizes old shard i's arrays for about n runs (its header's next
// run less one: exact for a directory no reshard grew), as far as the
// allowance goes, so that pass 1's appends do not copy.
func (c *runMap) reserve(i int, n int64) {
	n = min(n, c.limit-c.runs)
	if n <= 0 {
		return
	}
	o := &c.old[i]
	o.nos, o.dst, o.gen = make([]uint32, 0, n), make([]uint16, 0, n), make([]uint32, 0, n)
}

// add records old shard i's run no (in ascending order), bound for new
// shard j; errMapFull if it does not fit.
func (c *runMap) add(i int, no model.RunNo, j int, e *model.RunEntry) error {
	o := &c.old[i]
	if c.runs >= c.limit || uint64(no) > math.MaxUint32 || (len(o.nos) > 0 && uint32(no) <= o.nos[len(o.nos)-1]) {
		return errMapFull
	}
	d := uint16(j)
	if unfinished(e.State) {
		d |= dstUnfinished
	}
	if e.Renumbered {
		d |= dstPrior
	}
	o.nos = append(o.nos, uint32(no))
	o.dst = append(o.dst, d)
	o.gen = append(o.gen, e.Gen)
	c.runs++
	return nil
}

// loser is a run that wanted a number another run kept.
type loser struct {
	gen, no uint32
	shard   uint16
	j       uint16
}

// assign gives every run its new number (docs/reshard.md §2) and fills
// p's counters: a merge of the old shards' numbers, each number's runs
// in old-shard order, the first unfinished one (else the first) keeping
// it in each new shard; then the losers by (new shard, generation, old
// number, old shard) from maxUsed+1 up.
func (c *runMap) assign(p *plan) error {
	if uint64(p.maxUsed)+uint64(c.runs) >= math.MaxUint32 {
		return errMapFull
	}
	c.maxUsed = p.maxUsed
	newN := len(c.wNos)
	for i := range c.old {
		c.old[i].to = make([]uint32, len(c.old[i].nos))
	}
	pos := make([]int, len(c.old))
	// h is a heap of old shards by (next number, shard).
	h := make([]int, 0, len(c.old))
	less := func(a, b int) bool {
		na, nb := c.old[a].nos[pos[a]], c.old[b].nos[pos[b]]
		return na < nb || na == nb && a < b
	}
	for i := range c.old {
		if len(c.old[i].nos) > 0 {
			h = append(h, i)
		}
	}
	heapInit(h, less)
	stamp := make([]uint64, newN) // the number best[j] is for, plus one
	best := make([]int, newN)     // index in group of new shard j's winner
	type member struct{ shard, k int }
	var group []member
	var losers []loser
	for len(h) > 0 {
		n := c.old[h[0]].nos[pos[h[0]]]
		group = group[:0]
		for len(h) > 0 && c.old[h[0]].nos[pos[h[0]]] == n {
			i := h[0]
			group = append(group, member{i, pos[i]})
			pos[i]++
			if pos[i] == len(c.old[i].nos) {
				h[0] = h[len(h)-1]
				h = h[:len(h)-1]
			}
			siftDown(h, 0, less)
		}
		// group is in old-shard order.
		for g, m := range group {
			d := c.old[m.shard].dst[m.k]
			j := int(d & dstShard)
			if stamp[j] != uint64(n)+1 {
				stamp[j], best[j] = uint64(n)+1, g
				continue
			}
			b := group[best[j]]
			if d&dstUnfinished != 0 && c.old[b.shard].dst[b.k]&dstUnfinished == 0 {
				best[j] = g
			}
		}
		for g, m := range group {
			o := &c.old[m.shard]
			d := o.dst[m.k]
			j := int(d & dstShard)
			p.shardRuns[j]++
			if m.shard != j {
				p.moved++
			}
			if best[j] != g {
				losers = append(losers, loser{gen: o.gen[m.k], no: n, shard: uint16(m.shard), j: uint16(j)})
				continue
			}
			o.to[m.k] = n
			if d&dstPrior != 0 {
				o.dst[m.k] |= dstFlag
			}
			c.wNos[j] = append(c.wNos[j], n)
			c.wShard[j] = append(c.wShard[j], uint16(m.shard))
			p.nextRun[j] = max(p.nextRun[j], model.RunNo(n)+1)
		}
	}
	for i := range c.old {
		c.old[i].gen = nil
	}
	slices.SortFunc(losers, func(a, b loser) int {
		switch {
		case a.j != b.j:
			return int(a.j) - int(b.j)
		case a.gen != b.gen:
			return cmp.Compare(a.gen, b.gen)
		case a.no != b.no:
			return cmp.Compare(a.no, b.no)
		}
		return int(a.shard) - int(b.shard)
	})
	perShard := make([]int, newN)
	for _, l := range losers {
		perShard[l.j]++
	}
	for j, n := range perShard {
		c.lShard[j], c.lNo[j] = make([]uint16, 0, n), make([]uint32, 0, n)
	}
	for _, l := range losers {
		o := &c.old[l.shard]
		k, _ := slices.BinarySearch(o.nos, l.no)
		j := int(l.j)
		newNo := uint32(p.maxUsed) + 1 + uint32(len(c.lNo[j]))
		o.to[k] = newNo
		o.dst[k] |= dstFlag
		c.lShard[j] = append(c.lShard[j], l.shard)
		c.lNo[j] = append(c.lNo[j], l.no)
		p.renumbered++
	}
	for j := range p.nextRun {
		// As on the spill path: every new shard continues above every
		// number any old shard used.
		p.nextRun[j] = max(p.nextRun[j], p.maxUsed+model.RunNo(len(c.lNo[j]))+1)
	}
	return nil
}

// find returns the index of no in the ascending nos: a direct index when
// the numbers up to it are dense, else a binary search.
func find(nos []uint32, no model.RunNo) (int, bool) {
	if len(nos) == 0 || uint64(no) > math.MaxUint32 || uint32(no) < nos[0] {
		return 0, false
	}
	if k := uint64(no) - uint64(nos[0]); k < uint64(len(nos)) && nos[k] == uint32(no) {
		return int(k), true
	}
	return slices.BinarySearch(nos, uint32(no))
}

// lookup returns where old run (shard, no) went.
func (c *runMap) lookup(shard int, no model.RunNo) (mapped, bool) {
	if shard < 0 || shard >= len(c.old) {
		return mapped{}, false
	}
	o := &c.old[shard]
	k, ok := find(o.nos, no)
	if !ok {
		return mapped{}, false
	}
	d := o.dst[k]
	m := mapped{Shard: int(d & dstShard), No: model.RunNo(o.to[k]), ID: runKey(shard, no)}
	m.Renumbered = d&dstFlag != 0
	return m, true
}

// identityAt is the identity of the run now at new (shard, no).
func (c *runMap) identityAt(shard int, no model.RunNo) (uint64, bool) {
	if shard < 0 || shard >= len(c.wNos) {
		return 0, false
	}
	if no > c.maxUsed {
		k := uint64(no - c.maxUsed - 1)
		if k >= uint64(len(c.lNo[shard])) {
			return 0, false
		}
		return runKey(int(c.lShard[shard][k]), model.RunNo(c.lNo[shard][k])), true
	}
	k, ok := find(c.wNos[shard], no)
	if !ok {
		return 0, false
	}
	return runKey(int(c.wShard[shard][k]), no), true
}

// runKey packs a (shard, number) pair: numbers are below 2^48, shards
// below 2^10.
func runKey(shard int, no model.RunNo) uint64 { return uint64(shard)<<48 | uint64(no) }
