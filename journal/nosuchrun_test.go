package journal

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// NoSuchRun is never given to a run: Apply refuses to start it, even when
// it is the shard's next number, so the usable range ends one below.
func TestApplyRefusesNoSuchRun(t *testing.T) {
	s := NewShard(0, 1)
	s.NextRun = NoSuchRun - 1
	start := func(no RunNo) error {
		return s.Apply(&Op{Kind: OpStart, Run: no, Rec: Record{Kind: KindStart, WorkflowID: "a", Gen: 1}})
	}
	if err := start(NoSuchRun - 1); err != nil {
		t.Fatalf("start of the last usable number: %v", err)
	}
	if s.NextRun != NoSuchRun {
		t.Fatalf("next run %d, want NoSuchRun", s.NextRun)
	}
	for _, no := range []RunNo{NoSuchRun, NoSuchRun + 1} {
		if err := start(no); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("start of run %d: %v, want a refusal naming the reserved number", no, err)
		}
	}
	if _, ok := s.Runs[NoSuchRun]; ok || s.NextRun != NoSuchRun {
		t.Fatal("a refused start changed the shard")
	}
}

// The store loader refuses a run keyed NoSuchRun.
func TestLoadRefusesRunNoSuchRun(t *testing.T) {
	s := NewShard(0, 1)
	s.Runs[NoSuchRun] = &Run{No: NoSuchRun, WorkflowID: "a", Gen: 1, State: StateRunning,
		Journal: []Record{{Kind: KindStart, WorkflowID: "a", Gen: 1}}}
	s.NextRun = NoSuchRun + 1
	s.RebuildIndex()
	fs := vfs.NewMem()
	if err := WriteShardStore(fs, "/store", s, CheckpointHeader{}); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(fs, "/store", nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, err = loadShard(st, "/store", 0, 1)
	var se *StoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "reserved for references to no run") {
		t.Fatalf("loading a run keyed NoSuchRun: %v", err)
	}
}
