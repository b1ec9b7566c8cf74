package check

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/sim"
	"pgregory.net/rapid"
)

// The streaming verify and dump give exactly what the whole-memory ones
// gave (oracle_test.go) on random workloads, damaged or not, whatever
// their budget: 1 byte spills every map at its first entry. In the quick
// tier, fewer of rapid's cases (testtier.Main).
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

// On a generated directory with a log tail, streaming it from disk (Dir:
// its stores read with the tail as an overlay, point lookups included)
// gives what the same checks give on its state recovered whole (Load).
func TestDirMatchesLoadedState(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	if _, err := sim.Generate(ctx, vfs.Default, dir, sim.GenOptions{Shards: 3, Runs: 600, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	st, err := Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(ctx, vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	opts := Options{Memory: 1, Scratch: t.TempDir()} // every map spills
	var got []Finding
	if _, err := d.Verify(ctx, opts, func(f Finding) error { got = append(got, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := Verify(st); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
		t.Errorf("verify differs:\nloaded:   %v\nstreamed: %v", want, got)
	}
	for _, phys := range []bool{false, true} {
		var a, b bytes.Buffer
		if err := WriteDump(&a, st.Shards, DumpOptions{Physical: phys}); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteDump(ctx, &b, DumpOptions{Physical: phys, Options: opts}); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("dump (physical %v) differs: %s", phys, firstDiff(a.String(), b.String()))
		}
	}
	want := Inspect(st)
	sum, err := d.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sum, want) {
		t.Errorf("inspect differs:\nloaded:   %+v\nstreamed: %+v", want, sum)
	}
}
