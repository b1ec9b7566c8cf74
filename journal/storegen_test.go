package journal

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// A shard's StoreGen and its store header's gen agree: a store written
// from a shard gets the shard's generation, loading it gives the shard
// that generation back, and checkpoints keep it.
func TestStoreGenIsHeaderGen(t *testing.T) {
	if g := model.NewShard(0, 1).StoreGen; g != 1 {
		t.Fatalf("NewShard: store generation %d, want 1", g)
	}
	fs := vfs.NewMem()
	shards := []*model.Shard{model.NewShard(0, 2), model.NewShard(1, 2)}
	shards[0].StoreGen, shards[1].StoreGen = 5, 5 // a directory rebuilt four times
	db, err := CreateFrom(fs, "/d", shards, CreateOptions{Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, db *DB) {
		t.Helper()
		for i, s := range db.Shards {
			h, err := db.Header(i)
			if err != nil {
				t.Fatal(err)
			}
			if s.StoreGen != 5 || h.Gen != 5 {
				t.Errorf("%s: shard %d has store generation %d, its header %d; want 5", what, i, s.StoreGen, h.Gen)
			}
		}
	}
	check("created", db)
	ops := []ShardOp{{Shard: 1, Op: model.Op{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1, Time: 3}}}}
	if err := db.Commit(ops); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	check("checkpointed", db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, _, err = Open(fs, "/d", OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check("reopened", db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(model.DiffShards(model.NewShard(0, 1), shards[0]), "store generation 1 vs 5") {
		t.Errorf("DiffShards does not compare store generations")
	}
}
