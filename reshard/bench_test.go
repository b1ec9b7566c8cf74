package reshard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// benchRuns is the size of the benchmark's directory: FUSEE_BENCH_RUNS
// (default 20000).
func benchRuns() int {
	if n, err := strconv.Atoi(os.Getenv("FUSEE_BENCH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// benchDirs holds the benchmarks' source directories, each generated once
// per process (benchSource).
var benchDirs = map[string]string{}

func benchSource(b *testing.B, shards, runs int) string {
	key := fmt.Sprint(shards, runs)
	if d, ok := benchDirs[key]; ok {
		return d
	}
	base, err := os.MkdirTemp("", "fusee-bench-")
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(base, "src")
	if _, err := sim.Generate(context.Background(), vfs.Default, dir, sim.GenOptions{Shards: shards, Runs: runs, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	benchDirs[key] = dir
	return dir
}

// copyDir is `cp -a src dst && sync`: the physical floor a rewrite is
// measured against.
func copyDir(b *testing.B, src, dst string) {
	if err := os.RemoveAll(dst); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", `cp -a "$1" "$2" && sync`, "sh", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
}

// BenchmarkReshard times a reshard (shrink 8->3, grow to a multiple 8->16,
// an odd change 7->12) and, for the ratio, a plain copy of the same
// directory. The copy before each reshard is not timed.
func BenchmarkReshard(b *testing.B) {
	runs := benchRuns()
	for _, p := range [][2]int{{8, 3}, {8, 16}, {7, 12}} {
		src := benchSource(b, p[0], runs)
		work := filepath.Join(filepath.Dir(src), "work")
		b.Run(fmt.Sprintf("runs=%d/%d->%d", runs, p[0], p[1]), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				copyDir(b, src, work)
				b.StartTimer()
				if _, err := reshard.Reshard(context.Background(), vfs.Default, work, reshard.Options{Shards: p[1]}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("runs=%d/%d->%d/dry-run", runs, p[0], p[1]), func(b *testing.B) {
			copyDir(b, src, work)
			b.ResetTimer()
			for range b.N {
				if _, err := reshard.Reshard(context.Background(), vfs.Default, work, reshard.Options{Shards: p[1], DryRun: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("runs=%d/%d/cp-a-sync", runs, p[0]), func(b *testing.B) {
			for range b.N {
				copyDir(b, src, work)
			}
		})
	}
}

// BenchmarkRewriteFloor (FUSEE_BENCH_DIR: an existing directory to read;
// FUSEE_BENCH_OUT: where to write, removed after) is the floor a reshard is measured against: every
// old store iterated in key order and written unchanged as sstables into a
// new store (one ingest), two stores at a time. A reshard reads and
// writes every byte once like this, and does more per byte.
func BenchmarkRewriteFloor(b *testing.B) {
	src := os.Getenv("FUSEE_BENCH_DIR")
	shards := 8
	if src == "" {
		src = benchSource(b, shards, benchRuns())
	} else {
		m, err := meta.ReadAny(vfs.Default, src)
		if err != nil {
			b.Fatal(err)
		}
		shards = m.Shards
	}
	out := os.Getenv("FUSEE_BENCH_OUT") // bench/ puts it next to the source
	if out == "" {
		out = filepath.Join(os.TempDir(), "fusee-floor")
	}
	for range b.N {
		b.StopTimer()
		if err := os.RemoveAll(out); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := rewriteFloor(src, out, shards); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	os.RemoveAll(out)
}

func rewriteFloor(src, out string, shards int) error {
	sem := make(chan struct{}, 2)
	errs := make(chan error, shards)
	for i := range shards {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- copyStore(store.StoreDir(vfs.Default, src, i), store.StoreDir(vfs.Default, out, i))
		}()
	}
	for range shards {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

func copyStore(from, to string) error {
	db, err := pebble.Open(from, &pebble.Options{ReadOnly: true, Logger: quiet{}})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	sw, err := store.NewStoreWriter(vfs.Default, to)
	if err != nil {
		return err
	}
	sw.NoReadBack = true // the floor writes and ingests, nothing more
	it, err := db.NewIter(nil)
	if err != nil {
		sw.Abort()
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = sw.Add(it.Key(), v)
		}
		if err != nil {
			it.Close()
			sw.Abort()
			return err
		}
	}
	if err := it.Close(); err != nil {
		sw.Abort()
		return err
	}
	return sw.Finish()
}

type quiet struct{}

func (quiet) Infof(string, ...any)      {}
func (quiet) Errorf(string, ...any)     {}
func (quiet) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
