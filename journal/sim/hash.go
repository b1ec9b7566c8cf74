package sim

// Every choice the simulator makes — a workflow's script, a delay, a
// recorded random value, whether an acknowledgement is lost — comes from
// hashing the workload seed with logical names (workflow ID, generation,
// journal position, a label). Nothing is drawn from a shared random
// stream, so the order in which the engine happens to look at runs, and
// the shard or run number a run landed on, can never change a decision.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hasher is a value-typed FNV-1a accumulator finished with a 64-bit mixer;
// chaining methods allocates nothing.
type hasher struct{ h uint64 }

func newHasher(seed uint64) hasher { return hasher{fnvOffset}.u64(seed) }

func (h hasher) u64(v uint64) hasher {
	for i := 0; i < 8; i++ {
		h.h ^= v & 0xff
		h.h *= fnvPrime
		v >>= 8
	}
	return h
}

func (h hasher) str(s string) hasher {
	for i := 0; i < len(s); i++ {
		h.h ^= uint64(s[i])
		h.h *= fnvPrime
	}
	// A terminator keeps ("ab","c") apart from ("a","bc").
	h.h ^= 0xff
	h.h *= fnvPrime
	return h
}

// sum finishes the hash (the murmur3 fmix64 finalizer).
func (h hasher) sum() uint64 {
	x := h.h
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb93fe53a87cb
	x ^= x >> 33
	return x
}

// pick returns a value in [0, n) from a hash.
func pick(h uint64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(h % uint64(n))
}

// between returns a value in [lo, hi] from a hash.
func between(h uint64, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + int64(h%uint64(hi-lo+1))
}
