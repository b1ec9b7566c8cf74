package reshard

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/fusee-dev/fusee/journal/model"
)

// The run map in memory. Every reference the rewrite and the digests
// meet is a run map lookup; through the spill map each one hashes a
// string key and decodes a value with its workflow ID. When the plan's
// runs (counted by pass 1) fit fastShares of the memory budget (about 600,000
// runs at the default budget), the run map and its reverse are
// typed maps instead, made at their full size at once: old (shard,
// number) -> new (shard, number, flag) and the run's identity hash, and
// new (shard, number) -> identity hash for the check. The spill maps then
// get nothing (unless a plan file is made or applied, which reads them),
// so memory stays within the budget either way; past the share the spill
// maps answer, and the answers are the same.

// fastShares is the part of the budget (in mapShare units) the typed run
// maps may hold.
const fastShares = 2

// fastEntryBytes is about what one run costs in peak RSS through the
// typed maps: about 56 bytes in both directions with the maps' own
// overhead, doubled because the garbage collector lets the heap grow to
// about twice what is live (at 1M runs, 8->16, the maps took the peak RSS
// from 184 to 286 MiB in a dry run).
const fastEntryBytes = 112

// fastEntry is where a run went: new run number (48 bits), new shard
// (10 bits) and the renumbered flag packed, and its identity.
type fastEntry struct {
	to uint64
	id uint64
}

// runKey packs a (shard, number) pair: numbers are below 2^48, shards
// below 2^10.
func runKey(shard int, no model.RunNo) uint64 { return uint64(shard)<<48 | uint64(no) }

// fastMaps is the typed run map and its reverse.
type fastMaps struct {
	runs map[uint64]fastEntry
	rev  map[uint64]uint64
}

// newFastMaps makes typed maps for runs runs, or returns nil if they
// would not fit budget.
func newFastMaps(runs, budget int64) *fastMaps {
	if runs*fastEntryBytes > budget {
		return nil
	}
	return &fastMaps{runs: make(map[uint64]fastEntry, runs), rev: make(map[uint64]uint64, runs)}
}

// add records that old (shard, no) went to m.
func (f *fastMaps) add(oldShard int, oldNo model.RunNo, m mapped, id uint64) {
	to := runKey(m.Shard, m.No)
	if m.Renumbered {
		to |= 1 << 63
	}
	f.runs[runKey(oldShard, oldNo)] = fastEntry{to: to, id: id}
	f.rev[runKey(m.Shard, m.No)] = id
}

func (f *fastMaps) lookup(shard int, no model.RunNo) (mapped, bool) {
	e, ok := f.runs[runKey(shard, no)]
	if !ok {
		return mapped{}, false
	}
	m := mapped{Shard: int(e.to >> 48 & 0x3ff), No: model.RunNo(e.to & (1<<48 - 1)), ID: e.id}
	m.Renumbered = e.to>>63 == 1
	return m, true
}

// identity is the hash that stands for a run's identity (workflow ID and
// generation) in the digests: the same for the same run whatever its
// shard and number.
func identity(seed maphash.Seed, wf string, gen uint32) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(wf)
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], gen)
	h.Write(b[:])
	return h.Sum64()
}
