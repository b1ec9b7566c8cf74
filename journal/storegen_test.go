package journal

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
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

// WriteShardStore refuses a header generation other than the shard's, and
// a shard without one.
func TestWriteShardStoreRefusesOtherGen(t *testing.T) {
	s := model.NewShard(0, 1)
	if err := store.WriteShardStore(vfs.NewMem(), "/s", s, model.CheckpointHeader{Gen: 2}); err == nil {
		t.Error("a header gen other than the shard's StoreGen was accepted")
	}
	s.StoreGen = 0
	if err := store.WriteShardStore(vfs.NewMem(), "/s", s, model.CheckpointHeader{}); err == nil {
		t.Error("a shard of store generation 0 was accepted")
	}
}

// The record codec puts a token's generation above its 10 shard bits in
// one uvarint, and refuses a value of more than 16 bits there.
func TestTokenCodec(t *testing.T) {
	rec := model.Record{Kind: model.KindAsync, Pos: 1, Token: model.Token{Gen: 3, Shard: 2, Run: 7, Pos: 1}}
	enc := model.EncodeRecord(nil, &rec)
	// kind, mask (3 bytes: bits 0 and 17), pos, then the token.
	tok := enc[1+3+1:]
	if v, n := binary.Uvarint(tok); n <= 0 || v != 3<<10|2 {
		t.Fatalf("token's first uvarint is %#x, want gen<<10|shard = %#x", v, 3<<10|2)
	}
	if got, err := model.DecodeRecord(enc); err != nil || got.Token != rec.Token {
		t.Fatalf("decoded %+v, %v; want %+v", got.Token, err, rec.Token)
	}
	bad := binary.AppendUvarint(append([]byte(nil), enc[:1+3+1]...), 1<<16)
	bad = binary.AppendUvarint(binary.AppendUvarint(bad, 7), 1)
	if _, err := model.DecodeRecord(bad); err == nil || !strings.Contains(err.Error(), "more than 16 bits") {
		t.Fatalf("a token with 17 bits of generation and shard: %v", err)
	}
}
