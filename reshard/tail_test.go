package reshard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/reshard"
)

// walSegments lists the shared log's segment files of dir, oldest first.
func walSegments(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(wal.Dir(fs, dir))
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			segs = append(segs, fs.PathJoin(wal.Dir(fs, dir), n))
		}
	}
	slices.Sort(segs)
	return segs
}

// lastBatch reads the whole log of dir and returns its batches'
// positions and, for the last one, its sections (shard, first LSN,
// entries).
func lastBatch(t testing.TB, fs vfs.FS, dir string) (wal.Position, []wal.TornSection) {
	t.Helper()
	var pos wal.Position
	var secs []wal.TornSection
	if _, err := wal.Read(fs, wal.Dir(fs, dir), wal.Position{}, func(b wal.Batch) error {
		pos, secs = b.Pos, secs[:0]
		for _, s := range b.Sections {
			secs = append(secs, wal.TornSection{Shard: s.Shard, FirstLSN: s.FirstLSN, Entries: uint64(len(s.Entries))})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pos, secs
}

func rewrite(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReshardRefusesDamagedLog: a byte flipped in the last batch of a
// cleanly closed directory, or its last segment deleted, is damage: the
// reshard (real or dry run) refuses with the file and offset, and changes
// nothing, a leftover reshard.new included.
func TestReshardRefusesDamagedLog(t *testing.T) {
	for _, damage := range []string{"flipped byte", "last segment deleted"} {
		t.Run(damage, func(t *testing.T) {
			dir := genDir(t, 3, 150, 21)
			segs := walSegments(t, vfs.Default, dir)
			if len(segs) < 2 {
				t.Fatalf("a closed log of %d segments", len(segs))
			}
			pos, _ := lastBatch(t, vfs.Default, dir)
			data := segs[len(segs)-2] // the last data segment
			if filepath.Base(data) != fmt.Sprintf("%016d.log", pos.Segment) {
				t.Fatalf("the last batch is in segment %d, not in %s", pos.Segment, data)
			}
			wantOff := pos.Offset
			switch damage {
			case "flipped byte":
				b, err := os.ReadFile(data)
				if err != nil {
					t.Fatal(err)
				}
				b[pos.Offset+20] ^= 0x08
				if err := os.WriteFile(data, b, 0o644); err != nil {
					t.Fatal(err)
				}
			case "last segment deleted":
				if err := os.Remove(segs[len(segs)-1]); err != nil {
					t.Fatal(err)
				}
				wantOff = -1 // the end record's offset, after the last batch
			}
			if err := os.MkdirAll(filepath.Join(dir, reshard.NewDirName, "junk"), 0o755); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			for _, dry := range []bool{true, false} {
				_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Shards: 2, DryRun: dry, Scratch: t.TempDir()})
				var de *reshard.DamagedError
				var ce *wal.CorruptError
				if !errors.As(err, &de) || !errors.As(err, &ce) || ce.File != data || (wantOff >= 0 && ce.Offset != wantOff) || ce.Offset < pos.Offset {
					t.Fatalf("dry run %v: want the damage at %s offset %d, got %v", dry, data, wantOff, err)
				}
				if !strings.Contains(err.Error(), "nothing was changed") {
					t.Errorf("the refusal does not say nothing was changed: %v", err)
				}
				if after := snapshot(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
					t.Fatalf("dry run %v: the refused reshard changed the directory", dry)
				}
			}
		})
	}
}

// TestReshardReportsTornTail: the engine wrote two more batches and
// stopped (a power cut: what was synced survives), the last one torn. The
// reshard drops it as the engine's recovery does, says so in its report
// (file, offset, bytes, batch, shard LSNs), and the result holds what that
// recovery holds.
func TestReshardReportsTornTail(t *testing.T) {
	const shards = 3
	mem := vfs.NewCrashableMem()
	ctx := context.Background()
	if _, err := sim.Generate(ctx, mem, memDir, sim.GenOptions{Shards: shards, Runs: 150, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	db, _, err := journal.Open(mem, memDir, journal.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, shard := range []int{0, 2} {
		s := db.Shards[shard]
		wf := idOn(t, "torn", shard, shards)
		ops := []journal.ShardOp{{Shard: shard, Op: model.Op{Kind: model.OpStart, Run: s.NextRun,
			Rec: model.Record{Kind: model.KindStart, WorkflowID: wf, Type: "hand", Time: db.Now, Gen: 1}}}}
		if i == 1 {
			ops = append(ops, journal.ShardOp{Shard: 1, Op: model.Op{Kind: model.OpStart, Run: db.Shards[1].NextRun,
				Rec: model.Record{Kind: model.KindStart, WorkflowID: idOn(t, "torn", 1, shards), Type: "hand", Time: db.Now, Gen: 1}}})
		}
		if err := db.Commit(ops); err != nil {
			t.Fatal(err)
		}
	}
	crashed := cloneNow(mem, vfs.CrashCloneCfg{}) // every commit was synced
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	pos, secs := lastBatch(t, crashed, memDir)
	if len(secs) != 2 || secs[0].Shard != 1 || secs[1].Shard != 2 {
		t.Fatalf("the last batch holds %v", secs)
	}
	segs := walSegments(t, crashed, memDir)
	last := segs[len(segs)-1]
	f, err := crashed.Open(last)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	whole := make([]byte, st.Size())
	if _, err := f.ReadAt(whole, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cut := st.Size() - 3 // the last batch loses its last bytes
	rewrite(t, crashed, last, whole[:cut])

	engine, err := memDump(crashed) // what the engine's own recovery holds
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reshard.Reshard(ctx, crashed, memDir, reshard.Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.DroppedTail
	if d == nil || d.File != last || d.Offset != pos.Offset || d.Bytes != cut-pos.Offset || rep.LogEnding != wal.EndStopped.String() {
		t.Fatalf("report: ending %q, dropped %+v; want %s from offset %d, %d bytes", rep.LogEnding, d, last, pos.Offset, cut-pos.Offset)
	}
	want := []reshard.DroppedShard{{Shard: 1, FirstLSN: secs[0].FirstLSN, LastLSN: secs[0].FirstLSN}, {Shard: 2, FirstLSN: secs[1].FirstLSN, LastLSN: secs[1].FirstLSN}}
	if !slices.Equal(d.Shards, want) || d.Batch == 0 {
		t.Fatalf("dropped batch %d, shards %+v; want %+v", d.Batch, d.Shards, want)
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"dropped_tail":{"file":"`) || !strings.Contains(string(js), `"first_lsn":`) {
		t.Fatalf("the JSON report lacks the dropped tail: %s", js)
	}
	after, err := memDump(crashed)
	if err != nil {
		t.Fatal(err)
	}
	if after != engine {
		t.Fatal("the resharded directory does not hold what the engine's recovery of the torn one holds")
	}
}

// TestReshardRefusesDamageBeforeTheCheckpoints: checkLog takes the log's
// end from the read of the tails only when that read was the whole log
// (the oldest checkpoint in the first segment). Here a checkpoint's
// removal of the segments before it did not happen (a crash between the
// two leaves this): the first segment is older than every checkpoint, so
// the tails' read starts after it, and a byte flipped in it is found only
// by the read of the whole log. The reshard must refuse, naming it.
func TestReshardRefusesDamageBeforeTheCheckpoints(t *testing.T) {
	const shards = 3
	mem := vfs.NewMem()
	ctx := context.Background()
	if _, err := sim.Generate(ctx, mem, memDir, sim.GenOptions{Shards: shards, Runs: 150, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	db, _, err := journal.Open(mem, memDir, journal.OpenOptions{SegmentSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // small segments: the log moves on to new ones
		shard := i % shards
		wf := idOn(t, fmt.Sprintf("later%d", i), shard, shards)
		if err := db.Commit([]journal.ShardOp{{Shard: shard, Op: model.Op{Kind: model.OpStart, Run: db.Shards[shard].NextRun,
			Rec: model.Record{Kind: model.KindStart, WorkflowID: wf, Type: "hand", Time: db.Now, Gen: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string][]byte{}
	for _, s := range walSegments(t, mem, memDir) {
		before[s] = readAll(t, mem, s)
	}
	if err := db.Checkpoint(); err != nil { // removes the segments before it
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs := walSegments(t, mem, memDir)
	var restored string // the segment just before the first one left
	for s := range before {
		if s < segs[0] && s > restored {
			restored = s
		}
	}
	if restored == "" {
		t.Fatalf("the checkpoint removed no segment (before %d, after %v)", len(before), segs)
	}
	data := before[restored]
	rewrite(t, mem, restored, data)
	if _, err := reshard.Reshard(ctx, mem, memDir, reshard.Options{Shards: 2, DryRun: true, Scratch: "/scratch"}); err != nil {
		t.Fatalf("with the segment back, undamaged: %v", err)
	}
	data[len(data)/2] ^= 0x08 // in a batch: segments are mostly batches
	rewrite(t, mem, restored, data)
	_, err = reshard.Reshard(ctx, mem, memDir, reshard.Options{Shards: 2})
	var de *reshard.DamagedError
	var ce *wal.CorruptError
	if !errors.As(err, &de) || !errors.As(err, &ce) || ce.File != restored {
		t.Fatalf("want the damage in %s refused, got %v", restored, err)
	}
}

func readAll(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}
