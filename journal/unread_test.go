package journal

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/journal/model"
)

// A run tombstoned while evicted, which the shard saw finish, is
// tombstoned without reading its entry (model.Shard.Unread); EachRun
// before the next checkpoint shows it tombstoned, and a checkpoint
// writes it and its archive, in the store layout and the build layout.
func TestUnreadTombstone(t *testing.T) {
	for _, build := range []bool{false, true} {
		for _, each := range []bool{false, true} {
			fs := vfs.NewMem()
			db, err := Create(fs, "/d", CreateOptions{Shards: 1, Now: 100, NoSync: true, Build: build})
			if err != nil {
				t.Fatal(err)
			}
			db.SetEvict()
			ops := []ShardOp{
				{Op: model.Op{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1, Type: "t"}}},
				{Op: model.Op{Kind: model.OpAppend, Run: 1, Rec: model.Record{Kind: model.KindStep, Pos: 1, Name: "s"}}},
				{Op: model.Op{Kind: model.OpAppend, Run: 1, Rec: model.Record{Kind: model.KindDone, Pos: 2, Status: model.StatusOK}}},
			}
			if err := db.Commit(ops); err != nil {
				t.Fatal(err)
			}
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			if err := db.Commit([]ShardOp{{Op: model.Op{Kind: model.OpTombstone, Run: 1}}}); err != nil {
				t.Fatal(err)
			}
			if !db.Shards[0].Unread(1) {
				t.Fatalf("build %v: the tombstone of run 1, seen to finish, read its entry", build)
			}
			if each {
				var states []model.RunState
				if err := db.EachRun(0, func(r *model.Run) error { states = append(states, r.State); return nil }); err != nil {
					t.Fatal(err)
				}
				if len(states) != 1 || states[0] != model.StateTombstone {
					t.Errorf("build %v: EachRun saw %v, want [tombstone]", build, states)
				}
			}
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, _, err = Open(fs, "/d", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := db.Shards[0].Runs[1]
			if r == nil || r.State != model.StateTombstone || len(db.Shards[0].Archive[1]) != 3 {
				t.Errorf("build %v, EachRun %v: after the checkpoint run 1 is %+v with %d archived records; want tombstoned, 3",
					build, each, r, len(db.Shards[0].Archive[1]))
			}
			db.Close()
		}
	}
}
