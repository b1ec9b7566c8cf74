package reshard

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
)

// The renumbering plan (docs/reshard.md, "Run numbers").
//
// Pass 1 reads every old shard's runs (entries only matter) and writes one
// plan key per run,
//
//	[new shard u16][old number u64][priority u8][old shard u16]
//
// where priority is 0 for an unfinished run (running or parked) and 1 for
// a finished or tombstoned one. Iterating the keys in order visits each new
// shard's runs by old number; among runs that share a number, the first one
// (unfinished before finished, then the lowest old shard) keeps it. The
// others are "losers": they are keyed again,
//
//	[new shard u16][generation u32][old number u64][old shard u16]
//
// and numbered in that order from maxUsed+1 up, where maxUsed is the
// highest number any old shard ever handed out. Ordering losers by
// generation first keeps the newest run of each workflow ID the highest
// among that ID's renumbered runs (all runs of one ID share a new shard).
// Growing to a multiple of the old count renumbers nothing: each new shard
// draws from exactly one old shard, whose numbers are distinct.

// planEntry is what the plan knows of a run.
type planEntry struct {
	State      model.RunState
	Gen        uint32
	Renumbered bool // already renumbered by an earlier reshard
	WorkflowID string
}

func encodePlanValue(e planEntry) []byte {
	b := []byte{byte(e.State), 0}
	if e.Renumbered {
		b[1] = 1
	}
	b = binary.BigEndian.AppendUint32(b, e.Gen)
	return append(b, e.WorkflowID...)
}

func decodePlanValue(v []byte) planEntry {
	return planEntry{State: model.RunState(v[0]), Renumbered: v[1] == 1,
		Gen: binary.BigEndian.Uint32(v[2:6]), WorkflowID: string(v[6:])}
}

func planKey(newShard int, no model.RunNo, unfinished bool, oldShard int) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(newShard))
	b = binary.BigEndian.AppendUint64(b, uint64(no))
	prio := byte(1)
	if unfinished {
		prio = 0
	}
	b = append(b, prio)
	return binary.BigEndian.AppendUint16(b, uint16(oldShard))
}

func loserKey(newShard int, gen uint32, no model.RunNo, oldShard int) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(newShard))
	b = binary.BigEndian.AppendUint32(b, gen)
	b = binary.BigEndian.AppendUint64(b, uint64(no))
	return binary.BigEndian.AppendUint16(b, uint16(oldShard))
}

// runMapKey keys the run map: [old shard u16][old number u64].
func runMapKey(shard int, no model.RunNo) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint16(nil, uint16(shard)), uint64(no))
}

// mapped is where a run went, and who it is.
type mapped struct {
	Shard int
	No    model.RunNo
	planEntry
	// ID is the run's identity in the digests: set by plan.lookup, which
	// leaves planEntry's State, Gen and WorkflowID unset when it answers
	// from the compact map (runmap.go).
	ID uint64
}

func encodeMapped(m mapped) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(m.Shard))
	b = binary.BigEndian.AppendUint64(b, uint64(m.No))
	return append(b, encodePlanValue(m.planEntry)...)
}

func decodeMapped(v []byte) mapped {
	return mapped{Shard: int(binary.BigEndian.Uint16(v)), No: model.RunNo(binary.BigEndian.Uint64(v[2:])),
		planEntry: decodePlanValue(v[10:])}
}

func unfinished(s model.RunState) bool {
	return s == model.StateRunning || s == model.StateParked
}

// plan is the result of pass 1 and the assignment.
type plan struct {
	oldN, newN int
	maxUsed    model.RunNo
	storeGen   uint64 // the old stores' generation (the highest)
	rawBytes   int64  // the old stores' keys and values, uncompressed (at most)
	now        int64
	created    int64
	runs       *spillMap // run map: old (shard, number) -> mapped (the plan file reads it)
	rev        *spillMap // reverse: new (shard, number) -> old (shard, number); closed once paged
	nextRun    []model.RunNo
	shardRuns  []int64
	renumbered int64
	moved      int64
	byState    map[model.RunState]int64
	compact    *runMap      // the run map when it fits the budget
	paged      *pagedRunMap // else: runs and rev frozen (runmapfile.go)
}

// makePlan runs pass 1 over every old shard and assigns every run its new
// shard and number: in the compact run map (runmap.go) when the runs fit
// its share of the budget and no plan file is made or applied (which read
// the spill maps), else through the spill maps.
//
// Its progress ("plan", in old shards) starts at 0 and reaches the last
// shard only when makePlan returns (planDone), so that the time progress
// shows for the phase is the time the report gives it: numbering the runs
// and freezing the run map come after the last shard is read.
func (r *resharder) makePlan(ctx context.Context) (*plan, error) {
	var err error
	r.progress("plan", 0, int64(r.oldN))
	if r.tails == nil { // identify (apply.go) may have read them already
		if r.tails, err = logTails(ctx, r.fs, r.dir, r.oldN); err != nil {
			return nil, err
		}
	}
	if !r.opts.MakePlan && r.opts.Plan == nil {
		c := newRunMap(r.oldN, r.newN, r.budget/mapShare*compactShares)
		p, err := r.passOne(ctx, c, nil)
		if err == nil {
			err = c.assign(p)
		}
		if err == nil {
			p.compact = c
			p.runs, p.rev = r.newMap("runs"), r.newMap("rev") // empty: Spilled says false
			return p, nil
		}
		if !errors.Is(err, errMapFull) {
			return nil, err
		}
	}
	keys := r.newMap("plan")
	defer keys.Close()
	p, err := r.passOne(ctx, nil, keys)
	if err != nil {
		return nil, err
	}
	if p, err = r.assignSpilled(p, keys); err != nil {
		return nil, err
	}
	// The rewrite looks runs up from a paged copy of the run map and its
	// reverse (runmapfile.go), with the reverse's share of the budget for
	// its cache (its frames are on the Go heap, under the soft limit);
	// the run map stays for the plan file. A page the cache does not hold
	// is one read, mostly from the OS page cache.
	if err := r.fs.MkdirAll(r.scratch, 0o755); err != nil {
		return nil, err
	}
	if p.paged, err = freezeRunMap(r.fs, r.fs.PathJoin(r.scratch, "runmap"), p, runPageSize, max(r.budget/mapShare, 1)); err != nil {
		return nil, err
	}
	if err := p.rev.Close(); err != nil {
		return nil, err
	}
	return p, nil
}

// passOne reads every old shard's run entries into the compact map c, or
// (c nil) as plan keys into keys, and returns the plan's counts so far.
func (r *resharder) passOne(ctx context.Context, c *runMap, keys *spillMap) (*plan, error) {
	p := &plan{oldN: r.oldN, newN: r.newN, byState: map[model.RunState]int64{},
		nextRun: make([]model.RunNo, r.newN), shardRuns: make([]int64, r.newN)}
	for i := range r.oldN {
		src, err := openSource(r.fs, r.dir, i, r.oldN, r.tails)
		if err != nil {
			return nil, err
		}
		h := src.Header()
		if h.NextRun > 0 && h.NextRun-1 > p.maxUsed {
			p.maxUsed = h.NextRun - 1
		}
		p.storeGen = max(p.storeGen, h.Gen)
		p.now = max(p.now, h.Now)
		p.created = h.Created
		raw, err := src.RawBytes()
		if err != nil {
			_ = src.Close()
			return nil, err
		}
		p.rawBytes += int64(raw)
		if c != nil && h.NextRun > 0 {
			c.reserve(i, int64(h.NextRun-1))
		}
		err = src.RunEntries(ctx, func(no model.RunNo, run model.RunEntry) error {
			if want := model.ShardOf(run.WorkflowID, r.oldN); want != i {
				return fmt.Errorf("shard %d holds run %d of workflow %q, which belongs on shard %d: the directory is damaged; run `fusee verify %s` for the full picture and restore it from a backup",
					i, no, run.WorkflowID, want, r.dir)
			}
			j := model.ShardOf(run.WorkflowID, r.newN)
			p.byState[run.State]++
			if c != nil {
				return c.add(i, no, j, &run)
			}
			e := planEntry{State: run.State, Gen: run.Gen, Renumbered: run.Renumbered, WorkflowID: run.WorkflowID}
			return keys.Put(planKey(j, no, unfinished(run.State), i), encodePlanValue(e))
		})
		if cerr := src.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if i+1 < r.oldN {
			r.progress("plan", int64(i+1), int64(r.oldN))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.maxUsed >= model.MaxRunNo-1 {
		return nil, fmt.Errorf("the old shards have used run numbers up to %d: no room to renumber", p.maxUsed)
	}
	return p, nil
}

// assignSpilled assigns the numbers from the plan keys pass 1 put in keys
// (docs/reshard.md §2), into the spill maps runs and rev.
func (r *resharder) assignSpilled(p *plan, keys *spillMap) (*plan, error) {
	p.runs = r.newMap("runs")
	p.rev = r.newMap("rev")
	losers := r.newMap("losers")
	defer losers.Close()
	put := func(oldShard int, oldNo model.RunNo, m mapped) error {
		if err := p.runs.Put(runMapKey(oldShard, oldNo), encodeMapped(m)); err != nil {
			return err
		}
		p.shardRuns[m.Shard]++
		if oldShard != m.Shard {
			p.moved++
		}
		return p.rev.Put(runMapKey(m.Shard, m.No), runMapKey(oldShard, oldNo))
	}
	lastShard, lastNo := -1, model.RunNo(0)
	err := keys.Each(nil, func(k, v []byte) error {
		j := int(binary.BigEndian.Uint16(k))
		no := model.RunNo(binary.BigEndian.Uint64(k[2:]))
		i := int(binary.BigEndian.Uint16(k[11:]))
		e := decodePlanValue(v)
		if j == lastShard && no == lastNo {
			return losers.Put(loserKey(j, e.Gen, no, i), v)
		}
		lastShard, lastNo = j, no
		p.nextRun[j] = max(p.nextRun[j], no+1)
		return put(i, no, mapped{Shard: j, No: no, planEntry: e})
	})
	if err != nil {
		return nil, err
	}
	next := make([]model.RunNo, r.newN)
	for j := range next {
		next[j] = p.maxUsed + 1
	}
	err = losers.Each(nil, func(k, v []byte) error {
		j := int(binary.BigEndian.Uint16(k))
		no := model.RunNo(binary.BigEndian.Uint64(k[6:]))
		i := int(binary.BigEndian.Uint16(k[14:]))
		e := decodePlanValue(v)
		newNo := next[j]
		next[j]++
		e.Renumbered = true
		p.renumbered++
		m := mapped{Shard: j, No: newNo, planEntry: e}
		if unfinished(e.State) {
			if err := r.rep.Renumbered.add(renumberedOrder(j, uint64(newNo)), renumberedRun(e.WorkflowID, i, no, m)); err != nil {
				return err
			}
		}
		return put(i, no, m)
	})
	if err != nil {
		return nil, err
	}
	// From here the run map and its reverse are only read, by several
	// goroutines at once.
	if err := p.runs.Settle(); err != nil {
		return nil, err
	}
	if err := p.rev.Settle(); err != nil {
		return nil, err
	}
	for j := range p.nextRun {
		// Every new shard continues above every number any old shard
		// used, so a reference that a renumbering could have made
		// ambiguous never names a future run.
		p.nextRun[j] = max(p.nextRun[j], next[j], 1)
	}
	return p, nil
}

// lookup returns where the old run (shard, no) went.
func (p *plan) lookup(shard int, no model.RunNo) (mapped, bool, error) {
	if p.compact != nil {
		m, ok := p.compact.lookup(shard, no)
		return m, ok, nil
	}
	return p.paged.lookup(shard, no)
}

// identityAt is the identity of the run now at new (shard, no).
func (p *plan) identityAt(shard int, no model.RunNo) (uint64, bool, error) {
	if p.compact != nil {
		id, ok := p.compact.identityAt(shard, no)
		return id, ok, nil
	}
	return p.paged.identityAt(shard, no)
}

// A lookupCache remembers the last few lookups of one user of the plan
// (one goroutine): references mostly name the run being rewritten or its
// neighbours, and a run map lookup hashes its key and decodes a value.
// The run map does not change once the plan is made, so a remembered
// answer stays right.
type lookupCache struct {
	p     *plan
	slots [256]struct {
		used  bool
		key   model.RunRef
		m     mapped
		found bool
	}
}

func (c *lookupCache) lookup(shard int, no model.RunNo) (mapped, bool, error) {
	s := &c.slots[(uint64(no)*31+uint64(shard))%uint64(len(c.slots))]
	key := model.RunRef{Shard: shard, Run: no}
	if s.used && s.key == key {
		return s.m, s.found, nil
	}
	m, ok, err := c.p.lookup(shard, no)
	if err != nil {
		return m, ok, err
	}
	s.used, s.key, s.m, s.found = true, key, m, ok
	return m, ok, nil
}

func (p *plan) Close() {
	if p.paged != nil {
		_ = p.paged.Close()
	}
	if p.runs != nil {
		p.runs.Close()
	}
	if p.rev != nil {
		p.rev.Close()
	}
}

// renumberedRun is the report's line for an unfinished run that old shard
// oldShard's run oldNo became m.
func renumberedRun(wf string, oldShard int, oldNo model.RunNo, m mapped) RenumberedRun {
	return RenumberedRun{WorkflowID: wf, OldShard: oldShard, OldRun: uint64(oldNo), NewShard: m.Shard, NewRun: uint64(m.No),
		OldKey: fmt.Sprintf("%s/%d/", wf, oldNo), NewKey: fmt.Sprintf("%s/%d/", wf, m.No)}
}
