package check

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
	"pgregory.net/rapid"
)

// verifyWith runs verify over w with references resolved by the sorted
// join or, with point set, by a point lookup as each run passes.
func verifyWith(tb testing.TB, w *view, point bool) []Finding {
	tb.Helper()
	w.pointRefs = point
	var out []Finding
	if _, err := w.verify(context.Background(), func(f Finding) error { out = append(out, f); return nil }); err != nil {
		tb.Fatal(err)
	}
	return out
}

// dangle removes runs and points references at runs that are gone, at
// numbers never issued, at NoSuchRun and at shards that do not exist, so
// that every resolution the join can give occurs.
func dangle(rt *rapid.T, w *world, runs []ident) {
	for i := range rapid.IntRange(1, 8).Draw(rt, "dangles") {
		x := rapid.SampledFrom(runs).Draw(rt, "drun")
		s, r := w.shard(x), w.run(x)
		if r == nil {
			continue
		}
		label := "g" + itoa(i)
		switch rapid.IntRange(0, 3).Draw(rt, label) {
		case 0: // the run is gone: what referred to it dangles
			delete(s.Runs, r.No)
		case 1, 2: // a reference elsewhere
			h := history(s, r)
			if len(h) == 0 {
				continue
			}
			rec := &h[rapid.IntRange(0, len(h)-1).Draw(rt, label+"-rec")]
			ref := model.RunRef{Shard: rapid.IntRange(-1, w.n).Draw(rt, label+"-shard"),
				Run: rapid.SampledFrom([]model.RunNo{0, 1, 2, 3, 5, 8, 13, 40, 1000, model.NoSuchRun}).Draw(rt, label+"-no")}
			switch rapid.IntRange(0, 3).Draw(rt, label+"-field") {
			case 0:
				rec.By = ref
			case 1:
				rec.Parent = model.ParentRef{Shard: ref.Shard, Run: ref.Run, Pos: rapid.Uint32Range(0, 6).Draw(rt, label+"-pos")}
			case 2:
				rec.Pred = ref
			case 3:
				rec.Next = ref
			}
		case 3: // a stored message's sender elsewhere
			for _, m := range s.Outbox {
				m.From.Run = rapid.SampledFrom([]model.RunNo{0, 1, 2, 7, 1000, model.NoSuchRun}).Draw(rt, label+"-from")
				break
			}
		}
	}
}

// The sorted join of references finds exactly what resolving each
// reference by a point lookup as its run passes finds, on random
// workloads with dangling, unissued, reserved and bad-shard references,
// whether the join stays in memory or spills.
func TestRefJoinMatchesPointLookups(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<20).Draw(rt, "seed")
		w := randomWorlds(t, seed, rapid.IntRange(20, 200).Draw(rt, "steps"), rapid.IntRange(1, 5).Draw(rt, "shards"))[0]
		runs := w.idents()
		if len(runs) == 0 {
			return
		}
		if rapid.Bool().Draw(rt, "damaged") {
			damage(rt, w, runs)
		}
		dangle(rt, w, runs)
		opts := Options{Memory: rapid.SampledFrom([]int64{0, 1, 2048}).Draw(rt, "budget"), Scratch: t.TempDir()}
		st := w.state()
		want := verifyWith(t, st.view(opts), true)
		got := verifyWith(t, st.view(opts), false)
		if !reflect.DeepEqual(want, got) {
			rt.Fatalf("verify differs:\npoint lookups: %v\nsorted join:   %v", want, got)
		}
		// and both find what the whole-memory verifier finds (runs gone
		// leave index entries with no run: the index merge's lone IDs)
		whole, err := oldVerifyContext(context.Background(), st)
		if err != nil {
			rt.Fatal(err)
		}
		if len(whole)+len(got) > 0 && !reflect.DeepEqual(whole, got) {
			rt.Fatalf("verify differs:\nwhole memory: %v\nsorted join:  %v", whole, got)
		}
	})
}

// The property test above can fail: a join that dropped the references
// it deferred would find no dangling reference where lookups find one.
func TestRefJoinSeesDangling(t *testing.T) {
	w := randomWorlds(t, 3, 150, 3)[0]
	var gone model.RunNo
	for _, s := range w.shards {
		for _, no := range sortedKeys(s.Runs) {
			if r := s.Runs[no]; r.Gen > 1 && gone == 0 {
				gone = r.No
				delete(s.Runs, no) // its successor's pred and its predecessor's next dangle
			}
		}
	}
	if gone == 0 {
		t.Fatal("the workload has no second generation to remove")
	}
	st := w.state()
	fs := verifyWith(t, st.view(Options{Memory: 1, Scratch: t.TempDir()}), false)
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Kind == KindRefDangling }) {
		t.Errorf("removing run %d left no dangling reference: %v", gone, fs)
	}
	if want := verifyWith(t, st.view(Options{}), true); !reflect.DeepEqual(want, fs) {
		t.Errorf("verify differs:\npoint lookups: %v\nsorted join:   %v", want, fs)
	}
}
