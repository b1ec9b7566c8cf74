package plan

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// The renumbering plan (docs/reshard.md §2): within each new shard, a
// run keeps its number unless another run took it first (an unfinished
// run before a finished one, then the lowest old shard: mergeRuns); the
// others, the "losers", are numbered from maxUsed+1 up, maxUsed being the
// highest number any old shard ever handed out, in the order (generation,
// old number, old shard). Ordering losers by generation first keeps the
// newest run of each workflow ID the highest among that ID's renumbered
// runs (all runs of one ID share a new shard). Growing to a multiple of
// the old count renumbers nothing: each new shard draws from exactly one
// old shard, whose numbers are distinct.

// Entry is what the plan knows of a run.
type Entry struct {
	State      model.RunState
	Gen        uint32
	Renumbered bool // already renumbered by an earlier reshard
	WorkflowID string
}

// Mapped is where a run went, and who it is.
type Mapped struct {
	Shard int
	No    model.RunNo
	Entry
	// ID is the run's identity in the digests: set by Plan.Lookup, which
	// leaves its Entry's State, Gen and WorkflowID unset when it answers
	// from the compact map (runmap.go).
	ID uint64
}

// Unfinished says whether a run in state s is running or parked: the
// runs that keep a number in a collision, and whose renumbering the
// report lists.
func Unfinished(s model.RunState) bool {
	return s == model.StateRunning || s == model.StateParked
}

// Plan is the result of pass 1 and the assignment: where every run goes
// and under which number, and the counts the report and the new shards'
// headers need. Once made it is only read (by several goroutines at once).
type Plan struct {
	oldN, newN int
	maxUsed    model.RunNo
	StoreGen   uint64 // the old stores' generation (the highest)
	RawBytes   int64  // the old stores' keys and values, uncompressed (at most)
	Now        int64
	Created    int64
	NextRun    []model.RunNo
	ShardRuns  []int64
	Renumbered int64
	Moved      int64
	ByState    map[model.RunState]int64
	compact    *runMap      // the run map when it fits the budget
	paged      *pagedRunMap // else (runmapfile.go)
	spilled    bool         // paged was made (it is let go by Close)
	fs         vfs.FS
	details    []string // per old shard: its details file, for a plan file (runfile.go)
}

// Lookup returns where the old run (shard, no) went.
func (p *Plan) Lookup(shard int, no model.RunNo) (Mapped, bool, error) {
	if p.compact != nil {
		m, ok := p.compact.lookup(shard, no)
		return m, ok, nil
	}
	return p.paged.lookup(shard, no)
}

// IdentityAt is the identity of the run now at new (shard, no).
func (p *Plan) IdentityAt(shard int, no model.RunNo) (uint64, bool, error) {
	if p.compact != nil {
		id, ok := p.compact.identityAt(shard, no)
		return id, ok, nil
	}
	return p.paged.identityAt(shard, no)
}

// A Cache (NewCache) remembers the last few lookups and identities of one
// user of the plan (one goroutine): references mostly name the run being
// rewritten or read, or its neighbours, and a paged lookup takes a lock
// and searches a page.
// The run map does not change once the plan is made, so a remembered
// answer stays right.
type Cache struct {
	p     *Plan
	slots [256]struct {
		used  bool
		key   model.RunRef
		m     Mapped
		found bool
	}
	ids [256]struct {
		used, found bool
		key         model.RunRef
		id          uint64
	}
}

// NewCache is an empty cache of p's lookups, for one goroutine.
func NewCache(p *Plan) *Cache { return &Cache{p: p} }

// Lookup is p.Lookup, remembered.
func (c *Cache) Lookup(shard int, no model.RunNo) (Mapped, bool, error) {
	s := &c.slots[(uint64(no)*31+uint64(shard))%uint64(len(c.slots))]
	key := model.RunRef{Shard: shard, Run: no}
	if s.used && s.key == key {
		return s.m, s.found, nil
	}
	m, ok, err := c.p.Lookup(shard, no)
	if err != nil {
		return m, ok, err
	}
	s.used, s.key, s.m, s.found = true, key, m, ok
	return m, ok, nil
}

// IdentityAt is p.IdentityAt, remembered.
func (c *Cache) IdentityAt(shard int, no model.RunNo) (uint64, bool, error) {
	s := &c.ids[(uint64(no)*31+uint64(shard))%uint64(len(c.ids))]
	key := model.RunRef{Shard: shard, Run: no}
	if s.used && s.key == key {
		return s.id, s.found, nil
	}
	id, ok, err := c.p.IdentityAt(shard, no)
	if err != nil {
		return id, ok, err
	}
	s.used, s.key, s.id, s.found = true, key, id, ok
	return id, ok, nil
}

// Close removes the plan's scratch files and lets go of its run map:
// no lookup may follow. Closing again does nothing.
func (p *Plan) Close() {
	p.compact = nil
	if p.paged != nil {
		_ = p.paged.Close()
		p.paged = nil
	}
	for _, path := range p.details {
		_ = p.fs.Remove(path)
	}
	p.details = nil
}
