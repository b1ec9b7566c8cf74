package sim

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// streamedShard reads shard i of a closed directory with a ShardReader
// into a *model.Shard.
func streamedShard(t *testing.T, fs vfs.FS, dir string, i, n int, tail *store.ShardTail) *model.Shard {
	t.Helper()
	sr, err := store.OpenShardReader(fs, dir, i, n, tail)
	if err != nil {
		t.Fatalf("shard %d: %v", i, err)
	}
	defer sr.Close()
	s := model.NewShard(i, n)
	h := sr.Header()
	s.LSN, s.NextRun, s.NextSeq = h.LSN, h.NextRun, h.NextSeq
	errs := []error{
		sr.Runs(context.Background(), func(r *model.Run, archive []model.Record) error {
			s.Runs[r.No] = r
			if archive != nil {
				s.Archive[r.No] = archive
			}
			return nil
		}),
		sr.Outbox(func(m *model.Message) error { s.Outbox[m.ID] = m; return nil }),
		sr.Seen(func(id, wf string) error { s.Seen[id] = wf; return nil }),
		sr.Index(func(id string, no model.RunNo) error { s.ByID[id] = no; return nil }),
		sr.Timers(func(k model.TimerKey) error { s.Timers[k] = struct{}{}; return nil }),
		sr.Close(),
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("streaming shard %d: %v", i, err)
		}
	}
	return s
}

// TestShardReaderOnGeneratedDir: a directory written by gen, whose last
// busy rounds are logged after its last checkpoint, streams shard by shard
// to exactly what RecoverShard recovers.
func TestShardReaderOnGeneratedDir(t *testing.T) {
	fs := vfs.NewMem()
	const n = 3
	_, err := Generate(context.Background(), fs, "/d", GenOptions{Shards: n, Runs: 2000, Seed: 7, TailRounds: 20})
	if err != nil {
		t.Fatal(err)
	}
	hdrs := make([]model.CheckpointHeader, n)
	for i := range hdrs {
		if hdrs[i], err = store.ReadHeader(fs, "/d", i, n); err != nil {
			t.Fatal(err)
		}
	}
	tails, trep, err := journal.ReadTails(context.Background(), fs, "/d", hdrs)
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for i := range n {
		want, _, _, err := journal.RecoverShard(fs, "/d", i, n)
		if err != nil {
			t.Fatal(err)
		}
		if d := model.DiffShards(streamedShard(t, fs, "/d", i, n, &tails[i]), want); d != "" {
			t.Fatalf("shard %d: streamed vs RecoverShard:\n%s", i, d)
		}
		entries += len(tails[i].Entries)
	}
	if entries == 0 {
		t.Fatalf("gen left no log tail (%+v): the test would prove little", trep.Shards)
	}
	t.Logf("tails: %d entries over %d batches", entries, trep.Batches)
}
