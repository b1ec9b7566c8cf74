package check

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestExtraStoreFindings(t *testing.T) {
	fs := vfs.NewMem()
	for _, d := range []string{"d/shards/0000", "d/shards/0001", "d/shards/0002", "d/shards/0003", "d/shards/0010", "d/shards/tmp", "d/shards/12"} {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := ExtraStoreFindings(fs, "d", 2)
	if len(got) != 3 {
		t.Fatalf("%d findings, want 3 (0002, 0003, 0010): %v", len(got), got)
	}
	for i, want := range []string{"d/shards/0002", "d/shards/0003", "d/shards/0010"} {
		if got[i].Kind != KindExtraStore || got[i].Severity != SeverityWarning || got[i].Detail[:len(want)] != want {
			t.Errorf("finding %d: %+v, want %s", i, got[i], want)
		}
	}
	if f := ExtraStoreFindings(fs, "d", 11); len(f) != 0 {
		t.Errorf("with 11 shards: %v", f)
	}
}
