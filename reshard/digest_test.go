package reshard

import (
	"bytes"
	"encoding/binary"
	"testing"

	"pgregory.net/rapid"

	"github.com/fusee-dev/fusee/journal/model"
)

// run adds a decoded run, its journal and its archive to d, every record
// through the decode path (canon.record): the oracle the digest of runs
// read as bytes (rawRun) is compared with.
func (c *canon) run(d *digest, shard int, r *model.Run, archive []model.Record) {
	if d == nil {
		return
	}
	e := model.EntryOf(r)
	c.runItem(&e, len(r.Journal))
	for _, rec := range r.Journal {
		c.record(shard, rec)
	}
	d.add(runKind(r.State), c.b)
	d.counts[itemRecord] += int64(len(r.Journal))
	if archive != nil {
		c.archiveOf(shard, r.No)
		for _, rec := range archive {
			c.record(shard, rec)
		}
		d.add(itemArchive, c.b)
	}
}

// oldCanonRecord is a record's canonical bytes as the digest made them
// before references were rewritten in place: decode, map every reference
// through canon.ref (identities first), clear the token generation,
// encode.
func oldCanonRecord(id identityFunc, keyShard int, rec []byte) ([]byte, error) {
	r, err := model.DecodeRecord(rec)
	if err != nil {
		return nil, err
	}
	c := &canon{id: id}
	r.MapRefs(keyShard, c.ref)
	clearTokenGen(&r)
	return model.EncodeRecord(c.b, &r), c.err
}

// drawRecord draws a record with any of its run references set (and a few
// other fields), as EncodeRecord writes it.
func drawRecord(t *rapid.T) model.Record {
	run := func(label string) model.RunNo {
		return model.RunNo(rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64Range(1, 50), rapid.Just(uint64(noSuchRun))).Draw(t, label))
	}
	shard := func(label string) int { return rapid.IntRange(0, 1023).Draw(t, label) }
	r := model.Record{
		Kind:       model.Kind(rapid.IntRange(1, int(model.KindDone)).Draw(t, "kind")),
		Pos:        rapid.Uint32Range(0, 300).Draw(t, "pos"),
		Time:       rapid.Int64().Draw(t, "time"),
		WorkflowID: rapid.StringN(0, 12, -1).Draw(t, "wf"),
		Name:       rapid.StringN(0, 6, -1).Draw(t, "name"),
		Gen:        rapid.Uint32Range(0, 3).Draw(t, "gen"),
		ParentID:   rapid.StringN(0, 12, -1).Draw(t, "parentID"),
		Payload:    rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "payload"),
	}
	if n := run("parent"); n != 0 {
		r.Parent = model.ParentRef{Shard: shard("parentShard"), Run: n, Pos: rapid.Uint32().Draw(t, "parentPos")}
	}
	if n := run("pred"); n != 0 {
		r.Pred = model.RunRef{Shard: shard("predShard"), Run: n}
	}
	if n := run("next"); n != 0 {
		r.Next = model.RunRef{Shard: shard("nextShard"), Run: n}
	}
	if n := run("by"); n != 0 {
		r.By = model.RunRef{Shard: shard("byShard"), Run: n}
	}
	if wf := rapid.StringN(0, 8, -1).Draw(t, "keyWF"); wf != "" {
		r.Key = model.CtxKey{WorkflowID: wf, Run: run("key"), Pos: rapid.Uint32().Draw(t, "keyPos")}
	}
	if n := run("token"); n != 0 {
		r.Token = model.Token{Gen: uint8(rapid.IntRange(0, 63).Draw(t, "tokenGen")), Shard: shard("tokenShard"), Run: n, Pos: rapid.Uint32().Draw(t, "tokenPos")}
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r
}

// TestRecordCanonMatchesDecode: for random records and identities (some
// references dangling, some to NoSuchRun), the record part of a digest
// item built from the encoded bytes (canon.rawRecord) is the length and
// then exactly the canonical bytes the decode path made (oldCanonRecord),
// and canon.record gives the same.
func TestRecordCanonMatchesDecode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := drawRecord(t)
		enc := model.EncodeRecord(nil, &rec)
		keyShard := rapid.IntRange(0, 1023).Draw(t, "keyShard")
		salt := rapid.Uint64().Draw(t, "salt")
		id := func(ref model.RunRef) (uint64, bool, error) {
			v := (uint64(ref.Shard)<<48 | uint64(ref.Run)) * (salt | 1)
			return v, v%5 != 0, nil
		}
		want, err := oldCanonRecord(id, keyShard, enc)
		if err != nil {
			t.Fatal(err)
		}
		want = append(binary.AppendUvarint([]byte("item"), uint64(len(want))), want...)
		h, err := model.ScanRecord(enc)
		if err != nil {
			t.Fatal(err)
		}
		c := &canon{id: id, b: []byte("item")}
		c.rawRecord(keyShard, enc, &h)
		if !bytes.Equal(c.b, want) {
			t.Fatalf("record %+v:\nin place %x\ndecoded  %x", rec, c.b, want)
		}
		c.b = append(c.b[:0], "item"...)
		c.record(keyShard, rec)
		if !bytes.Equal(c.b, want) {
			t.Fatalf("record %+v:\ncanon.record %x\ndecoded      %x", rec, c.b, want)
		}
	})
}
