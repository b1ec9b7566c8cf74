package extsort

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// BenchmarkSorter puts a reshard's keys (7 old shards to 12: runs of an
// entry and four records, 40% renumbered, and an index entry a run)
// through a sorter and reads every shard back, with the keys that come
// in order put in order or all put to be sorted; in memory and spilled.
func BenchmarkSorter(b *testing.B) {
	const oldN, newN, runs = 7, 12, 20000
	type key struct {
		j       int
		k       []byte
		no      model.RunNo // a run's entry: its records follow
		inOrder bool
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []key
	for i := range oldN {
		var wfs []string
		for no := range runs / oldN {
			j := rng.IntN(newN)
			n, kept := uint64(no*oldN+i+1), rng.IntN(10) >= 4
			if !kept {
				n = 1<<30 + rng.Uint64N(1<<30)
			}
			keys = append(keys, key{j: j, k: store.AppendRunKey(nil, model.RunNo(n)), no: model.RunNo(n), inOrder: kept})
			wfs = append(wfs, fmt.Sprintf("wf-%d", rng.Uint64()))
		}
		slices.Sort(wfs)
		for _, wf := range wfs {
			keys = append(keys, key{j: rng.IntN(newN), k: store.IndexKey(wf), inOrder: true})
		}
	}
	value := make([]byte, 100)
	for _, budget := range []int64{1 << 30, 4 << 20} {
		for _, inOrder := range []bool{false, true} {
			b.Run(fmt.Sprintf("budget=%d/inorder=%v", budget, inOrder), func(b *testing.B) {
				start := cpuTime()
				defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
				for range b.N {
					s := New(vfs.NewMem(), "/sort", newN, budget, 2)
					w := s.Writers(1)[0]
					for _, k := range keys {
						put := w.Put
						if inOrder && k.inOrder {
							put = w.PutInOrder
						}
						if err := put(k.j, k.k, value); err != nil {
							b.Fatal(err)
						}
						if k.no != 0 {
							for pos := range 4 {
								if err := put(k.j, store.AppendRecordKey(nil, k.no, uint32(pos)), value); err != nil {
									b.Fatal(err)
								}
							}
						}
					}
					if err := s.Settle(); err != nil {
						b.Fatal(err)
					}
					for j := range newN {
						if err := s.Each(j, func(k, v []byte) error { return nil }); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// cpuTime is the process's CPU time (user and system) so far, in ns: on
// a loaded machine, what a benchmark's wall time is not.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
