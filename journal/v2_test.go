package journal

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
	"pgregory.net/rapid"
)

// writeV2Dir builds a log format 2 directory from a random workload: each
// shard's store is a checkpoint taken part way (written with
// WriteShardStore, at the LSN reached then), each shard's own log holds
// every entry from LSN 1. It returns the final model.
func writeV2Dir(t *rapid.T, fs vfs.FS, dir string, shards int) *workload {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := meta.Create(fs, dir, meta.Meta{Format: meta.FormatLocal, Log: meta.LogPerShard, Shards: shards}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	logs := make([]*wal.WriterV2, shards)
	for i := range logs {
		w, err := wal.CreateV2(fs, wal.ShardLogDir(fs, dir, i), i, wal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = w
	}
	w := newWorkload(shards)
	total := rapid.IntRange(0, 40).Draw(t, "batches")
	checkpointAt := rapid.IntRange(0, total).Draw(t, "checkpoint at")
	for b := 0; b <= total; b++ {
		if b == checkpointAt {
			for i, s := range w.model {
				if err := store.WriteShardStore(fs, store.StoreDir(fs, dir, i), s, model.CheckpointHeader{Gen: 1, Now: w.time}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if b == total {
			break
		}
		per := make([][][]byte, shards)
		for _, sop := range w.batch(t, 5) {
			per[sop.Shard] = append(per[sop.Shard], model.EncodeOp(nil, &sop.Op))
		}
		for i, entries := range per {
			if len(entries) > 0 {
				if _, _, err := logs[i].Append(entries); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestReadV2 recovers random format 2 directories read-only to their
// model's state; Open refuses them, saying to upgrade.
func TestReadV2(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewMem()
		shards := rapid.IntRange(1, 3).Draw(t, "shards")
		w := writeV2Dir(t, mem, "/d", shards)
		before := hashVFS(t, mem, "/d")
		st, err := ReadV2(mem, "/d")
		if err != nil {
			t.Fatalf("ReadV2: %v", err)
		}
		checkShardsEqual(t, "format 2 recovery vs model", st.Shards, w.model)
		for i, sr := range st.Report.Shards {
			if sr.CheckpointLSN+uint64(sr.Replayed) != w.model[i].LSN || uint64(sr.Skipped) != sr.CheckpointLSN {
				t.Fatalf("shard %d: %+v, model at LSN %d", i, sr, w.model[i].LSN)
			}
		}
		if _, _, err := Open(mem, "/d", OpenOptions{ReadOnly: true}); !errors.Is(err, meta.ErrOldLog) {
			t.Fatalf("Open of a format 2 directory: %v, want meta.ErrOldLog", err)
		}
		if after := hashVFS(t, mem, "/d"); after != before {
			t.Fatalf("ReadV2 changed the directory:\n%s\nvs\n%s", before, after)
		}
		// ReadV2 took and released the lock: it can run again.
		if _, err := ReadV2(mem, "/d"); err != nil {
			t.Fatalf("second ReadV2: %v", err)
		}
	})
}

// TestReadTailsV2 reads random format 2 directories' tails: each shard's
// tail holds exactly the entries after its store's checkpoint, in LSN
// order, and a shard reader over the store with that tail streams the
// model's runs; nothing is written.
func TestReadTailsV2(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewMem()
		shards := rapid.IntRange(1, 3).Draw(t, "shards")
		w := writeV2Dir(t, mem, "/d", shards)
		before := hashVFS(t, mem, "/d")
		headers := make([]model.CheckpointHeader, shards)
		for i := range headers {
			h, err := store.ReadHeader(mem, "/d", i, shards)
			if err != nil {
				t.Fatal(err)
			}
			headers[i] = h
		}
		tails, rep, err := ReadTailsV2(context.Background(), mem, "/d", headers)
		if err != nil {
			t.Fatalf("ReadTailsV2: %v", err)
		}
		for i, tail := range tails {
			if tail.Shard != i || tail.CheckpointLSN != headers[i].LSN || tail.LSN() != w.model[i].LSN || rep.Shards[i].LSN != tail.LSN() {
				t.Fatalf("shard %d: tail %d..%d, model at LSN %d", i, tail.CheckpointLSN, tail.LSN(), w.model[i].LSN)
			}
			for k, e := range tail.Entries {
				if e.LSN != tail.CheckpointLSN+1+uint64(k) {
					t.Fatalf("shard %d entry %d has LSN %d", i, k, e.LSN)
				}
			}
			r, err := store.OpenShardReader(mem, "/d", i, shards, &tails[i])
			if err != nil {
				t.Fatal(err)
			}
			var runs int
			err = r.Runs(context.Background(), func(run *model.Run, _ []model.Record) error {
				m := w.model[i].Runs[run.No]
				if m == nil || len(m.Journal) != len(run.Journal) || m.State != run.State {
					return fmt.Errorf("run %d differs from the model", run.No)
				}
				runs++
				return nil
			})
			if cerr := r.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatalf("shard %d: %v", i, err)
			}
			if runs != len(w.model[i].Runs) {
				t.Fatalf("shard %d: %d runs streamed, the model has %d", i, runs, len(w.model[i].Runs))
			}
		}
		if after := hashVFS(t, mem, "/d"); after != before {
			t.Fatal("ReadTailsV2 changed the directory")
		}
	})
}

// TestReadV2RefusesFormat3 and leaves a format 3 directory alone.
func TestReadV2RefusesFormat3(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Create(mem, "/d", CreateOptions{Shards: 1})
	must(t, err)
	must(t, db.Close())
	var le *meta.LogError
	if _, err := ReadV2(mem, "/d"); !errors.As(err, &le) || le.Have != 3 {
		t.Fatalf("ReadV2 of a format 3 directory: %v", err)
	}
}

// hashVFS renders every file under dir of fs (path, size, SHA-256).
func hashVFS(t *rapid.T, fs vfs.FS, dir string) string {
	var b strings.Builder
	var walk func(string)
	walk = func(d string) {
		names, err := fs.List(d)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		for _, name := range names {
			p := fs.PathJoin(d, name)
			fi, err := fs.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() {
				fmt.Fprintf(&b, "%s/\n", p)
				walk(p)
				continue
			}
			data := readAll(t, fs, p)
			fmt.Fprintf(&b, "%s %d %x\n", p, len(data), sha256.Sum256(data))
		}
	}
	walk(dir)
	return b.String()
}
