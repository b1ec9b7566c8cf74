package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// refCall is one call of a RunMapper.
type refCall struct {
	f   RefField
	ref RunRef
}

// drawMapper draws a mapper that answers each reference with a drawn one
// (sometimes no run, a large shard, NoSuchRun), the same answer every
// time, and records its calls.
func drawMapper(t *rapid.T) (RunMapper, *[]refCall) {
	seed := rapid.Uint64().Draw(t, "mapSeed")
	zeroes := rapid.Bool().Draw(t, "zeroes")
	var calls []refCall
	return func(f RefField, ref RunRef) RunRef {
		calls = append(calls, refCall{f, ref})
		h := seed ^ uint64(ref.Shard)*0x9e3779b97f4a7c15 ^ uint64(ref.Run)*0xc2b2ae3d27d4eb4f
		h ^= h >> 29
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
		switch {
		case zeroes && h%7 == 0:
			return RunRef{Shard: int(h >> 40 & 7)} // no run
		case h%11 == 0:
			return RunRef{Run: NoSuchRun}
		case h%13 == 0:
			return RunRef{Shard: 1<<12 + int(h>>50), Run: RunNo(h >> 16)} // a shard above 10 bits
		}
		return RunRef{Shard: int(h >> 54), Run: RunNo(1 + h>>20)}
	}, &calls
}

// mapDecoded is the decode path appendMapped must agree with.
func mapDecoded(t *rapid.T, rec []byte, keyShard int, m RunMapper, tokenGen int) []byte {
	r, err := DecodeRecord(rec)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	r.MapRefs(keyShard, m)
	if tokenGen >= 0 && r.Token.Run != 0 {
		r.Token.Gen = uint8(tokenGen)
	}
	return EncodeRecord(nil, &r)
}

// TestAppendMappedRecordMatchesDecode: for random records (as
// EncodeRecord writes them) and random mappers, rewriting the references
// in the encoded bytes gives the bytes decoding, Record.MapRefs and
// encoding give, calling the mapper with the same arguments in the same
// order.
func TestAppendMappedRecordMatchesDecode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRecord().Draw(t, "rec")
		rec := EncodeRecord(nil, &r)
		keyShard := rapid.IntRange(0, 1023).Draw(t, "keyShard")
		tokenGen := rapid.IntRange(-1, 63).Draw(t, "tokenGen")
		h, err := ScanRecord(rec)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		if p, err := PeekRecord(rec); err != nil || p.Kind != h.Kind || p.Mask != h.Mask || p.Pos != h.Pos {
			t.Fatalf("PeekRecord %+v, %v; ScanRecord %+v", p, err, h)
		}
		if _, ok := ReadRecordRefs(rec, &h); !ok && h.HasRefs() {
			t.Fatalf("ReadRecordRefs refuses a record EncodeRecord wrote: %x", rec)
		}
		m, calls := drawMapper(t)
		want := mapDecoded(t, rec, keyShard, m, tokenGen)
		wantCalls := *calls
		*calls = nil
		prefix := []byte("prefix")
		got, err := appendMapped(prefix, rec, &h, keyShard, m, tokenGen)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("record %+v\nbytes   %x\ndecoded %x", r, got[len(prefix):], want)
		}
		if fmt.Sprint(*calls) != fmt.Sprint(wantCalls) {
			t.Fatalf("mapper calls %v, the decode path's %v", *calls, wantCalls)
		}
	})
}

// TestAppendMappedRecordLooseEncoding: a record whose reference fields
// are present but name no run (which EncodeRecord never writes, and
// DecodeRecord accepts) takes the decode path, and gives its bytes.
func TestAppendMappedRecordLooseEncoding(t *testing.T) {
	uv := binary.AppendUvarint
	for _, c := range []struct {
		name string
		rec  []byte
	}{
		{"parent with no run", uv(uv(uv(uv([]byte{byte(KindStart)}, fParent|fPayload), 3), 0), 7)},
		{"token with no run", uv(uv(uv(uv([]byte{byte(KindAsync)}, fToken), 5<<10|3), 0), 9)},
		{"key with no workflow ID", uv(uv(uv(uv([]byte{byte(KindStep)}, fKey|fBy), 2), 8), 0)},
	} {
		if c.name == "parent with no run" {
			c.rec = append(uv(c.rec, 2), 'h', 'i')
		}
		if c.name == "key with no workflow ID" {
			c.rec = uv(uv(c.rec, 4), 6) // the key: "", run 4, position 6
		}
		h, err := ScanRecord(c.rec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, ok := ReadRecordRefs(c.rec, &h); ok {
			t.Errorf("%s: ReadRecordRefs takes it", c.name)
		}
		m := func(_ RefField, ref RunRef) RunRef { return RunRef{Shard: ref.Shard + 1, Run: ref.Run + 1} }
		got, err := appendMapped(nil, c.rec, &h, 4, m, 2)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := DecodeRecord(c.rec)
		r.MapRefs(4, m)
		if r.Token.Run != 0 {
			r.Token.Gen = 2
		}
		if want := EncodeRecord(nil, &r); !bytes.Equal(got, want) {
			t.Errorf("%s: %x, decoded %x", c.name, got, want)
		}
	}
}

// appendMapped composes ReadRecordRefs, MapRefs, SetTokenGen and Append
// as reshard's rewrite and digest do (their own tests hold those paths to
// the decode path too): it appends rec, a record ScanRecord returned h for,
// with its run references replaced by what m returns (Record.MapRefs)
// and, when tokenGen >= 0 and its token names a run, the token's
// generation set to tokenGen. A record without a run reference is
// appended as it is; one whose references are not as EncodeRecord writes
// them is decoded, mapped and encoded again. So for a record EncodeRecord
// wrote, the result is what decoding, mapping and encoding give; in any
// other record the fields that are not run references keep their bytes.
func appendMapped(dst, rec []byte, h *RecordHead, keyShard int, m RunMapper, tokenGen int) ([]byte, error) {
	if !h.HasRefs() {
		return append(dst, rec...), nil
	}
	r, ok := ReadRecordRefs(rec, h)
	if !ok {
		d, err := DecodeRecord(rec)
		if err != nil {
			return dst, err
		}
		d.MapRefs(keyShard, m)
		if tokenGen >= 0 && d.Token.Run != 0 {
			d.Token.Gen = uint8(tokenGen)
		}
		return EncodeRecord(dst, &d), nil
	}
	r.MapRefs(keyShard, m)
	if tokenGen >= 0 {
		r.SetTokenGen(uint8(tokenGen))
	}
	return r.Append(dst), nil
}
