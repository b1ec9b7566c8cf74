package store

import (
	"bytes"
	"cmp"
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/wal"
	"pgregory.net/rapid"
)

func genTimerKey(t *rapid.T, label string) model.TimerKey {
	return model.TimerKey{
		At:  rapid.Int64().Draw(t, label+"at"),
		Run: model.RunNo(rapid.Uint64Range(1, uint64(model.MaxRunNo)).Draw(t, label+"run")),
		Pos: rapid.Uint32().Draw(t, label+"pos"),
	}
}

// TestStoreKeyOrder: byte order of keys is the order the engine wants
// (timers by time, negative first; runs by number; a run's entry before
// its records, records by position), and every key parses back.
func TestStoreKeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genTimerKey(t, "a"), genTimerKey(t, "b")
		if got, want := bytes.Compare(TimerKeyBytes(a), TimerKeyBytes(b)), model.CompareTimers(a, b); got != want {
			t.Fatalf("timer keys %+v, %+v compare %d, want %d", a, b, got, want)
		}
		k, err := ParseStoreKey(TimerKeyBytes(a))
		if err != nil || k.Kind != KeyTimer || k.At != a.At || k.Run != a.Run || k.Pos != a.Pos {
			t.Fatalf("timer key %+v parsed as %+v, %v", a, k, err)
		}
		ra, rb := a.Run, b.Run
		pa, pb := a.Pos, b.Pos
		want := cmp.Compare(ra, rb)
		if want == 0 {
			want = cmp.Compare(pa, pb)
		}
		if got := bytes.Compare(RecordKey(ra, pa), RecordKey(rb, pb)); got != want {
			t.Fatalf("record keys (%d,%d), (%d,%d) compare %d, want %d", ra, pa, rb, pb, got, want)
		}
		if bytes.Compare(RunKey(ra), RecordKey(ra, 0)) >= 0 || bytes.Compare(RecordKey(ra, ^uint32(0)), RunKey(ra+1)) >= 0 {
			t.Fatalf("run %d's records do not sort between its entry and the next run's", ra)
		}
		k, err = ParseStoreKey(RecordKey(ra, pa))
		if err != nil || !k.IsRecord || k.Run != ra || k.Pos != pa {
			t.Fatalf("record key parsed as %+v, %v", k, err)
		}
		seq := rapid.Uint64().Draw(t, "seq")
		if k, err := ParseStoreKey(OutboxKey(seq)); err != nil || k.Seq != seq {
			t.Fatalf("outbox key parsed as %+v, %v", k, err)
		}
		id := rapid.StringN(1, 20, -1).Draw(t, "id")
		if k, err := ParseStoreKey(IndexKey(id)); err != nil || k.ID != id || k.Kind != KeyIndex {
			t.Fatalf("index key parsed as %+v, %v", k, err)
		}
		for _, key := range [][]byte{IndexKey(id), SeenKey(id), RecordKey(ra, pa), TimerKeyBytes(a), OutboxKey(seq)} {
			k, err := ParseStoreKey(key)
			if v, verr := ViewStoreKey(key); v != k || (verr == nil) != (err == nil) {
				t.Fatalf("key %q viewed as %+v, %v; parsed as %+v, %v", key, v, verr, k, err)
			}
		}
		if k, err := ParseStoreKey(ArchiveKey(ra)); err != nil || k.Run != ra || k.Kind != KeyArchive {
			t.Fatalf("archive key parsed as %+v, %v", k, err)
		}
	})
}

func TestParseStoreKeyRefuses(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("H1"), []byte("I"), []byte("O123"), RunKey(0), append(RunKey(1), 0),
		ArchiveKey(model.MaxRunNo + 1), []byte("Tshort"), []byte("x")} {
		if k, err := ParseStoreKey(key); err == nil {
			t.Errorf("ParseStoreKey(%q) = %+v, want an error", key, k)
		}
	}
}

// TestStoreValuesRoundTrip: every value encoding decodes to what was
// encoded, and refuses every truncation and trailing bytes.
func TestStoreValuesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := model.CheckpointHeader{Version: model.StoreVersion, Shard: rapid.IntRange(0, 1023).Draw(t, "shard"),
			Count: rapid.IntRange(1, 1024).Draw(t, "count"), LSN: rapid.Uint64().Draw(t, "lsn"),
			NextRun: model.RunNo(rapid.Uint64Range(1, uint64(model.MaxRunNo)).Draw(t, "next")), NextSeq: rapid.Uint64().Draw(t, "seq"),
			Log: wal.Position{Segment: rapid.Uint64().Draw(t, "seg"), Offset: rapid.Int64().Draw(t, "off")},
			Now: rapid.Int64().Draw(t, "now"), Created: rapid.Int64().Draw(t, "created"),
			Gen: rapid.Uint64().Draw(t, "gen"), Seq: rapid.Uint64().Draw(t, "cseq")}
		checkRoundTrip(t, "header", model.EncodeHeader(nil, &h), func(p []byte) (any, error) { v, err := model.DecodeHeader(p); return v, err }, h)

		e := model.RunEntry{State: model.RunState(rapid.IntRange(1, 4).Draw(t, "state")), Renumbered: rapid.Bool().Draw(t, "ren"),
			Gen: rapid.Uint32().Draw(t, "rgen"), Status: model.Status(rapid.IntRange(0, 7).Draw(t, "status")),
			Started: rapid.Int64().Draw(t, "started"), Finished: rapid.Int64().Draw(t, "finished"),
			Records: rapid.Uint32().Draw(t, "records"), WorkflowID: rapid.String().Draw(t, "wf"), Type: rapid.String().Draw(t, "type")}
		checkRoundTrip(t, "run entry", model.EncodeRunEntry(nil, &e), func(p []byte) (any, error) { v, err := model.DecodeRunEntry(p); return v, err }, e)
		checkRoundTrip(t, "viewed run entry", model.EncodeRunEntry(nil, &e), func(p []byte) (any, error) { v, err := model.ViewRunEntry(p); return v, err }, e)

		m := model.Message{ID: rapid.String().Draw(t, "id"), Kind: model.MsgKind(rapid.IntRange(1, 5).Draw(t, "kind")), Seq: 9,
			From: model.RunRef{Shard: 3, Run: 4}, Target: rapid.String().Draw(t, "target"),
			Parent:   model.ParentRef{Shard: 1, Run: model.RunNo(rapid.Uint64Range(0, 99).Draw(t, "prun")), Pos: 7},
			ParentID: rapid.String().Draw(t, "parentID"), Type: "t", Name: rapid.String().Draw(t, "name"),
			Status: model.StatusFailed, Deadline: rapid.Int64().Draw(t, "dl"), Sent: rapid.Int64().Draw(t, "sent")}
		if p := rapid.SliceOfN(rapid.Byte(), 1, 10).Draw(t, "payload"); rapid.Bool().Draw(t, "hasPayload") {
			m.Payload = p
		}
		checkRoundTrip(t, "message", model.EncodeMessage(nil, &m), func(p []byte) (any, error) {
			v, err := model.DecodeMessage(p, 9)
			if err != nil {
				return nil, err
			}
			return string(model.EncodeMessage(nil, v)), nil
		}, string(model.EncodeMessage(nil, &m)))

		wf := rapid.StringN(1, 30, -1).Draw(t, "seen")
		checkRoundTrip(t, "seen", model.EncodeSeenValue(nil, wf), func(p []byte) (any, error) { return model.DecodeSeenValue(p) }, wf)
		checkRoundTrip(t, "viewed seen", model.EncodeSeenValue(nil, wf), func(p []byte) (any, error) { return model.ViewSeenValue(p) }, wf)

		recs := []model.Record{{Kind: model.KindStart, WorkflowID: "w", Gen: 1}, {Kind: model.KindStep, Pos: 1, Payload: []byte("x")}}
		checkRoundTrip(t, "history", model.EncodeHistory(nil, recs), func(p []byte) (any, error) {
			v, err := model.DecodeHistory(p)
			if err != nil {
				return nil, err
			}
			return string(model.EncodeHistory(nil, v)), nil
		}, string(model.EncodeHistory(nil, recs)))
	})
}

// An empty seen value (the layout before dedup entries named their
// workflow) and a seen value naming no workflow are refused.
func TestSeenValueRefusesEmpty(t *testing.T) {
	for _, p := range [][]byte{nil, model.EncodeSeenValue(nil, "")} {
		if wf, err := model.DecodeSeenValue(p); err == nil {
			t.Errorf("DecodeSeenValue(%q) = %q, want an error", p, wf)
		}
	}
}

func checkRoundTrip(t *rapid.T, what string, enc []byte, decode func([]byte) (any, error), want any) {
	got, err := decode(enc)
	if err != nil || got != want {
		t.Fatalf("%s: decoded %+v, %v; want %+v", what, got, err, want)
	}
	for i := 0; i < len(enc); i++ {
		if _, err := decode(enc[:i]); err == nil {
			t.Fatalf("%s: truncated to %d of %d bytes, still decodes", what, i, len(enc))
		}
	}
	if _, err := decode(append(enc[:len(enc):len(enc)], 0)); err == nil {
		t.Fatalf("%s: decodes with a trailing byte", what)
	}
}

// TestViewsAliasTheirBytes: the View decoders give what the Decode ones
// give (TestStoreValuesRoundTrip, TestStoreKeyOrder) without allocating:
// their strings are the bytes decoded, which a change to those shows.
func TestViewsAliasTheirBytes(t *testing.T) {
	entry := model.EncodeRunEntry(nil, &model.RunEntry{State: model.StateRunning, Records: 1, WorkflowID: "wf", Type: "ty"})
	seen := model.EncodeSeenValue(nil, "wf")
	key := IndexKey("wf")
	if n := testing.AllocsPerRun(10, func() {
		e, err1 := model.ViewRunEntry(entry)
		wf, err2 := model.ViewSeenValue(seen)
		k, err3 := ViewStoreKey(key)
		if err1 != nil || err2 != nil || err3 != nil || e.WorkflowID != "wf" || e.Type != "ty" || wf != "wf" || k.ID != "wf" {
			t.Fatalf("viewed %+v %q %+v: %v %v %v", e, wf, k, err1, err2, err3)
		}
	}); n != 0 && !testtier.Race { // the race detector's instrumentation allocates
		t.Errorf("viewing an entry, a seen value and a key allocated %v times, want none", n)
	}
	e, _ := model.ViewRunEntry(entry)
	wf, _ := model.ViewSeenValue(seen)
	k, _ := ViewStoreKey(key)
	for _, p := range [][]byte{entry, seen, key} {
		for i := range p {
			if p[i] == 'w' {
				p[i] = 'W'
			}
		}
	}
	if e.WorkflowID != "Wf" || wf != "Wf" || k.ID != "Wf" {
		t.Errorf("after changing the bytes viewed: %q, %q, %q, want each \"Wf\"", e.WorkflowID, wf, k.ID)
	}
}
