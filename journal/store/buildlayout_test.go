package store

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// buildShard is benchShard with every finished run of the first half
// tombstoned, so that it has archives too.
func buildShard(t *testing.T, runs int) *model.Shard {
	s := benchShard(t, runs)
	for no := model.RunNo(1); no <= model.RunNo(runs/2); no++ {
		if s.Runs[no].State == model.StateFinished {
			if err := s.Apply(&model.Op{Kind: model.OpTombstone, Run: no}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// buildKeys is run r's build-layout entry and journal values (nil: no
// journal key).
func buildKeys(r *model.Run) (entry, history []byte) {
	e := model.EntryOf(r)
	if len(r.Journal) > 0 {
		history = model.EncodeHistory(nil, r.Journal)
	}
	return model.EncodeRunEntry(nil, &e), history
}

// TestBuildRunRoundTrip: a run's build-layout keys decode to the run.
func TestBuildRunRoundTrip(t *testing.T) {
	s := buildShard(t, 30)
	for _, r := range s.SortedRuns() {
		entry, history := buildKeys(r)
		got, err := DecodeBuildRun(r.No, entry, history)
		if err != nil {
			t.Fatalf("run %d: %v", r.No, err)
		}
		if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", *r) {
			t.Fatalf("run %d decodes to %+v, want %+v", r.No, got, r)
		}
	}
}

// TestBuildRunRefusesDamage: a journal value cut short, one with another
// record count than its entry says, a missing journal and a journal for a
// run without records are refused.
func TestBuildRunRefusesDamage(t *testing.T) {
	s := buildShard(t, 6)
	r := s.Runs[4] // parked, with records
	entry, history := buildKeys(r)
	for cut := 0; cut < len(history); cut += 7 {
		if _, err := DecodeBuildRun(4, entry, history[:cut]); err == nil {
			t.Errorf("a journal cut to %d of %d bytes decoded", cut, len(history))
		}
	}
	if _, err := DecodeBuildRun(4, entry, model.EncodeHistory(nil, r.Journal[:len(r.Journal)-1])); err == nil {
		t.Error("a journal of one record fewer than the entry says decoded")
	}
	if _, err := DecodeBuildRun(4, entry, nil); err == nil {
		t.Error("a run with records and no journal decoded")
	}
	tomb := s.Runs[3]
	if tomb.State != model.StateTombstone {
		t.Fatalf("run 3 is %s", tomb.State)
	}
	tentry, _ := buildKeys(tomb)
	if _, err := DecodeBuildRun(3, tentry, history); err == nil {
		t.Error("a tombstone with a journal decoded")
	}
}

// TestFinishBuildEqualsWriteShardStore: a build-layout store of a shard,
// rewritten by FinishBuild, holds the keys and values WriteShardStore
// writes for the shard.
func TestFinishBuildEqualsWriteShardStore(t *testing.T) {
	fs := vfs.NewMem()
	s := buildShard(t, 200)
	if len(s.Archive) == 0 {
		t.Fatal("no archive: the test needs tombstones")
	}
	hdr := HeaderFor(s, model.CheckpointHeader{Now: 9, Created: 1, Seq: 3})
	work, err := OpenStore(fs, "/work", nil, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	b := work.NewBatch()
	if err := WriteBuildChanges(b, work, s, &hdr); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := FinishBuild(fs, work, "/work", "/final"); err != nil {
		t.Fatal(err)
	}
	if err := WriteShardStore(fs, "/want", s, hdr); err != nil {
		t.Fatal(err)
	}
	got, want := dumpStore(t, fs, "/final"), dumpStore(t, fs, "/want")
	if got != want {
		t.Fatalf("FinishBuild's store differs from WriteShardStore's (%d vs %d bytes of dump)", len(got), len(want))
	}
}

func dumpStore(t *testing.T, fs vfs.FS, path string) string {
	st, err := OpenStore(fs, path, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	it, err := st.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for ok := it.First(); ok; ok = it.Next() {
		out = fmt.Appendf(out, "%q=%x\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return string(out)
}
