package store

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// TestBuildRunRoundTrip: a run's build-layout value decodes to the run,
// and its parts are the run entry's and the archive's encodings.
func TestBuildRunRoundTrip(t *testing.T) {
	s := benchShard(t, 30)
	for _, r := range s.SortedRuns() {
		v := EncodeBuildRun(nil, r)
		got, err := DecodeBuildRun(r.No, v)
		if err != nil {
			t.Fatalf("run %d: %v", r.No, err)
		}
		if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", *r) {
			t.Fatalf("run %d decodes to %+v, want %+v", r.No, got, r)
		}
		entry, _, history, err := SplitBuildRun(v)
		e := model.EntryOf(r)
		if err != nil || string(entry) != string(model.EncodeRunEntry(nil, &e)) || string(history) != string(model.EncodeHistory(nil, r.Journal)) {
			t.Fatalf("run %d: split into %x and %x (%v)", r.No, entry, history, err)
		}
	}
}

// TestBuildRunRefusesDamage: a value whose entry names another record
// count than its history holds, or that is cut short, is refused.
func TestBuildRunRefusesDamage(t *testing.T) {
	s := benchShard(t, 3)
	r := s.Runs[1]
	v := EncodeBuildRun(nil, r)
	for cut := 0; cut < len(v); cut += 7 {
		if _, err := DecodeBuildRun(1, v[:cut]); err == nil {
			t.Errorf("a value cut to %d of %d bytes decoded", cut, len(v))
		}
	}
	short := *r
	short.Journal = r.Journal[:len(r.Journal)-1]
	e := model.EntryOf(r)
	bad := binary.AppendUvarint(nil, uint64(len(model.EncodeRunEntry(nil, &e))))
	bad = model.EncodeHistory(model.EncodeRunEntry(bad, &e), short.Journal)
	if _, err := DecodeBuildRun(1, bad); err == nil {
		t.Error("a value with one record fewer than its entry says decoded")
	}
}

// TestFinishBuildEqualsWriteShardStore: a build-layout store of a shard,
// rewritten by FinishBuild, holds the keys and values WriteShardStore
// writes for the shard.
func TestFinishBuildEqualsWriteShardStore(t *testing.T) {
	fs := vfs.NewMem()
	s := benchShard(t, 200)
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
