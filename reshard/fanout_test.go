package reshard

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
)

// TestPairFanoutReusesItsBatches: each consumer sees every pair, in
// order, whatever batches went round before, and the fanouts of stores
// written one after another take their batches from the ones before
// (pairBatches) instead of making fanoutBatches new ones each: twenty
// fanouts allocate less than what four would make fresh. (The garbage
// collector may empty the pool now and then; not sixteen times in this.)
func TestPairFanoutReusesItsBatches(t *testing.T) {
	const fanouts, pairs = 20, 40000 // about 3 MiB of pairs: every batch fills
	val := bytes.Repeat([]byte("v"), 64)
	run := func(round int) {
		var seen [2]int
		consumer := func(i int) func(k, v []byte) error {
			return func(k, v []byte) error {
				n := seen[i]
				seen[i]++
				if binary.BigEndian.Uint32(k[:4]) != uint32(round) || binary.BigEndian.Uint64(k[4:]) != uint64(n) || !bytes.Equal(v, val) {
					return fmt.Errorf("round %d: consumer %d's pair %d is %x=%q", round, i, n, k, v)
				}
				return nil
			}
		}
		f := newPairFanout(consumer(0), consumer(1))
		var k [12]byte
		binary.BigEndian.PutUint32(k[:4], uint32(round))
		for n := range pairs {
			binary.BigEndian.PutUint64(k[4:], uint64(n))
			if err := f.add(k[:], val); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.finish(); err != nil {
			t.Fatal(err)
		}
		if seen != [2]int{pairs, pairs} {
			t.Fatalf("round %d: the consumers saw %v pairs, want %d each", round, seen, pairs)
		}
	}
	run(0) // the pool's first batches
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for round := 1; round <= fanouts; round++ {
		run(round)
	}
	runtime.ReadMemStats(&after)
	b := newPairBatch()
	fresh := fanoutBatches * (cap(b.buf) + cap(b.ends)*8) // a fanout's new batches
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d fanouts allocated %d KiB; a fanout's new batches are %d KiB", fanouts, got>>10, fresh>>10)
	if testtier.Race {
		return // under the race detector sync.Pool drops a quarter of what it is given, on purpose
	}
	if got > uint64(4*fresh) {
		t.Errorf("%d fanouts allocated %d MiB, more than 4 fanouts' new batches (%d MiB): the batches are not reused", fanouts, got>>20, 4*fresh>>20)
	}
}
