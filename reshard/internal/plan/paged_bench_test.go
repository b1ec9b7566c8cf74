package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// BenchmarkPagedLookup is Lookup on a paged plan (8 old shards of 100k
// run numbers, one in ten a hole, shrunk to 3) whose pages are all in
// its cache: the search within a page and the cache's locks, not the
// reads. Runs are looked up in a random order, as references are.
func BenchmarkPagedLookup(b *testing.B) {
	const oldN, newN, span = 8, 3, 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	var runs []passRunOf
	for i := range oldN {
		for no := model.RunNo(1); no <= span; no++ {
			if rng.IntN(10) == 0 {
				continue
			}
			runs = append(runs, passRunOf{shard: i, no: no, j: rng.IntN(newN),
				e: model.RunEntry{State: model.StateFinished, Gen: 1, WorkflowID: fmt.Sprintf("wf-%d-%d", i, no)}})
		}
	}
	s := NewPass(vfs.NewMem(), "scratch", oldN, newN, 0, false) // no allowance: paged
	defer s.Close()
	if err := passConcurrently(s, oldN, span, runs); err != nil {
		b.Fatal(err)
	}
	p, err := s.Assign(64 << 20)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if !p.Spilled() {
		b.Fatal("the plan is not paged")
	}
	order := rng.Perm(len(runs))
	b.ResetTimer()
	k := 0
	for b.Loop() {
		r := &runs[order[k%len(order)]]
		if _, ok, err := p.Lookup(r.shard, r.no); !ok || err != nil {
			b.Fatalf("run %d/%d: %v %v", r.shard, r.no, ok, err)
		}
		k++
	}
}
