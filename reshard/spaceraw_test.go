package reshard

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/store"
)

// TestOldStoresMeasuredWithTheirHeaders: the old stores measured in the
// opens that read their headers (store.ReadHeadersRaw, what checkLog keeps
// for the space check) measure what a reader of each does
// (ShardReader.RawBytes, what the space check measured before): the
// space check's figure does not depend on which measured it. The engine
// wrote after gen, so each store holds a checkpoint in its write-ahead
// log as well as its tables (both parts of the figure).
func TestOldStoresMeasuredWithTheirHeaders(t *testing.T) {
	const shards = 3
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	if _, err := sim.Generate(ctx, vfs.Default, dir, sim.GenOptions{Shards: shards, Runs: 200, Seed: 8}); err != nil {
		t.Fatal(err)
	}
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		shard := i % shards
		wf := fmt.Sprintf("later-%d", i)
		for model.ShardOf(wf, shards) != shard {
			wf += "x"
		}
		if err := db.Commit([]journal.ShardOp{{Shard: shard, Op: model.Op{Kind: model.OpStart, Run: db.Shards[shard].NextRun,
			Rec: model.Record{Kind: model.KindStart, WorkflowID: wf, Type: "hand", Time: db.Now, Gen: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, raw, err := store.ReadHeadersRaw(ctx, vfs.Default, dir, shards)
	if err != nil {
		t.Fatal(err)
	}
	eachSource(t, dir, shards, func(i int, src shardSource) {
		want, err := src.RawBytes()
		if err != nil {
			t.Fatal(err)
		}
		if raw[i] != want || want == 0 {
			t.Errorf("shard %d: measured %d bytes with its header, %d by a reader", i, raw[i], want)
		}
	})
}
