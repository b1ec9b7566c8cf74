package check

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/sim"
)

// peakHeap runs f and returns the largest heap (live and not yet swept
// objects, runtime/metrics) sampled while it ran, above the heap before.
func peakHeap(t *testing.T, f func() error) uint64 {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			v := read()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	err := f()
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return max(peak, base) - base
}

// Verify, dump and inspect stay flat: on directories of 1,000 and 10,000
// runs, with a budget small enough that both spill, the peak heap of the
// larger is within a small factor of the smaller's, not ten times it.
func TestCommandsStayFlat(t *testing.T) {
	if testtier.Race {
		t.Skip("under -race pebble's block cache is Go heap and fills with the directory; .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("generates directories of 1k and 10k runs")
	}
	ctx := context.Background()
	opts := Options{Memory: 1 << 20, Scratch: t.TempDir()}
	cmds := []struct {
		name string
		run  func(d *Dir) error
	}{
		{"verify", func(d *Dir) error {
			n := 0
			runs, err := d.Verify(ctx, opts, func(f Finding) error {
				if f.Problem() {
					n++
				}
				return nil
			})
			if err == nil && (n != 0 || runs == 0) {
				t.Errorf("verify of a generated directory: %d runs, %d problems", runs, n)
			}
			return err
		}},
		{"dump", func(d *Dir) error {
			w := bufio.NewWriter(io.Discard)
			return d.WriteDump(ctx, w, DumpOptions{Physical: true, Options: opts})
		}},
		{"inspect", func(d *Dir) error { _, err := d.Inspect(ctx); return err }},
	}
	sizes := []int{1000, 10000}
	peaks := make([][]uint64, len(sizes))
	for i, n := range sizes {
		dir := filepath.Join(t.TempDir(), "d")
		if _, err := sim.Generate(ctx, vfs.Default, dir, sim.GenOptions{Shards: 4, Runs: n, Seed: 7}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			d, err := OpenDir(ctx, vfs.Default, dir)
			if err != nil {
				t.Fatal(err)
			}
			peaks[i] = append(peaks[i], peakHeap(t, func() error { return c.run(d) }))
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for j, c := range cmds {
		small, large := peaks[0][j], peaks[1][j]
		t.Logf("%s: peak heap %.1f MiB at %d runs, %.1f MiB at %d runs", c.name, float64(small)/(1<<20), sizes[0], float64(large)/(1<<20), sizes[1])
		// Ten times the runs; a factor of 2.5 (and a few MiB for the
		// stores' caches warming up) leaves room for GC timing.
		if large > small*5/2+8<<20 {
			t.Errorf("%s: peak heap grew from %d to %d bytes with ten times the runs", c.name, small, large)
		}
	}
}
