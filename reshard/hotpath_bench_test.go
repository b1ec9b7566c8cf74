package reshard

// Benchmarks of reshard's hot paths, one step each, on the records and
// runs of a small generated directory: what a profile of a whole reshard
// (`fusee reshard --cpuprofile`) points at, measurable alone.
//
//	go test -run '^$' -bench 'Record|Raw|ShardOf|Digest|StoreWriter|Plan' ./reshard/

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

const hotShards, hotRuns = 4, 2000

var hot struct {
	once sync.Once
	dir  string
	runs []*model.Run
	recs []model.Record
	enc  [][]byte
	err  error
}

// hotData generates the directory once per process and reads its runs.
func hotData(b *testing.B) (string, []*model.Run, []model.Record, [][]byte) {
	hot.once.Do(func() {
		base, err := os.MkdirTemp("", "fusee-hot-")
		if err != nil {
			hot.err = err
			return
		}
		hot.dir = filepath.Join(base, "src")
		if _, err := sim.Generate(context.Background(), vfs.Default, hot.dir, sim.GenOptions{Shards: hotShards, Runs: hotRuns, Seed: 1}); err != nil {
			hot.err = err
			return
		}
		tails, _, err := logTails(context.Background(), vfs.Default, hot.dir, hotShards, nil)
		if err != nil {
			hot.err = err
			return
		}
		for i := range hotShards {
			src, err := openSource(vfs.Default, hot.dir, i, hotShards, tails, nil, nil)
			if err != nil {
				hot.err = err
				return
			}
			hot.err = src.Runs(context.Background(), func(r *model.Run, _ []model.Record) error {
				hot.runs = append(hot.runs, r)
				for k := range r.Journal {
					hot.recs = append(hot.recs, r.Journal[k])
					hot.enc = append(hot.enc, model.EncodeRecord(nil, &r.Journal[k]))
				}
				return nil
			})
			if cerr := src.Close(); hot.err == nil {
				hot.err = cerr
			}
			if hot.err != nil {
				return
			}
		}
	})
	if hot.err != nil {
		b.Fatal(hot.err)
	}
	return hot.dir, hot.runs, hot.recs, hot.enc
}

func encodedBytes(enc [][]byte) int64 {
	var n int64
	for _, e := range enc {
		n += int64(len(e))
	}
	return n
}

func BenchmarkRecordDecode(b *testing.B) {
	_, _, _, enc := hotData(b)
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range enc {
			if _, err := model.DecodeRecord(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkRecordEncode(b *testing.B) {
	_, _, recs, enc := hotData(b)
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		for k := range recs {
			buf = model.EncodeRecord(buf[:0], &recs[k])
		}
	}
}

// BenchmarkRecordRefRewrite is what the rewrite does to every record:
// map its references (here to themselves, shard moved) and stamp the
// token's generation.
func BenchmarkRecordRefRewrite(b *testing.B) {
	_, _, recs, enc := hotData(b)
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	mapper := func(_ model.RefField, ref model.RunRef) model.RunRef {
		return model.RunRef{Shard: ref.Shard + 1, Run: ref.Run}
	}
	for b.Loop() {
		for _, rec := range recs {
			rec.MapRefs(0, mapper)
			setTokenGen(&rec, 2)
		}
	}
}

func BenchmarkShardOf(b *testing.B) {
	_, runs, _, _ := hotData(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range runs {
			_ = model.ShardOf(r.WorkflowID, 12)
		}
	}
}

// BenchmarkDigestRun is the renumbering-invariant digest of every run
// (canonical bytes and two hashes), with identities from a map.
func BenchmarkDigestRun(b *testing.B) {
	_, runs, _, enc := hotData(b)
	ids := map[model.RunRef]*model.Run{}
	for _, r := range runs {
		ids[model.RunRef{Shard: model.ShardOf(r.WorkflowID, hotShards), Run: r.No}] = r
	}
	c := &canon{id: func(ref model.RunRef) (uint64, bool, error) {
		_, ok := ids[ref]
		return plan.RunKey(ref.Shard, ref.Run), ok, nil
	}}
	d, _ := newDigestPair()
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range runs {
			c.run(d, model.ShardOf(r.WorkflowID, hotShards), r, nil)
		}
	}
}

// BenchmarkStoreWriter builds a store from every run's keys, in order.
func BenchmarkStoreWriter(b *testing.B) {
	_, runs, _, _ := hotData(b)
	var keys, vals [][]byte
	var size int64
	for _, r := range runs {
		_ = store.AppendRunKeys(r, func(k, v []byte) error {
			keys, vals = append(keys, append([]byte(nil), k...)), append(vals, append([]byte(nil), v...))
			size += int64(len(k) + len(v))
			return nil
		})
	}
	// Runs of different shards share numbers: keep the first of each key.
	sortedKeys(keys, vals)
	b.SetBytes(size)
	b.ReportAllocs()
	out := b.TempDir()
	n := 0
	for b.Loop() {
		n++
		sw, err := store.NewStoreWriter(vfs.Default, filepath.Join(out, fmt.Sprint(n)))
		if err != nil {
			b.Fatal(err)
		}
		var last []byte
		for k := range keys {
			if last != nil && string(keys[k]) == string(last) {
				continue
			}
			last = keys[k]
			if err := sw.Add(keys[k], vals[k]); err != nil {
				b.Fatal(err)
			}
		}
		if err := sw.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

func sortedKeys(keys, vals [][]byte) {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	k2, v2 := make([][]byte, len(keys)), make([][]byte, len(vals))
	for i, j := range idx {
		k2[i], v2[i] = keys[j], vals[j]
	}
	copy(keys, k2)
	copy(vals, v2)
}

// BenchmarkPlan is pass 1 and the assignment: every old run entry read,
// keyed, sorted and numbered (shrink 4 -> 3), within the default budget.
func BenchmarkPlan(b *testing.B) {
	dir, runs, _, _ := hotData(b)
	b.ReportAllocs()
	for b.Loop() {
		r := &resharder{fs: vfs.Default, dir: dir, oldN: hotShards, newN: 3, budget: DefaultMemory,
			scratch: b.TempDir(), rep: memLists(&Report{})}
		p, err := r.makePlan(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if got := p.ShardRuns[0] + p.ShardRuns[1] + p.ShardRuns[2]; got != int64(len(runs)) {
			b.Fatalf("plan has %d runs, the directory %d", got, len(runs))
		}
		p.Close()
		r.releaseReadBuffers()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(runs)), "ns/run")
}

// BenchmarkRecordScan is what the byte-copy path does to every record
// instead of decoding it: check it field by field (model.ScanRecord).
func BenchmarkRecordScan(b *testing.B) {
	_, _, _, enc := hotData(b)
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range enc {
			if _, err := model.ScanRecord(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// hotRaw is every run of the hot directory as a RawRun.
func hotRaw(b *testing.B, runs []*model.Run) []*store.RawRun {
	out := make([]*store.RawRun, 0, len(runs))
	for _, r := range runs {
		rr := &store.RawRun{No: r.No, Entry: model.RunEntry{State: r.State, Gen: r.Gen, Status: r.Status,
			Started: r.Started, Finished: r.Finished, Records: uint32(len(r.Journal)), WorkflowID: r.WorkflowID, Type: r.Type}}
		for k := range r.Journal {
			p := model.EncodeRecord(nil, &r.Journal[k])
			h, err := model.ScanRecord(p)
			if err != nil {
				b.Fatal(err)
			}
			rr.Records, rr.Heads = append(rr.Records, p), append(rr.Heads, h)
		}
		out = append(out, rr)
	}
	return out
}

// BenchmarkRawRewrite is the byte-copy rewrite of every run (records
// with a reference decoded, mapped and encoded, the rest copied) into a
// put that keeps nothing.
func BenchmarkRawRewrite(b *testing.B) {
	_, runs, _, enc := hotData(b)
	raws := hotRaw(b, runs)
	mapper := func(_ model.RefField, ref model.RunRef) model.RunRef {
		return model.RunRef{Shard: ref.Shard + 1, Run: ref.Run}
	}
	rep := memLists(&Report{})
	w := &rawRewriter{mapper: mapper, gen: 2, counts: &rep.Counts, token: listToken(rep), put: func(int, []byte, []byte) error { return nil }}
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	for b.Loop() {
		memLists(rep) // the token changes of one pass
		for _, rr := range raws {
			if err := w.run(rr, 0, plan.Mapped{Shard: 1, No: rr.No}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDigestRawRun is BenchmarkDigestRun on runs read as bytes.
func BenchmarkDigestRawRun(b *testing.B) {
	_, runs, _, enc := hotData(b)
	raws := hotRaw(b, runs)
	ids := map[model.RunRef]uint64{}
	for _, r := range runs {
		s := model.ShardOf(r.WorkflowID, hotShards)
		ids[model.RunRef{Shard: s, Run: r.No}] = plan.RunKey(s, r.No)
	}
	c := &canon{id: func(ref model.RunRef) (uint64, bool, error) { id, ok := ids[ref]; return id, ok, nil }}
	d, _ := newDigestPair()
	b.SetBytes(encodedBytes(enc))
	b.ReportAllocs()
	for b.Loop() {
		for k, rr := range raws {
			c.rawRun(d, model.ShardOf(runs[k].WorkflowID, hotShards), rr)
		}
	}
}
