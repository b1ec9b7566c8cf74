package idcodec

import "unicode/utf16"

const (
	fnvOffset64 uint64 = 0xcbf29ce484222325
	fnvPrime64  uint64 = 0x00000100000001b3
)

// Hash64 is FNV-1a 64 over the UTF-16 code units of s, finished with
// murmur3's fmix64. Each code unit is XORed in whole (not byte by byte),
// exactly as Java's `h ^= s.charAt(i)` does; characters outside the BMP
// contribute their two surrogate halves. The result is returned as the
// signed value Java holds in a long.
func Hash64(s string) int64 {
	h := fnvOffset64
	for _, r := range s {
		if r < 0x10000 {
			h ^= uint64(r)
			h *= fnvPrime64
			continue
		}
		hi, lo := utf16.EncodeRune(r)
		h ^= uint64(hi)
		h *= fnvPrime64
		h ^= uint64(lo)
		h *= fnvPrime64
	}
	return int64(fmix64(h))
}

// fmix64 is murmur3's 64-bit finalizer; Go's >> on uint64 is the logical
// shift Java writes as >>>.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// FloorMod is Java's Math.floorMod(long, int): the remainder with the sign
// of the divisor, so a negative hash still lands in [0, n).
func FloorMod(x int64, n int64) int64 {
	m := x % n
	if m != 0 && (m < 0) != (n < 0) {
		m += n
	}
	return m
}

// ShardFor is the shard a new id with this ulid lands on among n shards:
// 0 when n <= 1, otherwise FloorMod(Hash64(ulid), n). It is the only copy of
// the formula: model.ShardOf (journal/model) places workflow IDs with it.
func ShardFor(ulid string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(FloorMod(Hash64(ulid), int64(n)))
}
