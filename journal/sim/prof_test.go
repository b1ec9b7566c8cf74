package sim

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestProfGen(t *testing.T) {
	dir := t.TempDir() + "/d"
	done := false
	o := GenOptions{Shards: 8, Runs: 50000, Seed: 1}
	o.Progress = func(p Progress) {
		if !done && p.Started > 45000 {
			done = true
			runtime.GC()
			f, _ := os.Create("/tmp/flatgen/heap.out")
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	if _, err := Generate(context.Background(), vfs.Default, dir, o); err != nil {
		t.Fatal(err)
	}
}
