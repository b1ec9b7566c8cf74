package journal

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// renumberedShard is one shard holding two runs of workflow "a" as a
// reshard can leave them: generation 2 kept its number (2), generation 1
// was renumbered above it (3).
func renumberedShard(t *testing.T) *model.Shard {
	t.Helper()
	s := model.NewShard(0, 1)
	for _, op := range []model.Op{
		{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1, Time: 1}},
		{Kind: model.OpAppend, Run: 1, Rec: model.Record{Kind: model.KindDone, Pos: 1, Status: model.StatusOK, Time: 2}},
		{Kind: model.OpStart, Run: 2, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 2, Time: 3}},
	} {
		if err := s.Apply(&op); err != nil {
			t.Fatal(err)
		}
	}
	r := s.Runs[1]
	delete(s.Runs, 1)
	r.No, r.Renumbered = 3, true
	s.Runs[3] = r
	s.NextRun = 4
	s.RebuildIndex()
	return s
}

// The ID index names an ID's highest generation, not its highest run
// number: after a reshard renumbered an older run above a newer one,
// stores write and load, lookups find the newer run, and a new run of the
// ID takes the index over.
func TestIndexIsHighestGeneration(t *testing.T) {
	s := renumberedShard(t)
	if got := s.Latest("a"); got == nil || got.Gen != 2 || got.No != 2 {
		t.Fatalf("after RebuildIndex: latest of a is %+v, want generation 2 (run 2)", got)
	}
	fs := vfs.NewMem()
	db, err := CreateFrom(fs, "/d", []*model.Shard{s}, CreateOptions{Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Shards[0].Latest("a"); got == nil || got.No != 2 {
		t.Fatalf("loaded: latest of a is %+v, want run 2", got)
	}
	// A start of a lower generation (no engine does this, but the index
	// rule decides it) does not take the index.
	lower := model.Op{Kind: model.OpStart, Run: 4, Rec: model.Record{Kind: model.KindStart, WorkflowID: "b", Gen: 5, Time: 4}}
	if err := db.Commit([]ShardOp{{Op: lower}, {Op: model.Op{Kind: model.OpStart, Run: 5, Rec: model.Record{Kind: model.KindStart, WorkflowID: "b", Gen: 4, Time: 4}}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit([]ShardOp{{Op: model.Op{Kind: model.OpAppend, Run: 2, Rec: model.Record{Kind: model.KindDone, Pos: 1, Status: model.StatusOK, Time: 5}}},
		{Op: model.Op{Kind: model.OpStart, Run: 6, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 3, Time: 5}}}}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, s *model.Shard) {
		t.Helper()
		if got := s.ByID["a"]; got != 6 {
			t.Errorf("%s: index of a is run %d, want 6 (generation 3)", what, got)
		}
		if got := s.ByID["b"]; got != 4 {
			t.Errorf("%s: index of b is run %d, want 4 (generation 5)", what, got)
		}
	}
	check("applied", db.Shards[0])
	// Once through the log (recovery replays Apply) and once through a
	// checkpoint (the stored index must equal the derived one).
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cp := range []bool{false, true} {
		db, _, err := Open(fs, "/d", OpenOptions{})
		if err != nil {
			t.Fatalf("reopen (checkpointed %v): %v", cp, err)
		}
		check("recovered", db.Shards[0])
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// WriteShardStore refuses a shard whose index is not the one its runs
// imply, rather than write a store that recovery would refuse.
func TestWriteShardStoreRefusesStaleIndex(t *testing.T) {
	s := renumberedShard(t)
	s.ByID["a"] = 3 // the highest number, an older generation
	err := store.WriteShardStore(vfs.NewMem(), "/store", s, model.CheckpointHeader{Gen: 1})
	if err == nil || !strings.Contains(err.Error(), "highest generation is run 2") {
		t.Fatalf("WriteShardStore with a stale index: %v", err)
	}
}
