package reshard

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/fusee-dev/fusee/journal"
)

// The run map in memory. Every reference the rewrite and the digests
// meet is a run map lookup; through the spill map each one hashes a
// string key and decodes a value with its workflow ID. While the plan is
// small enough (fastShares of the memory budget, which a million runs
// fit at the default budget) the plan keeps a second, typed copy: old
// (shard, number) -> new (shard, number, flag) and the run's identity
// hash, and new (shard, number) -> identity hash for the check. Past that
// share the typed maps are dropped, and lookups go to the spill map,
// which spills to its scratch store as before: memory stays bounded by
// the budget either way, and the answers are the same.

// fastShares is the part of the budget (in mapShare units) the typed run
// maps may hold.
const fastShares = 3

// fastEntryBytes is about what one run costs in the typed maps (both
// directions, with the maps' own overhead).
const fastEntryBytes = 64

// fastEntry is where a run went: new run number (48 bits), new shard
// (10 bits) and the renumbered flag packed, and its identity.
type fastEntry struct {
	to uint64
	id uint64
}

// runKey packs a (shard, number) pair: numbers are below 2^48, shards
// below 2^10.
func runKey(shard int, no journal.RunNo) uint64 { return uint64(shard)<<48 | uint64(no) }

// fastMaps is the typed copy of the run map and its reverse.
type fastMaps struct {
	runs   map[uint64]fastEntry
	rev    map[uint64]uint64
	budget int64 // entries left before the maps are dropped
}

func newFastMaps(budget int64) *fastMaps {
	return &fastMaps{runs: map[uint64]fastEntry{}, rev: map[uint64]uint64{}, budget: budget / fastEntryBytes}
}

// add records that old (shard, no) went to m; it reports false once the
// maps are past their budget (they are then dropped).
func (f *fastMaps) add(oldShard int, oldNo journal.RunNo, m mapped, id uint64) bool {
	if f.budget--; f.budget < 0 {
		return false
	}
	to := runKey(m.Shard, m.No)
	if m.Renumbered {
		to |= 1 << 63
	}
	f.runs[runKey(oldShard, oldNo)] = fastEntry{to: to, id: id}
	f.rev[runKey(m.Shard, m.No)] = id
	return true
}

func (f *fastMaps) lookup(shard int, no journal.RunNo) (mapped, bool) {
	e, ok := f.runs[runKey(shard, no)]
	if !ok {
		return mapped{}, false
	}
	m := mapped{Shard: int(e.to >> 48 & 0x3ff), No: journal.RunNo(e.to & (1<<48 - 1)), ID: e.id}
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
