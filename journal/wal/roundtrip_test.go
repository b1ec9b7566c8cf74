package wal

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"pgregory.net/rapid"
)

// TestRoundTrip appends random batches over random shards, with random
// rotations, reopenings (Read then OpenAppend) and segment sizes, in both
// sync modes, and checks that Read gives back exactly what was appended,
// that every shard's LSNs count from 1 without gaps, and that every batch's
// position (and the end) is a valid place to start reading.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		opts := Options{
			SegmentSize: rapid.Int64Range(1<<10, 96<<10).Draw(t, "segmentSize"),
			NoSync:      rapid.Bool().Draw(t, "noSync"),
			LogID:       7,
		}
		w, err := Create(fs, "wal", opts)
		if err != nil {
			t.Fatal(err)
		}
		pool := rapid.SliceOfNDistinct(rapid.IntRange(0, meta.MaxShards-1), 1, 5, rapid.ID[int]).Draw(t, "shards")
		size := rapid.OneOf(
			rapid.IntRange(0, 40).AsAny(),
			rapid.IntRange(0, 3000).AsAny(),
			rapid.IntRange(30<<10, 70<<10).AsAny(), // spans blocks
		)
		lastLSN := map[int]uint64{}
		var want []batchCopy
		n := rapid.IntRange(1, 30).Draw(t, "batches")
		for i := range n {
			switch rapid.IntRange(0, 14).Draw(t, "op") {
			case 0:
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
			case 1:
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				_, tail, err := collect(fs, "wal", Position{})
				if err != nil {
					t.Fatal(err)
				}
				if w, err = OpenAppend(fs, "wal", tail, opts); err != nil {
					t.Fatal(err)
				}
			}
			entries := make([]Entry, rapid.IntRange(1, 6).Draw(t, "entries"))
			for j := range entries {
				n := size.Draw(t, "size").(int)
				if n > 3000 && rapid.IntRange(0, 9).Draw(t, "big") != 0 {
					n %= 100
				}
				entries[j] = Entry{Shard: rapid.SampledFrom(pool).Draw(t, "shard"), Data: payload(uint64(i*10+j), n)}
			}
			pos, err := w.Append(entries)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.LSN != lastLSN[e.Shard]+1 {
					t.Fatalf("batch %d: shard %d got LSN %d after %d", i+1, e.Shard, e.LSN, lastLSN[e.Shard])
				}
				lastLSN[e.Shard] = e.LSN
			}
			want = append(want, expected(uint64(i+1), pos, entries))
		}
		if opts.NoSync && rapid.Bool().Draw(t, "sync") {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		got, tail, err := collect(fs, "wal", Position{})
		if err != nil {
			t.Fatal(err)
		}
		if d := diffBatches(got, want); d != "" {
			t.Fatal(d)
		}
		if tail.Torn != nil || tail.LastBatch != uint64(n) || tail.LogID != 7 {
			t.Fatalf("tail %s", tailString(tail))
		}
		for shard, next := range tail.NextLSN {
			if next != lastLSN[shard]+1 {
				t.Fatalf("tail: shard %d next LSN %d, want %d", shard, next, lastLSN[shard]+1)
			}
		}

		k := rapid.IntRange(0, n).Draw(t, "start")
		from := tail.End
		if k < n {
			from = want[k].Pos
		}
		got, tail2, err := collect(fs, "wal", from)
		if err != nil {
			t.Fatalf("reading from %v: %v", from, err)
		}
		if d := diffBatches(got, want[k:]); d != "" {
			t.Fatalf("reading from %v: %s", from, d)
		}
		// Whole is the read's, not the log's: whether it began at the
		// first segment. Everything else is the log's.
		segs, err := listSegments(fs, "wal")
		if err != nil {
			t.Fatal(err)
		}
		if whole := from.Segment == segs[0]; tail2.Whole != whole || !tail.Whole {
			t.Fatalf("reading from %v (first segment %d): whole %v, want %v; from the start: whole %v", from, segs[0], tail2.Whole, whole, tail.Whole)
		}
		tail2.Whole = tail.Whole
		if fmt.Sprint(tail2) != fmt.Sprint(tail) {
			t.Fatalf("reading from %v: tail %s, want %s", from, tailString(tail2), tailString(tail))
		}
	})
}

// TestPositionsFollowPadding pins the block arithmetic that positions rely
// on: records ending 0..40 bytes before a block boundary (so that the
// LogWriter pads the rest or not) must get the same position from the
// writer and the reader, and reading from each must work.
func TestPositionsFollowPadding(t *testing.T) {
	seen := map[int64]bool{}
	for n := blockSize - 140; n < blockSize-40; n++ {
		fs := vfs.NewMem()
		l := newTestLog(t, fs, Options{})
		l.append(t, 1, []int{3}, []int{n})
		l.append(t, 2, []int{3}, []int{10})
		l.append(t, 3, []int{3, 4}, []int{blockSize, 5})
		l.append(t, 4, []int{3}, []int{10})
		l.close(t)
		seen[blockSize-l.batches[1].Pos.Offset%blockSize] = true
		for k := range l.batches {
			got, _, err := collect(fs, l.dir, l.batches[k].Pos)
			if err != nil {
				t.Fatalf("entry size %d, from batch %d: %v", n, k+1, err)
			}
			if d := diffBatches(got, l.batches[k:]); d != "" {
				t.Fatalf("entry size %d, from batch %d: %s", n, k+1, d)
			}
		}
	}
	// The second batch must have started right after the first (0..10
	// bytes left in the block: next block) in every case around the
	// padding threshold.
	for rem := int64(1); rem <= 20; rem++ {
		if rem < recyclableHeaderSize {
			continue // those records start in the next block instead
		}
		if !seen[rem] {
			t.Errorf("no case left %d bytes in the block", rem)
		}
	}
	if !seen[blockSize] {
		t.Errorf("no case padded to the block boundary")
	}
}
