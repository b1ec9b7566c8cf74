package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// NoSuchRun is never given to a run: Apply refuses to start it, even when
// it is the shard's next number, so the usable range ends one below.
func TestApplyRefusesNoSuchRun(t *testing.T) {
	s := model.NewShard(0, 1)
	s.NextRun = model.NoSuchRun - 1
	start := func(no model.RunNo) error {
		return s.Apply(&model.Op{Kind: model.OpStart, Run: no, Rec: model.Record{Kind: model.KindStart, WorkflowID: "a", Gen: 1}})
	}
	if err := start(model.NoSuchRun - 1); err != nil {
		t.Fatalf("start of the last usable number: %v", err)
	}
	if s.NextRun != model.NoSuchRun {
		t.Fatalf("next run %d, want NoSuchRun", s.NextRun)
	}
	for _, no := range []model.RunNo{model.NoSuchRun, model.NoSuchRun + 1} {
		if err := start(no); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("start of run %d: %v, want a refusal naming the reserved number", no, err)
		}
	}
	if _, ok := s.Runs[model.NoSuchRun]; ok || s.NextRun != model.NoSuchRun {
		t.Fatal("a refused start changed the shard")
	}
}

// The store loader refuses a run keyed NoSuchRun.
func TestLoadRefusesRunNoSuchRun(t *testing.T) {
	s := model.NewShard(0, 1)
	s.Runs[model.NoSuchRun] = &model.Run{No: model.NoSuchRun, WorkflowID: "a", Gen: 1, State: model.StateRunning,
		Journal: []model.Record{{Kind: model.KindStart, WorkflowID: "a", Gen: 1}}}
	s.NextRun = model.NoSuchRun + 1
	s.RebuildIndex()
	fs := vfs.NewMem()
	if err := WriteShardStore(fs, "/store", s, model.CheckpointHeader{}); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(fs, "/store", nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, err = LoadShard(st, "/store", 0, 1)
	var se *StoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "reserved for references to no run") {
		t.Fatalf("loading a run keyed NoSuchRun: %v", err)
	}
}
