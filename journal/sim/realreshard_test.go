package sim

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/reshard"
)

// realReshard runs the product's reshard on in-memory shards: it writes
// them as a data directory on an in-memory filesystem (at LSN 0, as a
// checkpointed directory), reshards that to n shards with package
// reshard, and recovers the result. The oracle compares what the engine
// does with it against the shards never resharded.
func realReshard(t testing.TB, old []*model.Shard, n int) []*model.Shard {
	t.Helper()
	fs := vfs.NewMem()
	cp := make([]*model.Shard, len(old))
	for i, s := range old {
		c := *s
		c.LSN = 0
		cp[i] = &c
	}
	db, err := journal.CreateFrom(fs, "/data", cp, journal.CreateOptions{})
	if err != nil {
		t.Fatalf("writing the shards to reshard: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := reshard.Reshard(context.Background(), fs, "/data", reshard.Options{Shards: n}); err != nil {
		t.Fatalf("reshard to %d: %v", n, err)
	}
	db, _, err = journal.Open(fs, "/data", journal.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("opening the resharded directory: %v", err)
	}
	defer db.Close()
	return db.Shards
}
