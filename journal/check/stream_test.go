package check

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// The streaming verify and dump give exactly what the whole-memory ones
// gave (oracle_test.go) on random workloads, damaged or not, whatever
// their budget: 1 byte spills every map at its first entry.
func TestStreamingMatchesWholeMemory(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<20).Draw(rt, "seed")
		w := randomWorlds(t, seed, rapid.IntRange(20, 200).Draw(rt, "steps"), rapid.IntRange(1, 5).Draw(rt, "shards"))[0]
		if runs := w.idents(); len(runs) > 0 && rapid.Bool().Draw(rt, "damaged") {
			damage(rt, w, runs)
		}
		opts := Options{Memory: rapid.SampledFrom([]int64{0, 1, 2048}).Draw(rt, "budget")}
		st := w.state()
		want, err := oldVerifyContext(ctx, st)
		if err != nil {
			rt.Fatal(err)
		}
		var got []Finding
		if _, err := st.view(opts).verify(ctx, func(f Finding) error { got = append(got, f); return nil }); err != nil {
			rt.Fatal(err)
		}
		if len(want) != 0 || len(got) != 0 {
			if !reflect.DeepEqual(want, got) {
				rt.Fatalf("verify differs:\nwhole memory: %v\nstreaming:    %v", want, got)
			}
		}
		for _, phys := range []bool{false, true} {
			var a, b bytes.Buffer
			if err := oldWriteDumpContext(ctx, &a, w.shards, DumpOptions{Physical: phys}); err != nil {
				rt.Fatal(err)
			}
			if err := shardsView(w.shards, opts).dump(ctx, &b, phys); err != nil {
				rt.Fatal(err)
			}
			if a.String() != b.String() {
				rt.Fatalf("dump (physical %v) differs: %s", phys, firstDiff(a.String(), b.String()))
			}
		}
	})
}
