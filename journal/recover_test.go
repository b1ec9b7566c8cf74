package journal

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
	"pgregory.net/rapid"
)

// hashTree renders every file under dir (path, size, SHA-256) in order.
func hashTree(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %x\n", rel, len(data), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fillDir creates a directory on the real disk, commits a random workload
// with random checkpoints and closes it without a final checkpoint, so a
// log tail stays to replay. It returns the model.
func fillDir(t *testing.T, dir string, shards int) *workload {
	t.Helper()
	var w *workload
	rapid.Check(t, func(rt *rapid.T) {
		if w != nil {
			return // one workload is enough; rapid has no option for one check
		}
		db, ww := runWorkload(rt, vfs.Default, dir, shards, 40)
		if err := db.Commit(ww.batch(rt, 6)); err != nil { // a tail to replay
			rt.Fatal(err)
		}
		if err := db.Close(); err != nil {
			rt.Fatal(err)
		}
		w = ww
	})
	return w
}

// TestReadOnlyChangesNoByte hashes every file of a directory with a log
// tail to replay before and after a read-only Open and Close: nothing
// changes, and the read-only DB refuses to commit or checkpoint.
func TestReadOnlyChangesNoByte(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w := fillDir(t, dir, 3)
	before := hashTree(t, dir)
	db, rep, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	checkShardsEqual(t, "read-only recovery vs model", db.Shards, w.model)
	replayed := 0
	for _, sr := range rep.Shards {
		replayed += sr.Replayed
	}
	if replayed == 0 {
		t.Fatal("the directory has no log tail: the test would prove little")
	}
	if err := db.Commit([]ShardOp{{Shard: 0, Op: model.Op{Kind: model.OpSeen, MsgID: "x", WorkflowID: "a"}}}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Commit on a read-only DB: %v, want ErrReadOnly", err)
	}
	if err := db.Checkpoint(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Checkpoint on a read-only DB: %v, want ErrReadOnly", err)
	}
	if _, err := db.Stats(); err != nil {
		t.Fatal(err)
	}
	if err := db.StoreKeys(1, func(k, v []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if after := hashTree(t, dir); after != before {
		t.Fatalf("a read-only open changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestTornLogTail: the engine stopped (a power cut after its last synced
// commit, no Close) and its last batch is cut at a random byte, as a write
// in flight leaves it. Recovery keeps every whole batch before the cut,
// reports the log as stopped, and, when the cut falls inside a batch,
// reports that batch as the torn tail: its offset, the bytes dropped, and
// only true claims about its shards and LSNs. A cut between batches drops
// nothing.
func TestTornLogTail(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewCrashableMem()
		shards := rapid.IntRange(1, 3).Draw(t, "shards")
		db, err := Create(mem, "/d", CreateOptions{Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkload(shards)
		var batches [][]ShardOp
		for range rapid.IntRange(1, 20).Draw(t, "batches") {
			ops := w.batch(t, 4)
			batches = append(batches, ops)
			if err := db.Commit(ops); err != nil {
				t.Fatal(err)
			}
		}
		img := mem.CrashClone(vfs.CrashCloneCfg{}) // every commit was synced; no close
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		seg := lastSegment(t, img, "/d/wal")
		type written struct {
			start int64
			secs  []wal.TornSection
		}
		var log []written
		if _, err := wal.Read(img, "/d/wal", wal.Position{}, func(b wal.Batch) error {
			x := written{start: b.Pos.Offset}
			for _, s := range b.Sections {
				x.secs = append(x.secs, wal.TornSection{Shard: s.Shard, FirstLSN: s.FirstLSN, Entries: uint64(len(s.Entries))})
			}
			log = append(log, x)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(log) != len(batches) {
			t.Fatalf("the log holds %d batches, %d were committed", len(log), len(batches))
		}
		data := readAll(t, img, seg)
		cut := rapid.IntRange(0, len(data)).Draw(t, "cut")
		writeAll(t, img, seg, data[:cut])
		inside := -1 // the batch the cut falls inside
		for k, b := range log {
			end := int64(len(data))
			if k+1 < len(log) {
				end = log[k+1].start
			}
			if b.start < int64(cut) && int64(cut) < end {
				inside = k
			}
		}

		db, rep, err := Open(img, "/d", OpenOptions{})
		if err != nil {
			if cut < 64 && strings.Contains(err.Error(), "header") {
				return // the segment header itself is gone: that is damage, not a torn batch
			}
			t.Fatalf("Open of a log cut at %d of %d: %v", cut, len(data), err)
		}
		var got uint64
		for _, s := range db.Shards {
			got += s.LSN
		}
		n, total := -1, uint64(0)
		for j := 0; j <= len(batches); j++ {
			if total == got {
				n = j
				break
			}
			if j < len(batches) {
				total += uint64(len(batches[j]))
			}
		}
		if n < 0 {
			t.Fatalf("recovered %d entries: not a prefix of whole commits", got)
		}
		if rep.LogEnding != wal.EndStopped {
			t.Fatalf("a stopped engine's log reads as %v", rep.LogEnding)
		}
		switch {
		case inside < 0 && (rep.Torn != nil || (cut == len(data) && n != len(batches))):
			t.Fatalf("a cut at %d, between batches: %d of %d commits, torn %v", cut, n, len(batches), rep.Torn)
		case inside >= 0:
			tt := rep.Torn
			if tt == nil || n != inside || tt.File != seg || tt.Offset != log[inside].start || tt.Bytes != int64(cut)-log[inside].start {
				t.Fatalf("a cut at %d inside batch %d (from %d): %d commits recovered, torn %+v", cut, inside+1, log[inside].start, n, tt)
			}
			if k := len(tt.Sections); k > len(log[inside].secs) || !slices.Equal(tt.Sections, log[inside].secs[:k]) ||
				(k > 0 && tt.Batch != uint64(inside+1)) {
				t.Fatalf("the torn batch %d claims batch %d, %v; it held %v", inside+1, tt.Batch, tt.Sections, log[inside].secs)
			}
		}
		checkShardsEqual(t, "recovered from a torn log", db.Shards, replayModel(t, shards, batches, n))
		// The log goes on after the dropped tail.
		w2 := &workload{model: replayModel(t, shards, batches, n), ids: w.ids, msgs: w.msgs, time: w.time}
		if err := db.Commit(w2.batch(t, 4)); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, rep, err = Open(img, "/d", OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatalf("reopen after continuing a torn log: %v", err)
		}
		defer db.Close()
		if rep.TornTail != "" || rep.LogEnding != wal.EndClosed {
			t.Fatalf("after continuing and closing: %v, torn %s", rep.LogEnding, rep.TornTail)
		}
		checkShardsEqual(t, "reopened after a torn log", db.Shards, w2.model)
	})
}

func lastSegment(t *rapid.T, fs vfs.FS, dir string) string {
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for i := len(names) - 1; i >= 0; i-- {
		if strings.HasSuffix(names[i], ".log") {
			return fs.PathJoin(dir, names[i])
		}
	}
	t.Fatalf("no segment in %s", dir)
	return ""
}

func readAll(t *rapid.T, fs vfs.FS, path string) []byte {
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	return b
}

func writeAll(t *rapid.T, fs vfs.FS, path string, data []byte) {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptStoreIsRefused damages one shard store in ways pebble's
// checksums cannot see (well-formed pebble, wrong content) and expects a
// StoreError naming the store and the key.
func TestCorruptStoreIsRefused(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, db *pebble.DB, s *model.Shard)
		want   string // in the error
	}{
		{"missing header", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			must(t, db.Delete(store.HeaderKey(), pebble.Sync))
		}, "no checkpoint header"},
		{"header of another shard", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			h := store.HeaderFor(s, model.CheckpointHeader{Gen: 1})
			h.Shard = 1
			must(t, db.Set(store.HeaderKey(), model.EncodeHeader(nil, &h), pebble.Sync))
		}, "says shard 1"},
		{"undecodable run entry", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			must(t, db.Set(store.RunKey(1), []byte{9, 9}, pebble.Sync))
		}, "key run/1"},
		{"missing journal record", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			must(t, db.Delete(store.RecordKey(1, 0), pebble.Sync))
		}, "key run/1"},
		{"index points elsewhere", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			must(t, db.Set(store.IndexKey(s.Runs[1].WorkflowID), model.EncodeRunNo(77), pebble.Sync))
		}, "ID index"},
		{"stray timer", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			must(t, db.Set(store.TimerKeyBytes(model.TimerKey{At: 5, Run: 1, Pos: 0}), nil, pebble.Sync))
		}, "timers"},
		{"unknown key", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			must(t, db.Set([]byte("Zebra"), nil, pebble.Sync))
		}, "unknown kind"},
		{"checkpoint ahead of the log", func(t *testing.T, db *pebble.DB, s *model.Shard) {
			h := store.HeaderFor(s, model.CheckpointHeader{Gen: 1})
			h.LSN += 3
			must(t, db.Set(store.HeaderKey(), model.EncodeHeader(nil, &h), pebble.Sync))
		}, "checkpoint and log disagree"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			db, err := Create(mem, "/d", CreateOptions{Shards: 2})
			must(t, err)
			ops := []ShardOp{{Shard: 0, Op: model.Op{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1}}},
				{Shard: 0, Op: model.Op{Kind: model.OpAppend, Run: 1, Rec: model.Record{Kind: model.KindTimer, Pos: 1, Time: 50}}}}
			must(t, db.Commit(ops))
			must(t, db.Checkpoint())
			s := db.Shards[0]
			must(t, db.Close())

			path := store.StoreDir(mem, "/d", 0)
			st, err := store.OpenStore(mem, path, nil, false, false)
			must(t, err)
			tc.damage(t, st, s)
			must(t, st.Close())

			_, _, err = Open(mem, "/d", OpenOptions{ReadOnly: true})
			if err == nil {
				t.Fatal("Open accepted a damaged store")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "restore") {
				t.Fatalf("error %q: want it to say %q and what to do", msg, tc.want)
			}
			var se *store.StoreError
			if tc.name != "checkpoint ahead of the log" && (!errors.As(err, &se) || se.Path != path) {
				t.Fatalf("error %v: want a *StoreError for %s", err, path)
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMetaRefusals: an interrupted reshard (format=reshard) and log
// format 2 are refused with meta's typed errors, the latter saying to run
// meta.ErrOldLog; a held lock is meta.ErrInUse.
func TestMetaRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	db, err := Create(vfs.Default, dir, CreateOptions{Shards: 2})
	must(t, err)
	if _, _, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: true}); !errors.Is(err, meta.ErrInUse) {
		t.Fatalf("Open while open: %v, want meta.ErrInUse", err)
	}
	must(t, db.Close())

	write := func(m meta.Meta) {
		b, err := m.Marshal()
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, meta.FileName), b, 0o644))
	}
	write(meta.Meta{Format: meta.Switching, Log: 3, Shards: 4, OldShards: 2, NewShards: 4})
	if _, _, err := Open(vfs.Default, dir, OpenOptions{}); !errors.Is(err, meta.ErrSwitching) {
		t.Fatalf("Open of format=reshard: %v, want meta.ErrSwitching", err)
	}
	write(meta.Meta{Format: meta.FormatLocal, Log: 2, Shards: 2})
	_, _, err = Open(vfs.Default, dir, OpenOptions{ReadOnly: true})
	if !errors.Is(err, meta.ErrOldLog) || !strings.Contains(err.Error(), "log format 2") {
		t.Fatalf("Open of log=2: %v, want meta.ErrOldLog naming log format 2", err)
	}
	write(meta.Meta{Format: meta.FormatLocal, Log: 3, Shards: 3})
	if _, _, err := Open(vfs.Default, dir, OpenOptions{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "shards/0002/store") {
		t.Fatalf("Open with a shard count the stores do not have: %v", err)
	}
}

// TestCommitRefusesInvalidOp: an op that does not fit its shard never
// reaches the log; the DB refuses everything after; the directory reopens
// at the last acknowledged commit.
func TestCommitRefusesInvalidOp(t *testing.T) {
	mem := vfs.NewMem()
	db, err := Create(mem, "/d", CreateOptions{Shards: 1})
	must(t, err)
	good := []ShardOp{{Shard: 0, Op: model.Op{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1}}}}
	must(t, db.Commit(good))
	bad := []ShardOp{{Shard: 0, Op: model.Op{Kind: model.OpSeen, MsgID: "x", WorkflowID: "a"}}, {Shard: 0, Op: model.Op{Kind: model.OpLoad, Run: 1}}}
	if err := db.Commit(bad); err == nil {
		t.Fatal("Commit accepted an op that does not fit")
	}
	if err := db.Commit(good); err == nil {
		t.Fatal("Commit after a refused batch succeeded")
	}
	if err := db.Commit([]ShardOp{{Shard: 5}}); err == nil {
		t.Fatal("Commit to a shard out of range succeeded")
	}
	must(t, db.Close())
	db, _, err = Open(mem, "/d", OpenOptions{ReadOnly: true})
	must(t, err)
	defer db.Close()
	if s := db.Shards[0]; s.LSN != 1 || len(s.Seen) != 0 || len(s.Runs) != 1 {
		t.Fatalf("reopened at LSN %d with %d seen, %d runs; want the one acknowledged commit", s.LSN, len(s.Seen), len(s.Runs))
	}
}

// TestLogKeepsWhatCheckpointsNeed: with small segments, checkpoints remove
// old segments, and the directory still recovers; the stats agree.
func TestLogKeepsWhatCheckpointsNeed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mem := vfs.NewMem()
		db, err := Create(mem, "/d", CreateOptions{Shards: 2, SegmentSize: 2 << 10})
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkload(2)
		for range 60 {
			if err := db.Commit(w.batch(t, 4)); err != nil {
				t.Fatal(err)
			}
			if rapid.IntRange(0, 5).Draw(t, "checkpoint") == 0 {
				if err := db.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				st, err := db.Stats()
				if err != nil {
					t.Fatal(err)
				}
				if st.LogSegments > 2 {
					t.Fatalf("%d segments after a checkpoint of everything", st.LogSegments)
				}
				for _, ss := range st.Shards {
					if ss.TailEntries != 0 || ss.Checkpoint.LSN != ss.LSN {
						t.Fatalf("shard %d after a checkpoint: %+v", ss.Shard, ss)
					}
				}
			}
		}
		st, err := db.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, rep, err := Open(mem, "/d", OpenOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		checkShardsEqual(t, "recovered with a truncated log", db.Shards, w.model)
		for i, sr := range rep.Shards {
			if sr.Replayed != st.Shards[i].TailEntries {
				t.Fatalf("shard %d replayed %d entries, stats said a tail of %d", i, sr.Replayed, st.Shards[i].TailEntries)
			}
		}
		if _, err := wal.Read(mem, "/d/wal", wal.Position{}, nil); err != nil {
			t.Fatalf("the truncated log does not read from its first segment: %v", err)
		}
	})
}
