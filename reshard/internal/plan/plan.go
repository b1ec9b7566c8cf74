package plan

import (
	"encoding/binary"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
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

// Entry is what the plan knows of a run.
type Entry struct {
	State      model.RunState
	Gen        uint32
	Renumbered bool // already renumbered by an earlier reshard
	WorkflowID string
}

func encodePlanValue(e Entry) []byte {
	b := []byte{byte(e.State), 0}
	if e.Renumbered {
		b[1] = 1
	}
	b = binary.BigEndian.AppendUint32(b, e.Gen)
	return append(b, e.WorkflowID...)
}

func decodePlanValue(v []byte) Entry {
	return Entry{State: model.RunState(v[0]), Renumbered: v[1] == 1,
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

// decodeRunMapKey is runMapKey's (shard, number).
func decodeRunMapKey(k []byte) (int, model.RunNo) {
	return int(binary.BigEndian.Uint16(k)), model.RunNo(binary.BigEndian.Uint64(k[2:]))
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

func encodeMapped(m Mapped) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(m.Shard))
	b = binary.BigEndian.AppendUint64(b, uint64(m.No))
	return append(b, encodePlanValue(m.Entry)...)
}

func decodeMapped(v []byte) Mapped {
	return Mapped{Shard: int(binary.BigEndian.Uint16(v)), No: model.RunNo(binary.BigEndian.Uint64(v[2:])),
		Entry: decodePlanValue(v[10:])}
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
	runs       *store.SpillMap // run map: old (shard, number) -> Mapped (the plan file reads it)
	rev        *store.SpillMap // reverse: new (shard, number) -> old (shard, number); closed once paged
	compact    *runMap         // the run map when it fits the budget
	paged      *pagedRunMap    // else: runs and rev frozen (runmapfile.go)
}

// assignSpilled assigns the numbers from the plan keys pass 1 put in keys
// (docs/reshard.md §2), into the spill maps runs and rev.
func assignSpilled(p *Plan, keys *store.SpillMap, newMap func(name string) *store.SpillMap) (*Plan, error) {
	p.runs = newMap("runs")
	p.rev = newMap("rev")
	losers := newMap("losers")
	defer losers.Close()
	put := func(oldShard int, oldNo model.RunNo, m Mapped) error {
		if err := p.runs.Put(runMapKey(oldShard, oldNo), encodeMapped(m)); err != nil {
			return err
		}
		p.ShardRuns[m.Shard]++
		if oldShard != m.Shard {
			p.Moved++
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
		p.NextRun[j] = max(p.NextRun[j], no+1)
		return put(i, no, Mapped{Shard: j, No: no, Entry: e})
	})
	if err != nil {
		return nil, err
	}
	next := make([]model.RunNo, p.newN)
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
		p.Renumbered++
		return put(i, no, Mapped{Shard: j, No: newNo, Entry: e})
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
	for j := range p.NextRun {
		// Every new shard continues above every number any old shard
		// used, so a reference that a renumbering could have made
		// ambiguous never names a future run.
		p.NextRun[j] = max(p.NextRun[j], next[j], 1)
	}
	return p, nil
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

// A Cache (NewCache) remembers the last few lookups of one user of the plan
// (one goroutine): references mostly name the run being rewritten or its
// neighbours, and a run map lookup hashes its key and decodes a value.
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

func (p *Plan) Close() {
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
