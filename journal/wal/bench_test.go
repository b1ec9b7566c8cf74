package wal

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// BenchmarkAppendNoSync measures bulk generation: batches of entries over
// many shards appended without fsync, on disk and in memory. MB/s counts
// entry bytes.
func BenchmarkAppendNoSync(b *testing.B) {
	for _, fsName := range []string{"disk", "mem"} {
		for _, shape := range []struct{ entries, size int }{{1, 200}, {16, 200}, {64, 1000}} {
			b.Run(fmt.Sprintf("%s/%dx%dB", fsName, shape.entries, shape.size), func(b *testing.B) {
				fs, dir := vfs.FS(vfs.NewMem()), "wal"
				if fsName == "disk" {
					fs, dir = vfs.Default, b.TempDir()+"/wal"
				}
				benchmarkAppend(b, fs, dir, Options{NoSync: true}, shape.entries, shape.size)
			})
		}
	}
}

// BenchmarkAppendSync measures acknowledged appends: one fsync per batch.
func BenchmarkAppendSync(b *testing.B) {
	benchmarkAppend(b, vfs.Default, b.TempDir()+"/wal", Options{}, 16, 200)
}

func benchmarkAppend(b *testing.B, fs vfs.FS, dir string, opts Options, entries, size int) {
	w, err := Create(fs, dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]Entry, entries)
	for i := range batch {
		batch[i] = Entry{Shard: (i * 37) % meta.MaxShards, Data: payload(uint64(i), size)}
	}
	b.SetBytes(int64(entries * size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
