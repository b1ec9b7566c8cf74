package plan

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// ErrMapFull says the runs outgrew the compact run map: the plan is made
// again through a spilled Pass.
var ErrMapFull = errMapFull

// A Pass is pass 1 under way: the old shards' headers and run entries,
// each old shard through a ShardPass of its own and its runs in ascending
// number, then Assign. Several old shards may be passed at once, each on
// a goroutine of its own; the plan does not depend on their order. A
// compact pass holds them in the compact run map (runmap.go) and may say
// ErrMapFull; a spilled pass writes plan keys to a spill map.
type Pass struct {
	p    *Plan
	c    *runMap         // compact, or
	keys *store.SpillMap // spilled
	// mu guards p's counters, keys and created while shards are passed.
	mu      sync.Mutex
	created int // the old shard p.Created comes from: the last one
}

func newPass(oldN, newN int) *Pass {
	return &Pass{p: &Plan{oldN: oldN, newN: newN, ByState: map[model.RunState]int64{},
		NextRun: make([]model.RunNo, newN), ShardRuns: make([]int64, newN)}, created: -1}
}

// A ShardPass is one old shard's part of a Pass: its runs, on one
// goroutine.
type ShardPass struct {
	s       *Pass
	i       int
	byState map[model.RunState]int64
}

// NewCompactPass is a pass into the compact run map, holding at most
// allowance bytes.
func NewCompactPass(oldN, newN int, allowance int64) *Pass {
	s := newPass(oldN, newN)
	s.c = newRunMap(oldN, newN, allowance)
	return s
}

// NewSpilledPass is a pass writing plan keys to keys.
func NewSpilledPass(oldN, newN int, keys *store.SpillMap) *Pass {
	s := newPass(oldN, newN)
	s.keys = keys
	return s
}

// Shard begins old shard i: its header and its store's raw size. Its
// runs go to the ShardPass it returns.
func (s *Pass) Shard(i int, h model.CheckpointHeader, raw uint64) *ShardPass {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.p
	if h.NextRun > 0 && h.NextRun-1 > p.maxUsed {
		p.maxUsed = h.NextRun - 1
	}
	p.StoreGen = max(p.StoreGen, h.Gen)
	p.Now = max(p.Now, h.Now)
	if i > s.created {
		p.Created, s.created = h.Created, i
	}
	p.RawBytes += int64(raw)
	if s.c != nil && h.NextRun > 0 {
		s.c.reserve(i, int64(h.NextRun-1))
	}
	return &ShardPass{s: s, i: i, byState: map[model.RunState]int64{}}
}

// Add records the old shard's run no, bound for new shard j.
func (sp *ShardPass) Add(no model.RunNo, j int, run *model.RunEntry) error {
	s := sp.s
	sp.byState[run.State]++
	if s.c != nil {
		return s.c.add(sp.i, no, j, run)
	}
	e := Entry{State: run.State, Gen: run.Gen, Renumbered: run.Renumbered, WorkflowID: run.WorkflowID}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.Put(planKey(j, no, Unfinished(run.State), sp.i), encodePlanValue(e))
}

// End ends the old shard's runs.
func (sp *ShardPass) End() {
	s := sp.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for st, n := range sp.byState {
		s.p.ByState[st] += n
	}
	if s.c != nil {
		s.c.seal(sp.i)
	}
}

// Assign gives every run its new number (docs/reshard.md §2) once every
// shard is added; newMap makes the spill maps the plan keeps (its run
// map and reverse: empty for a compact pass).
func (s *Pass) Assign(newMap func(name string) *store.SpillMap) (*Plan, error) {
	p := s.p
	if p.maxUsed >= model.MaxRunNo-1 {
		return nil, fmt.Errorf("the old shards have used run numbers up to %d: no room to renumber", p.maxUsed)
	}
	if s.c == nil {
		return assignSpilled(p, s.keys, newMap)
	}
	if err := s.c.assign(p); err != nil {
		return nil, err
	}
	p.compact = s.c
	p.runs, p.rev = newMap("runs"), newMap("rev") // empty: Spilled says false
	return p, nil
}

// Page freezes a spilled plan's run map and reverse into a paged file at
// path (runmapfile.go), whose page cache holds cacheBytes; the reverse's
// spill map is closed. A compact plan is left as it is.
func (p *Plan) Page(fs vfs.FS, path string, cacheBytes int64) error {
	if p.compact != nil {
		return nil
	}
	var err error
	if p.paged, err = freezeRunMap(fs, path, p, runPageSize, cacheBytes); err != nil {
		return err
	}
	return p.rev.Close()
}

// Spilled says whether the run map went to the spill maps' scratch stores.
func (p *Plan) Spilled() bool { return p.runs.Spilled() }

// EachRun visits a spilled plan's runs (the spill run map: a plan file is
// made or applied) by old shard and number.
func (p *Plan) EachRun(fn func(oldShard int, oldNo model.RunNo, m Mapped) error) error {
	if p.compact != nil {
		return errors.New("internal error: the compact run map is not listed")
	}
	return p.runs.Each(nil, func(k, v []byte) error {
		shard, no := decodeRunMapKey(k)
		return fn(shard, no, decodeMapped(v))
	})
}
