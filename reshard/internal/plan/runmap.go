package plan

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/fusee-dev/fusee/journal/model"
)

// The compact run map (docs/reshard.md §4, "Run lookups"). Pass 1 reads
// each old shard's runs in ascending number, so the map is a few arrays
// per old shard indexed by a run's rank (its place among the shard's
// numbers), appended to as the runs come:
//
//	old shard i: nos (a rankSet of the old numbers: a bitmap when they
//	             are dense), dst[k] (new shard and flag bits),
//	             gen[k] (while the plan is made: it orders the losers;
//	             16 bits, a larger one in the shard's bigGen by rank)
//
// and, once the numbers are assigned,
//
//	old shard i: lost (the ranks of its runs that lost their number),
//	             to[r] (the new number of the r-th of them)
//	new shard j: won (the numbers winners kept), from[r] (the r-th
//	             winner's old shard); lost[t] (the loser numbered
//	             maxUsed+1+t, as a reference: its old shard's first
//	             reference, base, plus its rank there)
//
// A winner keeps its number, so only losers carry a forward number. On
// a directory whose numbers are dense (every run of a shard still there,
// or only the oldest gone) that is about 2 bytes a run, plus 10 for each
// run that loses its number, and 2 for each that keeps it (8 bytes a run
// for 10M runs shrunk 16 -> 6, 6 for 16 -> 32); while the plan is made,
// 2 more a run for the generations and 8 per loser of one new shard for
// the sort. (With 4 bytes a generation, a 10M-run 8 -> 3 did not fit
// the default budget's 128 MiB by about 3 MB, and went through the run
// files and the paged map; a run's generation among its workflow ID's
// runs is rarely above 65,534, and one that is costs bigGenBytes.) A
// lookup is a rank: a popcount in one bitmap word, or a binary search in
// a sorted array. Run numbers must fit 32 bits here: a
// directory whose numbers do not, or whose runs do not fit the map's
// share of the budget, is planned through pass 1's run files (runfile.go)
// and looked up in the paged run map (runmapfile.go), which give the same
// answers.
//
// The identity of a run (the digests' name for it, §6) is its old
// (shard, number) packed by runKey, in both maps: unique per run, the
// same whether it is reached by its old number (forward) or its new one
// (back), which is all the digests need.

// compactEntryBytes bounds what one run can cost the compact map at its
// peak, whatever the numbers' spread: 4 for its number in a sorted array,
// 2 for dst, 2 for the generation (a large one is charged bigGenBytes
// more), and for a loser 4 in its new shard's list, 4 for its forward
// number, 4 for its rank in lost and 8 in the sort (twice that while an
// array grows by appending).
const compactEntryBytes = 64

// dst bits.
const (
	dstShard      = 0x3ff   // the new shard (meta.MaxShards is 1024)
	dstLost       = 1 << 12 // lost its number (assigned)
	dstUnfinished = 1 << 13 // running or parked (pass 1)
	dstPrior      = 1 << 14 // renumbered by an earlier reshard (pass 1)
	dstFlag       = 1 << 15 // the new entry's renumbered flag (assigned)
)

// errMapFull says the runs outgrew the compact map: the pass goes on
// through its run files (Pass).
var errMapFull = errors.New("the compact run map is full")

// genBig marks, in oldRuns.gen, a generation held in bigGen; bigGenBytes
// is what one such costs the allowance (a Go map's entry, generously).
const (
	genBig      = math.MaxUint16
	bigGenBytes = 64
)

type oldRuns struct {
	nos     rankSet
	dst     []uint16
	gen     []uint16          // until the losers are ordered; genBig: see bigGen
	bigGen  map[uint32]uint32 // generations of genBig and above, by rank
	lost    rankSet           // ranks in nos
	to      []uint32          // by rank in lost
	base    uint32            // the runs of the old shards before this one
	sealed  bool
	charged int64 // what c.bytes counts for it
}

type newRuns struct {
	won  rankSet
	from []uint16 // by rank in won
	lost []uint32 // by new number - maxUsed - 1: old base + rank
}

type runMap struct {
	old     []oldRuns
	new     []newRuns
	maxUsed model.RunNo
	runs    int64
	// bytes is what the arrays hold: pass 1 adds several old shards at
	// once (each its own oldRuns), and they charge it together.
	bytes atomic.Int64
	limit int64 // the allowance
}

// newRunMap is an empty compact map for oldN old and newN new shards
// holding at most allowance bytes.
func newRunMap(oldN, newN int, allowance int64) *runMap {
	return &runMap{old: make([]oldRuns, oldN), new: make([]newRuns, newN), limit: allowance}
}

func (o *oldRuns) size() int64 {
	return o.nos.bytes() + 2*int64(cap(o.dst)) + 2*int64(cap(o.gen)) + bigGenBytes*int64(len(o.bigGen)) +
		o.lost.bytes() + 4*int64(cap(o.to))
}

// genAt is the generation of the run of rank k.
func (o *oldRuns) genAt(k int) uint32 {
	if g := o.gen[k]; g != genBig {
		return uint32(g)
	}
	return o.bigGen[uint32(k)]
}

// charge brings c.bytes up to date with old shard i's arrays and says
// whether they still fit.
func (c *runMap) charge(i int) bool {
	o := &c.old[i]
	n := o.size()
	total := c.bytes.Add(n - o.charged)
	o.charged = n
	return total <= c.limit
}

// reserve sizes old shard i's arrays for about n runs (its header's next
// run less one: exact for a directory no reshard grew), as far as the
// allowance goes, so that pass 1's appends do not copy.
func (c *runMap) reserve(i int, n int64) {
	n = min(n, (c.limit-c.bytes.Load())/8)
	if n <= 0 {
		return
	}
	o := &c.old[i]
	o.nos.plain, o.dst, o.gen = make([]uint32, 0, n), make([]uint16, 0, n), make([]uint16, 0, n)
	c.charge(i)
}

// seal finishes old shard i's pass 1: its numbers become a bitmap when
// that is smaller, and spare capacity is given back.
func (c *runMap) seal(i int) {
	o := &c.old[i]
	if o.sealed {
		return
	}
	o.sealed = true
	o.nos.seal()
	if cap(o.dst) > len(o.dst)+len(o.dst)/8 {
		o.dst, o.gen = slices.Clone(o.dst), slices.Clone(o.gen)
	}
	c.charge(i)
}

// add records old shard i's run no (in ascending order), bound for new
// shard j; errMapFull if it does not fit. Several old shards may be added
// at once, each on one goroutine; a shard is sealed when it ends.
func (c *runMap) add(i int, no model.RunNo, j int, e *model.RunEntry) error {
	o := &c.old[i]
	if o.sealed || uint64(no) > math.MaxUint32 || (o.nos.n > 0 && uint32(no) <= o.nos.last()) {
		return errMapFull
	}
	d := dstOf(j, e)
	grows := len(o.dst) == cap(o.dst) || len(o.gen) == cap(o.gen) || len(o.nos.plain) == cap(o.nos.plain)
	o.nos.add(uint32(no))
	o.dst = append(o.dst, d)
	if e.Gen < genBig {
		o.gen = append(o.gen, uint16(e.Gen))
	} else {
		if o.bigGen == nil {
			o.bigGen = map[uint32]uint32{}
		}
		o.bigGen[uint32(len(o.gen))] = e.Gen
		o.gen = append(o.gen, genBig)
		grows = true
	}
	if grows && !c.charge(i) {
		return errMapFull
	}
	return nil
}

// A rankCursor reads a rankSet's members in ascending order.
type rankCursor struct {
	s    *rankSet
	k    int    // the rank of the member next returns
	w    int    // bitmap form: the word being read
	word uint64 // its bits not yet returned
}

func (r *rankCursor) next() (uint32, bool) {
	s := r.s
	if r.k >= s.n {
		return 0, false
	}
	r.k++
	if s.words == nil {
		return s.plain[r.k-1], true
	}
	for r.word == 0 {
		r.w++
		r.word = s.words[r.w]
	}
	b := bits.TrailingZeros64(r.word)
	r.word &= r.word - 1
	return s.base + uint32(r.w*64+b), true
}

// A compactCursor reads one old shard's runs from the compact map, for
// mergeRuns.
type compactCursor struct {
	rankCursor
	o *oldRuns
}

func (c *compactCursor) next() (passRun, bool) {
	n, ok := c.rankCursor.next()
	if !ok {
		return passRun{}, false
	}
	k := c.k - 1
	return passRun{no: uint64(n), d: c.o.dst[k], gen: c.o.genAt(k)}, true
}

// merge is mergeRuns over the compact map's old shards.
func (c *runMap) merge(visit func(r *mergedRun, wins bool)) {
	cur := make([]runCursor, len(c.old))
	for i := range c.old {
		cur[i] = &compactCursor{rankCursor: rankCursor{s: &c.old[i].nos, w: -1}, o: &c.old[i]}
	}
	_ = mergeRuns(cur, len(c.new), func(r *mergedRun, wins bool) error { visit(r, wins); return nil })
}

// assign gives every run its new number (docs/reshard.md §2) and fills
// p's counters: a merge of the old shards' numbers, each number's runs
// in old-shard order, the first unfinished one (else the first) keeping
// it in each new shard; then the losers by (new shard, generation, old
// number, old shard) from maxUsed+1 up. It merges twice: once to count
// (so that every array is made at its size, and the allowance is known
// to hold them before any is), once to fill.
func (c *runMap) assign(p *Plan) error {
	c.maxUsed = p.maxUsed
	c.runs = 0
	for i := range c.old {
		c.seal(i)
		c.runs += int64(c.old[i].nos.n)
	}
	if uint64(p.maxUsed)+uint64(c.runs) >= math.MaxUint32 {
		return errMapFull
	}
	n := c.count(p)
	sortNeed, err := c.allocate(n)
	if err != nil {
		return err
	}
	c.fill()
	c.orderLosers(p, sortNeed)
	for i := range c.old {
		c.old[i].gen, c.old[i].bigGen = nil, nil
		c.charge(i)
	}
	for j := range p.NextRun {
		// As on the spill path: every new shard continues above every
		// number any old shard used.
		p.NextRun[j] = max(p.NextRun[j], p.maxUsed+model.RunNo(len(c.new[j].lost))+1)
	}
	return nil
}

// assignCounts is what assign's first merge counts, so that every array
// is made at its size.
type assignCounts struct {
	won     []int    // per new shard: its winners
	lo, hi  []uint32 // per new shard: its winners' lowest and highest number
	lostNew []int    // per new shard: its losers
	lostOld []int    // per old shard: its runs that lose their number
}

// count is assign's first merge: the winners' spans and every shard's
// losers, and p's counters.
func (c *runMap) count(p *Plan) *assignCounts {
	newN := len(c.new)
	n := &assignCounts{won: make([]int, newN), lo: make([]uint32, newN), hi: make([]uint32, newN),
		lostNew: make([]int, newN), lostOld: make([]int, len(c.old))}
	c.merge(func(r *mergedRun, wins bool) {
		i, j, no := r.shard, int(r.d&dstShard), uint32(r.no)
		p.ShardRuns[j]++
		if i != j {
			p.Moved++
		}
		if !wins {
			n.lostNew[j]++
			n.lostOld[i]++
			return
		}
		if n.won[j] == 0 {
			n.lo[j] = no
		}
		n.hi[j] = no
		n.won[j]++
		p.NextRun[j] = max(p.NextRun[j], model.RunNo(no)+1)
	})
	return n
}

// allocate makes the arrays of the assignment at their sizes, or says
// errMapFull when they and the losers' sort would not fit the allowance;
// it returns what the sort needs.
func (c *runMap) allocate(n *assignCounts) (int64, error) {
	var need, sortNeed int64
	for j := range c.new {
		s := newRankSet(n.lo[j], n.hi[j], n.won[j])
		need += s.bytes() + 2*int64(n.won[j]) + 4*int64(n.lostNew[j])
		sortNeed = max(sortNeed, 8*int64(n.lostNew[j]))
		c.new[j] = newRuns{won: s, from: make([]uint16, 0, n.won[j]), lost: make([]uint32, 0, n.lostNew[j])}
		if need+c.bytes.Load() > c.limit { // stop making arrays that will not be kept
			return 0, errMapFull
		}
	}
	var base uint32
	for i := range c.old {
		o := &c.old[i]
		o.base = base
		base += uint32(o.nos.n)
		if o.nos.n > 0 {
			o.lost = newRankSet(0, uint32(o.nos.n-1), n.lostOld[i])
		}
		o.to = make([]uint32, n.lostOld[i])
		need += o.lost.bytes() + 4*int64(n.lostOld[i])
	}
	if c.bytes.Load()+need+sortNeed > c.limit {
		return 0, errMapFull
	}
	c.bytes.Add(need)
	return sortNeed, nil
}

// fill is assign's second merge: winners into their new shard's set,
// losers flagged and listed in (old number, old shard) order.
func (c *runMap) fill() {
	c.merge(func(r *mergedRun, wins bool) {
		i, k, n := r.shard, r.k, uint32(r.no)
		o, nw := &c.old[i], &c.new[int(r.d&dstShard)]
		if wins {
			if o.dst[k]&dstPrior != 0 {
				o.dst[k] |= dstFlag
			}
			nw.won.add(n)
			nw.from = append(nw.from, uint16(i))
			return
		}
		o.dst[k] |= dstLost | dstFlag
		o.lost.add(uint32(k))
		nw.lost = append(nw.lost, o.base+uint32(k))
	})
	for i := range c.old {
		c.old[i].lost.seal()
	}
}

// orderLosers numbers each new shard's losers from maxUsed+1 up, by
// (generation, old number, old shard).
func (c *runMap) orderLosers(p *Plan, sortNeed int64) {
	keys := make([]uint64, 0, sortNeed/8)
	for j := range c.new {
		nw := &c.new[j]
		nw.won.seal()
		// Losers came in (old number, old shard) order: a stable order by
		// generation gives (generation, old number, old shard).
		keys = keys[:0]
		for t, ref := range nw.lost {
			i, k := c.oldOf(ref)
			keys = append(keys, uint64(c.old[i].genAt(k))<<32|uint64(t))
		}
		slices.Sort(keys)
		for t := range keys {
			keys[t] = uint64(nw.lost[keys[t]&math.MaxUint32])
		}
		for t, ref := range keys {
			nw.lost[t] = uint32(ref)
			i, k := c.oldOf(uint32(ref))
			r, _ := c.old[i].lost.rank(uint64(k))
			c.old[i].to[r] = uint32(p.maxUsed) + 1 + uint32(t)
		}
		p.Renumbered += int64(len(nw.lost))
	}
}

// oldOf is the old shard and rank of a loser's reference: the first old
// shard whose runs end after it. (A binary search by hand: through
// slices.BinarySearchFunc each probe copied an oldRuns.)
func (c *runMap) oldOf(ref uint32) (int, int) {
	lo, hi := 0, len(c.old)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if o := &c.old[mid]; o.base+uint32(o.nos.n) <= ref {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, int(ref - c.old[lo].base)
}

// lookup returns where old run (shard, no) went.
func (c *runMap) lookup(shard int, no model.RunNo) (Mapped, bool) {
	if shard < 0 || shard >= len(c.old) {
		return Mapped{}, false
	}
	o := &c.old[shard]
	k, ok := o.nos.rank(uint64(no))
	if !ok {
		return Mapped{}, false
	}
	d := o.dst[k]
	m := Mapped{Shard: int(d & dstShard), No: no, ID: RunKey(shard, no)}
	if d&dstLost != 0 {
		r, _ := o.lost.rank(uint64(k))
		m.No = model.RunNo(o.to[r])
	}
	m.Renumbered = d&dstFlag != 0
	return m, true
}

// identityAt is the identity of the run now at new (shard, no).
func (c *runMap) identityAt(shard int, no model.RunNo) (uint64, bool) {
	if shard < 0 || shard >= len(c.new) {
		return 0, false
	}
	nw := &c.new[shard]
	if no > c.maxUsed {
		t := uint64(no - c.maxUsed - 1)
		if t >= uint64(len(nw.lost)) {
			return 0, false
		}
		i, k := c.oldOf(nw.lost[t])
		return RunKey(i, model.RunNo(c.old[i].nos.at(k))), true
	}
	r, ok := nw.won.rank(uint64(no))
	if !ok {
		return 0, false
	}
	return RunKey(int(nw.from[r]), no), true
}

// runKey packs a (shard, number) pair: numbers are below 2^48, shards
// below 2^10.
func RunKey(shard int, no model.RunNo) uint64 { return uint64(shard)<<48 | uint64(no) }
