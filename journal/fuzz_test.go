package journal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
)

// The fuzz targets of this file decode what the log and the shard stores
// hand back: bytes a damaged disk, a bug or a hostile file could have
// changed. Run one with
//
//	go test -run XXX -fuzz '^FuzzDecodeOp$' -fuzztime 60s ./journal/
//
// (FuzzDecodeOp, FuzzDecodeRecord, FuzzStoreEntry, FuzzParseToken). Under a
// plain go test their seeds, taken from a small simulated data directory,
// run as ordinary tests.
//
// The encodings are not canonical, so the round trip cannot ask that a
// decoded value re-encode to the bytes it came from: varints admit
// non-minimal spellings (0x80 0x00 is 0), a Record field may be flagged
// present with a zero value (the encoder leaves zero fields out), and
// numbers decoded into narrower fields (uint32 positions, uint8 statuses)
// keep only their low bits. What the targets ask instead is that the
// decoded value survives its own encoding, decode(encode(decode(x))) ==
// decode(x), and that the encoder's form is never longer than the input
// (it is the minimal spelling). Each decoder must also fill its input
// exactly: a byte more is refused, and so is the input cut one byte short.
//
// One exception, found by FuzzDecodeRecord: a Record reference (Parent,
// Pred, Next, By, Token) flagged present with run 0, or a Key flagged
// present with no workflow ID, decodes with its other fields set (say
// Parent{Shard: 48, Run: 0, Pos: 48}), but such a reference is "none"
// (IsZero; the dump and verify read it so too) and the encoder leaves it
// out, so it comes back all zero. Nothing reads the dead fields, and the
// package compares records by their encoding (DiffShards), under which
// both are equal; so the round trip compares records with their dead
// references cleared (clearDeadRefs), and any other loss still fails.

// FuzzDecodeOp: DecodeOp never panics; an op it accepts survives
// EncodeOp, in no more bytes, and the input is neither extendable nor
// cuttable.
func FuzzDecodeOp(f *testing.F) {
	s := seeds(f)
	for _, op := range s.ops {
		f.Add(op)
	}
	for _, op := range []model.Op{
		{Kind: model.OpAck, MsgID: "m1"},
		{Kind: model.OpSeen, MsgID: "m2", WorkflowID: "wf-2"},
		{Kind: model.OpTombstone, Run: model.MaxRunNo},
		{Kind: model.OpStart, Run: 1, Rec: model.Record{Kind: model.KindStart, WorkflowID: "wf-1", Type: "order", Time: 1000,
			Parent: model.ParentRef{Shard: 3, Run: 9, Pos: 4}, ParentID: "p", Pred: model.RunRef{Shard: 1, Run: 2}, Origin: model.OriginChild, Gen: 2}},
	} {
		f.Add(model.EncodeOp(nil, &op))
	}
	f.Add([]byte{})
	f.Add([]byte{byte(model.OpPark), 0x80, 0x80, 0x00}) // a non-minimal varint
	f.Add([]byte{byte(model.OpAck), 5, 'a'})            // a string cut short
	f.Add([]byte{9, 0})                                 // an unknown kind
	f.Fuzz(func(t *testing.T, data []byte) {
		op, err := model.DecodeOp(data)
		if err != nil {
			return
		}
		canon := model.EncodeOp(nil, &op)
		again, err := model.DecodeOp(canon)
		if err != nil {
			t.Fatalf("DecodeOp(EncodeOp(%+v)): %v", op, err)
		}
		clearDeadRefs(&op.Rec)
		if !reflect.DeepEqual(again, op) {
			t.Fatalf("the op does not survive its encoding:\n  in %x\n got %+v\nthen %+v", data, op, again)
		}
		if len(canon) > len(data) {
			t.Fatalf("the encoder's form %x is longer than the input %x", canon, data)
		}
		if _, err := model.DecodeOp(append(bytes.Clone(data), 0)); err == nil {
			t.Fatalf("DecodeOp accepts %x with a byte more", data)
		}
		if _, err := model.DecodeOp(data[:len(data)-1]); err == nil {
			t.Fatalf("DecodeOp accepts %x cut one byte short", data)
		}
	})
}

// FuzzDecodeRecord: the same for DecodeRecord, the journal records that
// ops carry and that run keys and archives store.
func FuzzDecodeRecord(f *testing.F) {
	s := seeds(f)
	for _, rec := range s.records {
		f.Add(rec)
	}
	f.Add([]byte{byte(model.KindStep), 0})
	f.Add([]byte{byte(model.KindStep), 0x81, 0x00, 0x80, 0x00}) // Pos present, zero, non-minimal
	f.Add([]byte{0, 0})
	// The input that found the dead references: Parent flagged present
	// with shard 48, run 0, position 48.
	f.Add([]byte("\x09\xc1\x30\x30\x04\x30\x30\x30\x30\x30\x30\x00\x30"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := model.DecodeRecord(data)
		if err != nil {
			return
		}
		canon := model.EncodeRecord(nil, &rec)
		again, err := model.DecodeRecord(canon)
		if err != nil {
			t.Fatalf("DecodeRecord(EncodeRecord(%+v)): %v", rec, err)
		}
		clearDeadRefs(&rec)
		if !reflect.DeepEqual(again, rec) {
			t.Fatalf("the record does not survive its encoding:\n  in %x\n got %+v\nthen %+v", data, rec, again)
		}
		if len(canon) > len(data) {
			t.Fatalf("the encoder's form %x is longer than the input %x", canon, data)
		}
		if _, err := model.DecodeRecord(append(bytes.Clone(data), 0)); err == nil {
			t.Fatalf("DecodeRecord accepts %x with a byte more", data)
		}
		if _, err := model.DecodeRecord(data[:len(data)-1]); err == nil {
			t.Fatalf("DecodeRecord accepts %x cut one byte short", data)
		}
	})
}

// FuzzStoreEntry: a shard store's key and value. ParseStoreKey never
// panics, and a key it accepts is canonical: the key built again from its
// fields is the same bytes (every layout is fixed-width or a raw string).
// The value is decoded as loadKey decodes it for the key's kind (by the
// key's first byte, whether or not the rest of the key parses, so that the
// value decoders are reached without a valid key): never a panic, and a
// decoded value survives its encoding as FuzzDecodeOp asks of ops.
func FuzzStoreEntry(f *testing.F) {
	s := seeds(f)
	for _, kv := range s.store {
		f.Add(kv[0], kv[1])
	}
	f.Add([]byte{store.KeyHeader}, model.EncodeHeader(nil, &model.CheckpointHeader{Version: model.StoreVersion, Count: 1, NextRun: 1, NextSeq: 1, Gen: 1}))
	f.Add([]byte{store.KeyHeader}, []byte{1})
	f.Add(store.SeenKey(""), model.EncodeSeenValue(nil, "wf"))
	f.Add(store.IndexKey("wf"), []byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(store.TimerKeyBytes(model.TimerKey{At: -5, Run: 1, Pos: 2}), []byte{})
	f.Add(store.RunKey(0), []byte{})
	f.Add([]byte("Zebra"), []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if k, err := store.ParseStoreKey(key); err == nil {
			_ = k.String()
			if again := storeKey(k); !bytes.Equal(again, key) {
				t.Fatalf("store key %x parses to %+v, which builds %x", key, k, again)
			}
		}
		if len(key) == 0 {
			return
		}
		switch key[0] {
		case store.KeyHeader:
			roundTrip(t, value, model.DecodeHeader, func(h model.CheckpointHeader) []byte { return model.EncodeHeader(nil, &h) })
		case store.KeyArchive:
			decode := func(p []byte) ([]model.Record, error) {
				recs, err := model.DecodeHistory(p)
				for i := range recs {
					clearDeadRefs(&recs[i])
				}
				return recs, err
			}
			roundTrip(t, value, decode, func(recs []model.Record) []byte { return model.EncodeHistory(nil, recs) })
		case store.KeyIndex:
			roundTrip(t, value, model.DecodeIndexValue, func(no model.RunNo) []byte { return binary.BigEndian.AppendUint64(nil, uint64(no)) })
			if _, err := model.DecodeIndexValue(value); err == nil && len(value) != 8 {
				t.Fatalf("an index value of %d bytes", len(value))
			}
		case store.KeyOutbox:
			var seq uint64
			if len(key) == 9 {
				seq = binary.BigEndian.Uint64(key[1:])
			}
			decode := func(p []byte) (model.Message, error) {
				m, err := model.DecodeMessage(p, seq)
				if err != nil {
					return model.Message{}, err
				}
				if m.Seq != seq {
					t.Fatalf("DecodeMessage(.., %d) gave seq %d", seq, m.Seq)
				}
				return *m, nil
			}
			roundTrip(t, value, decode, func(m model.Message) []byte { return model.EncodeMessage(nil, &m) })
		case store.KeySeen:
			roundTrip(t, value, model.DecodeSeenValue, func(wf string) []byte {
				if wf == "" {
					t.Fatalf("DecodeSeenValue(%x) accepted an empty workflow ID", value)
				}
				return model.EncodeSeenValue(nil, wf)
			})
		case store.KeyRun:
			if len(key) == 13 {
				decode := func(p []byte) (model.Record, error) {
					r, err := model.DecodeRecord(p)
					clearDeadRefs(&r)
					return r, err
				}
				roundTrip(t, value, decode, func(r model.Record) []byte { return model.EncodeRecord(nil, &r) })
			} else {
				roundTrip(t, value, model.DecodeRunEntry, func(e model.RunEntry) []byte { return model.EncodeRunEntry(nil, &e) })
			}
		}
	})
}

// clearDeadRefs zeroes the references of r that name no run (and a Key
// with no workflow ID): the encoder leaves them out whatever their other
// fields hold. See the comment at the top of the file.
func clearDeadRefs(r *model.Record) {
	if r.Parent.IsZero() {
		r.Parent = model.ParentRef{}
	}
	for _, ref := range []*model.RunRef{&r.Pred, &r.Next, &r.By} {
		if ref.IsZero() {
			*ref = model.RunRef{}
		}
	}
	if r.Token.Run == 0 {
		r.Token = model.Token{}
	}
	if r.Key.WorkflowID == "" {
		r.Key = model.CtxKey{}
	}
}

// roundTrip checks a decoder on value: a decoded value survives its
// encoding in no more bytes, and the decoder refuses a byte more or less.
func roundTrip[T any](t *testing.T, value []byte, decode func([]byte) (T, error), encode func(T) []byte) {
	t.Helper()
	v, err := decode(value)
	if err != nil {
		return
	}
	canon := encode(v)
	again, err := decode(canon)
	if err != nil {
		t.Fatalf("decoding the encoding of %+v: %v", v, err)
	}
	if !reflect.DeepEqual(again, v) {
		t.Fatalf("the value does not survive its encoding:\n  in %x\n got %+v\nthen %+v", value, v, again)
	}
	if len(canon) > len(value) {
		t.Fatalf("the encoder's form %x is longer than the input %x", canon, value)
	}
	if _, err := decode(append(bytes.Clone(value), 0)); err == nil {
		t.Fatalf("the decoder accepts %x with a byte more", value)
	}
	if len(value) > 0 {
		if _, err := decode(value[:len(value)-1]); err == nil {
			t.Fatalf("the decoder accepts %x cut one byte short", value)
		}
	}
}

// storeKey builds the key of a parsed store key with the package's key
// functions.
func storeKey(k store.StoreKey) []byte {
	switch k.Kind {
	case store.KeyArchive:
		return store.ArchiveKey(k.Run)
	case store.KeyHeader:
		return []byte{store.KeyHeader}
	case store.KeyIndex:
		return store.IndexKey(k.ID)
	case store.KeyOutbox:
		return store.OutboxKey(k.Seq)
	case store.KeyRun:
		if k.IsRecord {
			return store.RecordKey(k.Run, k.Pos)
		}
		return store.RunKey(k.Run)
	case store.KeySeen:
		return store.SeenKey(k.ID)
	case store.KeyTimer:
		return store.TimerKeyBytes(model.TimerKey{At: k.At, Run: k.Run, Pos: k.Pos})
	}
	return nil
}

// FuzzParseToken: ParseToken never panics, and a token it accepts is
// written back by String as it was given, but in lowercase: the hex
// decoder accepts upper-case digits, String writes lower-case ones (so the
// token of an id is not case-sensitive, and String is the canonical form).
// The canonical form parses to the same token.
func FuzzParseToken(f *testing.F) {
	s := seeds(f)
	for _, tk := range s.tokens {
		f.Add(tk)
	}
	for _, tk := range []string{
		"tk000000000000000000000000",
		"tk03ffffffffffffffffffffff",
		"tk03FFFFFFFFFFFFFFFFFFFFFF",
		"tk04000000000000000000000000",
		"tkff0000000000000000000000",
		"TK000000000000000000000000",
		"tkzz0000000000000000000000",
		"",
	} {
		f.Add(tk)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tk, err := model.ParseToken(in)
		if err != nil {
			return
		}
		if tk.Gen > 63 || tk.Shard < 0 || tk.Shard > 1023 || tk.Run > model.MaxRunNo {
			t.Fatalf("ParseToken(%q) = %+v, out of range", in, tk)
		}
		out := tk.String()
		if out != strings.ToLower(in) {
			t.Fatalf("ParseToken(%q).String() = %q", in, out)
		}
		if again, err := model.ParseToken(out); err != nil || again != tk {
			t.Fatalf("ParseToken(%q) = %+v, %v; want %+v", out, again, err, tk)
		}
	})
}

// fuzzSeeds are real encodings, taken from a small directory the simulated
// engine writes: log entries, the records they carry, store keys with their
// values, and completion tokens.
type fuzzSeeds struct {
	ops, records [][]byte
	store        [][2][]byte
	tokens       []string
}

var (
	seedOnce sync.Once
	seedData fuzzSeeds
	seedErr  error
)

// seeds generates the directory once per test binary.
func seeds(tb testing.TB) *fuzzSeeds {
	tb.Helper()
	seedOnce.Do(func() { seedData, seedErr = makeSeeds() })
	if seedErr != nil {
		tb.Fatal(seedErr)
	}
	if len(seedData.ops) == 0 || len(seedData.records) == 0 || len(seedData.store) == 0 || len(seedData.tokens) == 0 {
		tb.Fatalf("the simulated directory gave too few seeds: %d ops, %d records, %d store entries, %d tokens",
			len(seedData.ops), len(seedData.records), len(seedData.store), len(seedData.tokens))
	}
	return &seedData
}

func makeSeeds() (fuzzSeeds, error) {
	var s fuzzSeeds
	fs := vfs.NewMem()
	const dir = "/d"
	if _, err := sim.Generate(context.Background(), fs, dir, sim.GenOptions{Shards: 2, Runs: 24, Seed: 7}); err != nil {
		return s, err
	}
	// One seed per shape, so that the seeds stay few: the op kind with
	// its record's kind and fields for ops and records, the key kind for
	// the store.
	seen := map[string]bool{}
	keep := func(shape string) bool {
		if seen[shape] {
			return false
		}
		seen[shape] = true
		return true
	}
	addRecord := func(rec model.Record, raw []byte) {
		if keep("record " + recordShape(rec)) {
			s.records = append(s.records, bytes.Clone(raw))
		}
		if rec.Token.Run != 0 && keep("token") {
			s.tokens = append(s.tokens, rec.Token.String())
		}
	}
	_, err := wal.Read(fs, wal.Dir(fs, dir), wal.Position{}, func(b wal.Batch) error {
		for _, sec := range b.Sections {
			for _, e := range sec.Entries {
				op, err := model.DecodeOp(e)
				if err != nil {
					return err
				}
				if keep("op " + op.Kind.String() + " " + recordShape(op.Rec)) {
					s.ops = append(s.ops, bytes.Clone(e))
				}
				if op.Rec.Kind != 0 {
					addRecord(op.Rec, model.EncodeRecord(nil, &op.Rec))
				}
			}
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	db, _, err := journal.Open(fs, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		return s, err
	}
	defer db.Close()
	for shard := range db.Shards {
		err := db.StoreKeys(shard, func(key, value []byte) error {
			shape := string(key[:1])
			if key[0] == store.KeyRun && len(key) == 13 {
				rec, err := model.DecodeRecord(value)
				if err != nil {
					return err
				}
				addRecord(rec, value)
				shape = "record " + recordShape(rec)
			}
			if keep("key " + shape) {
				s.store = append(s.store, [2][]byte{bytes.Clone(key), bytes.Clone(value)})
			}
			return nil
		})
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// recordShape names a record's kind and the fields it carries.
func recordShape(r model.Record) string {
	var b strings.Builder
	b.WriteString(r.Kind.String())
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			b.WriteString(" " + v.Type().Field(i).Name)
		}
	}
	return b.String()
}
