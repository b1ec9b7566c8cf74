package wal

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// plan returns n batches of entries with the LSNs Append will give them, so
// that a test knows every batch's contents before writing it.
func plan(n int, bigEvery int) [][]Entry {
	next := map[int]uint64{}
	batches := make([][]Entry, n)
	for i := range batches {
		entries := make([]Entry, 1+i%3)
		for j := range entries {
			size := 40 + (i*7+j*13)%300
			if bigEvery > 0 && i%bigEvery == bigEvery-1 && j == 0 {
				size = 20<<10 + i*100
			}
			shard := (i + j*5) % 7
			next[shard]++
			entries[j] = Entry{Shard: shard, Data: payload(uint64(i*10+j), size), LSN: next[shard]}
		}
		batches[i] = entries
	}
	return batches
}

// checkPrefix checks that a log read after a crash holds the acknowledged
// batches and at most the next one, the one in flight.
func checkPrefix(got []batchCopy, planned [][]Entry, acked []Position, inFlight bool) error {
	if len(got) < len(acked) {
		return fmt.Errorf("%d batches survived, but %d were acknowledged", len(got), len(acked))
	}
	limit := len(acked)
	if inFlight {
		limit++
	}
	if len(got) > limit {
		return fmt.Errorf("%d batches survived, but only %d were written", len(got), limit)
	}
	for i, g := range got {
		var pos Position
		if i < len(acked) {
			pos = acked[i]
		} else {
			pos = g.Pos // never returned by Append
		}
		if d := diffBatches([]batchCopy{g}, []batchCopy{expected(uint64(i+1), pos, planned[i])}); d != "" {
			return fmt.Errorf("batch %d: %s", i+1, d)
		}
	}
	return nil
}

// continueLog checks that a crashed log can be continued: OpenAppend after
// the read, two more batches, and a read giving the old ones and the new.
func continueLog(fs vfs.FS, got []batchCopy, tail Tail) error {
	w, err := OpenAppend(fs, "wal", tail, Options{})
	if err != nil {
		return err
	}
	for i := range 2 {
		if _, err := w.Append([]Entry{{Shard: 3, Data: []byte(fmt.Sprint("after the crash ", i))}}); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	again, tail2, err := collect(fs, "wal", Position{})
	if err != nil {
		return fmt.Errorf("after continuing: %w", err)
	}
	if d := diffBatches(again[:min(len(got), len(again))], got); d != "" || len(again) != len(got)+2 {
		return fmt.Errorf("after continuing, %d batches: %s", len(again), d)
	}
	if tail2.Torn != nil {
		return fmt.Errorf("after continuing, a torn tail again: %v", tail2.Torn)
	}
	return nil
}

// stopAfter fails every write operation after the first n, as if the process
// died there.
type stopAfter struct {
	n, count atomic.Int64
}

func (s *stopAfter) String() string { return "stopAfter" }

func (s *stopAfter) MaybeError(op errorfs.Op) error {
	if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && s.count.Add(1) > s.n.Load() {
		return errorfs.ErrInjected
	}
	return nil
}

// TestCrashAtEveryWrite stops the writer at each of its filesystem writes
// in turn (creating, appending, rotating), then takes what a crash would
// leave (only synced data, some or all of the rest), reads it, and checks
// that every acknowledged batch is there, nothing after a gap, and that the
// log can be continued.
func TestCrashAtEveryWrite(t *testing.T) {
	planned := plan(14, 5)
	run := func(fs vfs.FS) (w *Writer, acked []Position, created, inFlight bool, err error) {
		w, err = Create(fs, "wal", Options{LogID: 5, SegmentSize: 6 << 10})
		if err != nil {
			return nil, nil, false, false, err
		}
		for i, entries := range planned {
			if i == 9 {
				if err := w.Rotate(); err != nil {
					return w, acked, true, false, err
				}
			}
			pos, err := w.Append(entries)
			if err != nil {
				return w, acked, true, true, err
			}
			acked = append(acked, pos)
		}
		return w, acked, true, false, w.Close()
	}

	inj := &stopAfter{}
	inj.n.Store(math.MaxInt64)
	if _, _, _, _, err := run(errorfs.Wrap(vfs.NewCrashableMem(), inj)); err != nil {
		t.Fatal(err)
	}
	writes := inj.count.Load()
	t.Logf("the workload makes %d writes", writes)
	if _, tail, err := collect(func() vfs.FS {
		fs := vfs.NewCrashableMem()
		if _, _, _, _, err := run(fs); err != nil {
			t.Fatal(err)
		}
		return fs.CrashClone(vfs.CrashCloneCfg{})
	}(), "wal", Position{}); err != nil || tail.Ending != EndClosed {
		t.Fatalf("the workload run whole: %v, %v", tail.Ending, err)
	}
	for n := range writes {
		mem := vfs.NewCrashableMem()
		inj := &stopAfter{}
		inj.n.Store(n)
		w, acked, created, inFlight, err := run(errorfs.Wrap(mem, inj))
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("stopping after %d of %d writes: %v", n, writes, err)
		}
		crashed := mem.CrashClone(vfs.CrashCloneCfg{
			UnsyncedDataPercent: []int{0, 50, 100}[n%3],
			RNG:                 rand.New(rand.NewPCG(uint64(n), 1)),
		})
		if w != nil {
			_ = w.Close() // stops pebble's flush goroutine; the error is the injected one
		}
		got, tail, err := collect(crashed, "wal", Position{})
		if err != nil {
			if !created {
				continue // Create never returned: no log is fine
			}
			t.Fatalf("stopping after %d of %d writes: %v", n, writes, err)
		}
		if err := checkPrefix(got, planned, acked, inFlight); err != nil {
			t.Fatalf("stopping after %d of %d writes: %v", n, writes, err)
		}
		// Only a log whose every batch was written can carry the close
		// evidence (the writer stopped while ending the close).
		if tail.Ending == EndClosed && len(got) != len(planned) {
			t.Fatalf("stopping after %d of %d writes: %d of %d batches, yet the log reads as closed", n, writes, len(got), len(planned))
		}
		if tail.Torn != nil && tail.Ending != EndStopped {
			t.Fatalf("stopping after %d of %d writes: a torn tail in a log that %v", n, writes, tail.Ending)
		}
		if err := continueLog(crashed, got, tail); err != nil {
			t.Fatalf("stopping after %d of %d writes: %v", n, writes, err)
		}
	}
}

// TestCrashWhileAppending takes crash images of the filesystem at random
// moments while a writer appends and rotates, and checks each one.
func TestCrashWhileAppending(t *testing.T) {
	const (
		n         = 1000
		maxImages = 25
	)
	planned := plan(n, 17)
	fs := vfs.NewCrashableMem()
	w, err := Create(fs, "wal", Options{LogID: 6, SegmentSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []Position
		done  = make(chan error, 1)
	)
	go func() {
		for _, entries := range planned {
			pos, err := w.Append(entries)
			if err != nil {
				done <- err
				return
			}
			mu.Lock()
			acked = append(acked, pos)
			mu.Unlock()
		}
		done <- w.Close()
	}()

	type image struct {
		fs          *vfs.MemFS
		before, max int // batches acknowledged before the image, and written at most
	}
	var images []image
	rng := rand.New(rand.NewPCG(7, 7))
	for running := true; running; {
		if len(images) == maxImages {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(time.Duration(rng.IntN(400)) * time.Microsecond):
		}
		mu.Lock()
		before := len(acked)
		mu.Unlock()
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		mu.Lock()
		after := len(acked)
		mu.Unlock()
		images = append(images, image{crashed, before, after + 1})
	}
	torn, points := 0, []int{}
	for _, im := range images {
		got, tail, err := collect(im.fs, "wal", Position{})
		points = append(points, im.before)
		if tail.Torn != nil {
			torn++
		}
		if err != nil {
			t.Fatalf("image after %d batches: %v", im.before, err)
		}
		if len(got) < im.before || len(got) > min(im.max, n) {
			t.Fatalf("image after %d..%d batches holds %d", im.before, im.max-1, len(got))
		}
		if err := checkPrefix(got, planned, acked[:len(got)], false); err != nil {
			t.Fatalf("image after %d batches: %v", im.before, err)
		}
		if err := continueLog(im.fs, got, tail); err != nil {
			t.Fatalf("image after %d batches: %v", im.before, err)
		}
	}
	t.Logf("%d crash images, taken after %v batches; %d with a torn tail", len(images), points, torn)
}

// TestCrashNoSync checks NoSync mode's one promise: what Sync returned for
// survives a crash.
func TestCrashNoSync(t *testing.T) {
	planned := plan(120, 9)
	fs := vfs.NewCrashableMem()
	w, err := Create(fs, "wal", Options{NoSync: true, SegmentSize: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var acked []Position
	for i, entries := range planned {
		pos, err := w.Append(entries)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, pos)
		if i == 79 {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := collect(crashed, "wal", Position{})
	if err != nil {
		t.Fatal(err)
	}
	// Rotations sync too, so more than the first 80 may have survived.
	if err := checkPrefix(got, planned, acked[:len(got)], false); len(got) < 80 || err != nil {
		t.Fatalf("%d batches survived: %v", len(got), err)
	}
	all, _, err := collect(fs, "wal", Position{})
	if err != nil || len(all) != len(planned) {
		t.Fatalf("after Close: %d batches, %v", len(all), err)
	}
}
