package journal

import (
	"hash/maphash"
	"math/bits"
)

// keyFilter is an in-memory Bloom filter over the string keys an evicting
// shard has written or will write (workflow IDs of its ID index, message
// IDs of its dedup set), so that a lookup of a key the store cannot hold
// is answered without reading the store. Most lookups of a running engine
// are such misses: every new workflow ID is looked up before its first
// run starts, every message ID before its first delivery. A "maybe" is
// then read from the store as before; a "no" is exact.
//
// It grows by adding parts, each twice the previous one's capacity, so it
// costs about 1.5 bytes per key (12 bits, a 1/300 false-positive rate per
// part) whatever the run count: 30 MB for 10M runs' IDs and messages, a
// small fraction of what those runs occupy on disk. It never shrinks (a
// deleted key stays a "maybe").
type keyFilter struct {
	seed  maphash.Seed
	parts []filterPart
}

// filterPart is a blocked Bloom filter: each key sets filterProbes bits
// within one 512-bit block (one cache line).
type filterPart struct {
	blocks [][8]uint64
	n, cap int
}

const (
	filterFirstCap   = 1 << 14 // keys in the first part
	filterBitsPerKey = 12
	filterProbes     = 8
)

func newKeyFilter() *keyFilter { return &keyFilter{seed: maphash.MakeSeed()} }

func newFilterPart(capacity int) filterPart {
	nb := (capacity*filterBitsPerKey + 511) / 512
	return filterPart{blocks: make([][8]uint64, nb), cap: capacity}
}

// add records key as possibly present.
func (f *keyFilter) add(key string) {
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].cap {
		c := filterFirstCap
		if len(f.parts) > 0 {
			c = 2 * f.parts[len(f.parts)-1].cap
		}
		f.parts = append(f.parts, newFilterPart(c))
	}
	p := &f.parts[len(f.parts)-1]
	h := maphash.String(f.seed, key)
	b := &p.blocks[blockOf(h, len(p.blocks))]
	for i := range filterProbes {
		bit := (h >> (9 * i)) & 511 // 8 probes of 9 bits: 72 bits from a rotating 64
		if i == 7 {
			bit = bits.RotateLeft64(h, 13) & 511
		}
		b[bit>>6] |= 1 << (bit & 63)
	}
	p.n++
}

// mayHave reports whether key may have been added (false: it was not).
func (f *keyFilter) mayHave(key string) bool {
	h := maphash.String(f.seed, key)
	for pi := range f.parts {
		p := &f.parts[pi]
		b := &p.blocks[blockOf(h, len(p.blocks))]
		hit := true
		for i := range filterProbes {
			bit := (h >> (9 * i)) & 511
			if i == 7 {
				bit = bits.RotateLeft64(h, 13) & 511
			}
			if b[bit>>6]&(1<<(bit&63)) == 0 {
				hit = false
				break
			}
		}
		if hit {
			return true
		}
	}
	return false
}

// blockOf picks a key's block from its hash's high bits (the probes use
// the low ones).
func blockOf(h uint64, n int) int {
	hi, _ := bits.Mul64(bits.RotateLeft64(h, 32)^0x9e3779b97f4a7c15*h, uint64(n))
	return int(hi)
}
