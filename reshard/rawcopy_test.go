package reshard

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// TestRawRewriteMatchesDecode: on random generated directories, every run
// rewritten by the byte-copy path (rawRewriter) and by the decode path
// (decode every record, rewrite its references and token generation,
// encode it again) under one random run map (references moved,
// renumbered, or left dangling) gives the same keys with the same bytes,
// and the same pending-token changes; and the digest of a run read as
// bytes equals the digest of the run decoded.
func TestRawRewriteMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var copied, rewritten, archives int
	for it := range 3 {
		shards, runs, seed := 1+rng.IntN(4), 150+rng.IntN(200), rng.Uint64()
		t.Run(fmt.Sprintf("%d-shards-%d-runs", shards, runs), func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "d")
			if _, err := sim.Generate(ctx, vfs.Default, dir, sim.GenOptions{Shards: shards, Runs: runs, Seed: seed}); err != nil {
				t.Fatal(err)
			}
			tails, _, err := logTails(ctx, vfs.Default, dir, shards, nil)
			if err != nil {
				t.Fatal(err)
			}
			moved := map[model.RunRef]model.RunRef{}
			mapper := func(_ model.RefField, ref model.RunRef) model.RunRef {
				if ref.Run == noSuchRun {
					return ref
				}
				n, ok := moved[ref]
				if !ok {
					n = model.RunRef{Shard: rng.IntN(9), Run: model.RunNo(1 + rng.IntN(1<<20))}
					if rng.IntN(8) == 0 {
						n = model.RunRef{Run: noSuchRun}
					}
					moved[ref] = n
				}
				return n
			}
			ids := func(ref model.RunRef) (uint64, bool, error) {
				n := mapper(0, ref)
				return uint64(n.Shard)<<48 | uint64(n.Run), n.Run != noSuchRun, nil
			}
			dDecoded, dRaw := newDigestPair()
			gen := uint64(2 + it)
			for i := range shards {
				src, err := openSource(vfs.Default, dir, i, shards, tails, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				type decoded struct {
					run     *model.Run
					archive []model.Record
				}
				var want []decoded
				var raws []*store.RawRun
				err = src.Runs(ctx, func(r *model.Run, a []model.Record) error {
					want = append(want, decoded{r, a})
					return nil
				})
				if err == nil {
					err = src.RawRuns(ctx, func(r *store.RawRun) error { raws = append(raws, r); return nil })
				}
				if cerr := src.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(raws) != len(want) {
					t.Fatalf("shard %d: %d runs as bytes, %d decoded", i, len(raws), len(want))
				}
				cd, cr := &canon{id: ids}, &canon{id: ids}
				for k, w := range want {
					rr := raws[k]
					m := plan.Mapped{Shard: rng.IntN(9), No: model.RunNo(1 + rng.IntN(1<<20))}
					m.Renumbered = rng.IntN(2) == 0
					cd.run(dDecoded, i, w.run, w.archive)
					cr.rawRun(dRaw, i, rr)

					// The decode path.
					wantKeys := map[string][]byte{}
					nr := *w.run
					nr.No, nr.Renumbered = m.No, m.Renumbered
					nr.Journal = mapRecords(w.run.Journal, i, mapper, gen)
					if err := store.AppendRunKeys(&nr, func(key, val []byte) error {
						wantKeys[string(key)] = slices.Clone(val)
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					if w.archive != nil {
						wantKeys[string(store.ArchiveKey(m.No))] = model.EncodeHistory(nil, mapRecords(w.archive, i, mapper, gen))
						archives++
					}
					wantTokens := tokenChanges(w.run, &nr)

					// The byte-copy path.
					gotKeys := map[string][]byte{}
					rep := memLists(&Report{})
					rw := &rawRewriter{mapper: mapper, gen: gen, counts: &rep.Counts, token: listToken(rep), put: func(shard int, key, val []byte) error {
						if shard != m.Shard {
							return fmt.Errorf("put to shard %d, want %d", shard, m.Shard)
						}
						gotKeys[string(key)] = slices.Clone(val)
						return nil
					}}
					if err := rw.run(rr, i, m); err != nil {
						t.Fatal(err)
					}
					for key, v := range wantKeys {
						if g, ok := gotKeys[key]; !ok || !bytes.Equal(g, v) {
							t.Fatalf("shard %d run %d key %x: byte copy %x (present %v), decode path %x", i, w.run.No, key, g, ok, v)
						}
					}
					if len(gotKeys) != len(wantKeys) {
						t.Fatalf("shard %d run %d: %d keys by byte copy, %d by decoding", i, w.run.No, len(gotKeys), len(wantKeys))
					}
					if got := rep.Tokens.All(); len(got) != len(wantTokens) || (len(wantTokens) > 0 && !slices.Equal(got, wantTokens)) {
						t.Fatalf("shard %d run %d: tokens %+v by byte copy, %+v by decoding", i, w.run.No, got, wantTokens)
					}
					for h := range rr.Heads {
						if rr.Heads[h].HasRefs() {
							rewritten++
						} else {
							copied++
						}
					}
				}
				if cd.err != nil || cr.err != nil {
					t.Fatal(cd.err, cr.err)
				}
			}
			if diff := dDecoded.diff(dRaw); diff != "" {
				t.Fatalf("digest of the decoded runs and of the runs as bytes differ: %s", diff)
			}
		})
	}
	if copied == 0 || rewritten == 0 || archives == 0 {
		t.Fatalf("the workloads did not exercise both paths: %d records copied, %d rewritten, %d archives", copied, rewritten, archives)
	}
}

func mapRecords(recs []model.Record, keyShard int, m model.RunMapper, gen uint64) []model.Record {
	out := make([]model.Record, len(recs))
	for k, rec := range recs {
		rec.MapRefs(keyShard, m)
		setTokenGen(&rec, gen)
		out[k] = rec
	}
	return out
}

// tokenChanges is what the report lists for a run's pending completions,
// from the decoded run before (old) and after (nr) its rewrite.
func tokenChanges(old, nr *model.Run) []TokenChange {
	if !plan.Unfinished(old.State) {
		return nil
	}
	done := map[uint32]bool{}
	for _, rec := range old.Journal {
		if rec.Kind == model.KindAsyncDone {
			done[rec.Ref] = true
		}
	}
	var out []TokenChange
	for k, rec := range old.Journal {
		if rec.Kind != model.KindAsync || rec.Token.Run == 0 || done[rec.Pos] {
			continue
		}
		out = append(out, TokenChange{WorkflowID: old.WorkflowID, Position: rec.Pos, Old: rec.Token.String(), New: nr.Journal[k].Token.String()})
	}
	return out
}

// TestRecycledRawRunsMatch: reading runs into the memory of runs given
// back (ShardReader.Recycle), as the rewrite does, gives every run as
// reading each into new memory does, on random generated directories
// with archives; and the memory is reused.
func TestRecycledRawRunsMatch(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	reused, archives := 0, 0
	for range 3 {
		eachGeneratedSource(t, 1+rng.IntN(3), 150+rng.IntN(200), rng.Uint64(), func(i int, src shardSource) {
			var fresh, recycled []store.RawRun
			seen := map[*store.RawRun]bool{}
			err := src.RawRuns(ctx, func(r *store.RawRun) error { fresh = append(fresh, cloneRawRun(r)); return nil })
			if err == nil {
				err = src.RawRuns(ctx, func(r *store.RawRun) error {
					if seen[r] {
						reused++
					}
					seen[r] = true
					recycled = append(recycled, cloneRawRun(r))
					src.Recycle(r)
					return nil
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fresh) != len(recycled) {
				t.Fatalf("shard %d: %d runs read fresh, %d into recycled runs", i, len(fresh), len(recycled))
			}
			for k := range fresh {
				if !reflect.DeepEqual(fresh[k], recycled[k]) {
					t.Fatalf("shard %d run %d: read fresh %+v, into a recycled run %+v", i, fresh[k].No, fresh[k], recycled[k])
				}
				if fresh[k].Archive != nil {
					archives++
				}
			}
		})
	}
	if reused == 0 || archives == 0 {
		t.Fatalf("no run was read into a recycled one (%d) or none had an archive (%d)", reused, archives)
	}
}

// eachGeneratedSource generates a directory of shards shards and runs
// runs from seed and calls fn with each shard's source, closed after.
func eachGeneratedSource(t *testing.T, shards, runs int, seed uint64, fn func(i int, src shardSource)) {
	dir := filepath.Join(t.TempDir(), "d")
	opts := sim.GenOptions{Shards: shards, Runs: runs, Seed: seed}
	if _, err := sim.Generate(context.Background(), vfs.Default, dir, opts); err != nil {
		t.Fatal(err)
	}
	eachSource(t, dir, shards, fn)
}

// eachSource calls fn with the source of each of dir's shards shards,
// closed after.
func eachSource(t *testing.T, dir string, shards int, fn func(i int, src shardSource)) {
	tails, _, err := logTails(context.Background(), vfs.Default, dir, shards, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range shards {
		src, err := openSource(vfs.Default, dir, i, shards, tails, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		fn(i, src)
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// cloneRawRun copies r's exported fields into memory of their own (nil
// for empty slices).
func cloneRawRun(r *store.RawRun) store.RawRun {
	c := store.RawRun{No: r.No, Entry: r.Entry, Heads: slices.Clip(append([]model.RecordHead(nil), r.Heads...))}
	for _, rec := range r.Records {
		c.Records = append(c.Records, bytes.Clone(rec))
	}
	if r.Archive != nil {
		c.Archive = bytes.Clone(r.Archive)
	}
	for _, a := range r.ArchiveRecords {
		c.ArchiveRecords = append(c.ArchiveRecords, store.ArchivedRecord{At: a.At, Rec: bytes.Clone(a.Rec), Head: a.Head})
	}
	return c
}

// TestRunEntryViewsMatch: the plan pass's entries viewed in the store's
// bytes (ShardReader.RunEntryViews) are the entries RunEntries decodes,
// and viewing them allocates at least one string a run fewer.
func TestRunEntryViewsMatch(t *testing.T) {
	ctx := context.Background()
	eachGeneratedSource(t, 2, 300, 11, func(i int, src shardSource) {
		var want, got []model.RunEntry
		err := src.RunEntries(ctx, func(_ model.RunNo, e model.RunEntry) error { want = append(want, e); return nil })
		if err == nil {
			err = src.RunEntryViews(ctx, func(_ model.RunNo, e model.RunEntry) error {
				e.WorkflowID, e.Type = strings.Clone(e.WorkflowID), strings.Clone(e.Type)
				got = append(got, e)
				return nil
			})
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("shard %d: %d entries viewed, %d decoded (or they differ)", i, len(got), len(want))
		}
		count := func(each func(context.Context, func(model.RunNo, model.RunEntry) error) error) float64 {
			return testing.AllocsPerRun(3, func() {
				if err := each(ctx, func(model.RunNo, model.RunEntry) error { return nil }); err != nil {
					t.Fatal(err)
				}
			})
		}
		if testtier.Race {
			return // the race detector's instrumentation allocates: no count to compare
		}
		if decoded, viewed := count(src.RunEntries), count(src.RunEntryViews); viewed > decoded-float64(len(want)) {
			t.Errorf("shard %d: viewing %d entries allocated %v times, decoding them %v", i, len(want), viewed, decoded)
		}
	})
}
