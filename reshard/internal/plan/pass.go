package plan

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// A Pass is pass 1 under way: the old shards' headers and run entries,
// each old shard through a ShardPass of its own and its runs in ascending
// number, then Assign. Several old shards may be passed at once, each on
// a goroutine of its own; the plan does not depend on their order.
//
// The runs go into the compact run map (runmap.go) while they fit its
// allowance. Once they do not (in pass 1, or when Assign finds that the
// assignment would not), the pass spills: each old shard's runs go to a
// run file of its own (runfile.go), those the compact map held first, and
// Assign makes the paged run map from the files (assignpaged.go). Nothing
// read is read again.
type Pass struct {
	p       *Plan
	fs      vfs.FS
	dir     string // the scratch directory of the pass's files
	details bool   // details files for Plan.EachRun
	// allowance is the compact map's, and the paged assignment's.
	allowance int64
	c         *runMap
	spilled   atomic.Bool // the runs go to run files
	// pageSize is the paged map's page size (a test makes it small).
	pageSize int
	// mu guards p's counters, created, toNew, made, and the run files of
	// old shards no worker holds (sealed) while shards are passed.
	mu      sync.Mutex
	created int             // the old shard p.Created comes from: the last one
	toNew   []int64         // runs bound for each new shard
	runs    []*recordWriter // per old shard: its run file, once spilled
	detail  []*recordWriter // per old shard: its details file
	made    bool            // dir is made
	done    bool            // Assign handed the files to the plan
}

// NewPass is pass 1 for oldN old and newN new shards, its compact map
// holding at most allowance bytes, its files under dir (made when first
// needed); details keeps what Plan.EachRun lists.
func NewPass(fs vfs.FS, dir string, oldN, newN int, allowance int64, details bool) *Pass {
	return &Pass{p: &Plan{oldN: oldN, newN: newN, ByState: map[model.RunState]int64{},
		NextRun: make([]model.RunNo, newN), ShardRuns: make([]int64, newN)}, created: -1,
		fs: fs, dir: dir, details: details, allowance: allowance, c: newRunMap(oldN, newN, allowance), pageSize: runPageSize,
		toNew: make([]int64, newN), runs: make([]*recordWriter, oldN), detail: make([]*recordWriter, oldN)}
}

// A ShardPass is one old shard's part of a Pass: its runs, on one
// goroutine.
type ShardPass struct {
	s       *Pass
	i       int
	byState map[model.RunState]int64
	toNew   []int64
}

// Shard begins old shard i: its header and its store's raw size. Its
// runs go to the ShardPass it returns.
func (s *Pass) Shard(i int, h model.CheckpointHeader, raw uint64) (*ShardPass, error) {
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
	if !s.spilled.Load() && h.NextRun > 0 {
		s.c.reserve(i, int64(h.NextRun-1))
	}
	if s.details {
		var err error
		if s.detail[i], err = s.create(fmt.Sprintf("details-%04d", i)); err != nil {
			return nil, err
		}
	}
	return &ShardPass{s: s, i: i, byState: map[model.RunState]int64{}, toNew: make([]int64, len(p.NextRun))}, nil
}

// create makes a scratch file of the pass (under s.mu).
func (s *Pass) create(name string) (*recordWriter, error) {
	if !s.made {
		if err := s.fs.MkdirAll(s.dir, 0o755); err != nil {
			return nil, fmt.Errorf("plan scratch directory: %w", err)
		}
		s.made = true
	}
	return createRecords(s.fs, s.fs.PathJoin(s.dir, name))
}

// Add records the old shard's run no, bound for new shard j.
func (sp *ShardPass) Add(no model.RunNo, j int, run *model.RunEntry) error {
	s := sp.s
	sp.byState[run.State]++
	sp.toNew[j]++
	if d := s.detail[sp.i]; d != nil {
		if err := d.addDetails(no, run); err != nil {
			return err
		}
	}
	if s.runs[sp.i] == nil && !s.spilled.Load() {
		held := len(s.c.old[sp.i].dst)
		err := s.c.add(sp.i, no, j, run)
		if !errors.Is(err, errMapFull) {
			return err
		}
		if err := s.spill(); err != nil {
			return err
		}
		if err := sp.toFile(); err != nil {
			return err
		}
		if s.runs[sp.i].n > int64(held) { // the compact map took it before it was full
			return nil
		}
	}
	if s.runs[sp.i] == nil {
		if err := sp.toFile(); err != nil {
			return err
		}
	}
	return s.runs[sp.i].addRun(passRun{no: uint64(no), d: dstOf(j, run), gen: run.Gen})
}

// dstOf is a run's dst bits in pass 1.
func dstOf(j int, run *model.RunEntry) uint16 {
	d := uint16(j)
	if Unfinished(run.State) {
		d |= dstUnfinished
	}
	if run.Renumbered {
		d |= dstPrior
	}
	return d
}

// toFile starts the shard's run file with what the compact map holds of
// it, on the shard's own goroutine.
func (sp *ShardPass) toFile() error {
	s := sp.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dump(sp.i)
}

// spill makes the pass write runs to files from now on: the old shards
// that are done move from the compact map to their run files now, those
// being passed when their goroutine next adds a run or ends.
func (s *Pass) spill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spilled.Load() {
		return nil
	}
	if !s.made { // before the flag: files are made without the lock from here
		if err := s.fs.MkdirAll(s.dir, 0o755); err != nil {
			return fmt.Errorf("plan scratch directory: %w", err)
		}
		s.made = true
	}
	s.spilled.Store(true)
	for i := range s.c.old {
		if s.c.old[i].sealed {
			if err := s.dump(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// dump starts old shard i's run file (if it has none) with the runs the
// compact map holds of it, and frees them (under s.mu, by the goroutine
// that holds the shard, or for a sealed one).
func (s *Pass) dump(i int) error {
	if s.runs[i] != nil {
		return nil
	}
	w, err := s.create(fmt.Sprintf("runs-%04d", i))
	if err != nil {
		return err
	}
	s.runs[i] = w
	o := &s.c.old[i]
	cur := compactCursor{rankCursor: rankCursor{s: &o.nos, w: -1}, o: o}
	for r, ok := cur.next(); ok; r, ok = cur.next() {
		if err := w.addRun(r); err != nil {
			return err
		}
	}
	s.c.bytes.Add(-o.charged)
	*o = oldRuns{sealed: o.sealed}
	return nil
}

// End ends the old shard's runs.
func (sp *ShardPass) End() error {
	s := sp.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for st, n := range sp.byState {
		s.p.ByState[st] += n
	}
	for j, n := range sp.toNew {
		s.toNew[j] += n
	}
	if err := s.detail[sp.i].close(); err != nil {
		return err
	}
	if !s.spilled.Load() {
		s.c.seal(sp.i)
		return nil
	}
	if err := s.dump(sp.i); err != nil {
		return err
	}
	return s.runs[sp.i].close()
}

// Assign gives every run its new number (docs/reshard.md §2) once every
// shard is added: in the compact map if it holds them, else in a paged
// run map whose page cache holds cacheBytes.
func (s *Pass) Assign(cacheBytes int64) (*Plan, error) {
	p := s.p
	if p.maxUsed >= model.MaxRunNo-1 {
		return nil, fmt.Errorf("the old shards have used run numbers up to %d: no room to renumber", p.maxUsed)
	}
	if !s.spilled.Load() {
		err := s.c.assign(p)
		if err == nil {
			p.compact = s.c
			return s.handOver(), nil
		}
		if !errors.Is(err, errMapFull) {
			return nil, err
		}
		// The count that found the assignment too large counted.
		p.Moved = 0
		clear(p.ShardRuns)
		clear(p.NextRun)
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	for _, w := range s.runs {
		if err := w.close(); err != nil {
			return nil, err
		}
	}
	s.c = nil
	if err := s.assignPaged(cacheBytes); err != nil {
		return nil, err
	}
	return s.handOver(), nil
}

// handOver gives the plan the details files, which it lists and removes.
func (s *Pass) handOver() *Plan {
	if s.details {
		s.p.details = make([]string, len(s.detail))
		for i, w := range s.detail {
			s.p.details[i] = w.path
		}
		s.p.fs = s.fs
	}
	s.done = true
	return s.p
}

// Close removes what an unfinished pass made (nothing after Assign).
func (s *Pass) Close() {
	if s.done {
		return
	}
	for _, w := range append(s.runs, s.detail...) {
		_ = w.close()
	}
	if s.made {
		_ = s.fs.RemoveAll(s.dir)
	}
}

// Spilled says whether the plan outgrew the compact map (it is paged).
func (p *Plan) Spilled() bool { return p.spilled }

// EachRun visits the runs by old shard and number, with what the plan
// file says of them: the pass must have kept details (NewPass).
func (p *Plan) EachRun(fn func(oldShard int, oldNo model.RunNo, m Mapped) error) error {
	if p.details == nil {
		return errors.New("internal error: the plan kept no details of its runs")
	}
	for i, path := range p.details {
		if err := p.eachRunOf(i, path, fn); err != nil {
			return err
		}
	}
	return nil
}

// eachRunOf is EachRun for old shard i, whose details are at path.
func (p *Plan) eachRunOf(i int, path string, fn func(oldShard int, oldNo model.RunNo, m Mapped) error) error {
	r, err := openRecords(p.fs, path, fileBuffer)
	if err != nil {
		return err
	}
	defer r.close()
	var no model.RunNo
	var run model.RunEntry
	for r.readDetails(&no, &run) {
		m, ok, err := p.Lookup(i, no)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("internal error: run %d of old shard %d is not in the plan", no, i)
		}
		m.Entry = Entry{State: run.State, Gen: run.Gen, Renumbered: m.Renumbered, WorkflowID: run.WorkflowID}
		if err := fn(i, no, m); err != nil {
			return err
		}
	}
	return r.close()
}
