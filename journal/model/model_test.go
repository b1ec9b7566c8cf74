package model

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func genRecord() *rapid.Generator[Record] {
	return rapid.Custom(func(t *rapid.T) Record {
		ref := func(label string) RunRef {
			return RunRef{Shard: rapid.IntRange(0, 1023).Draw(t, label+"s"), Run: RunNo(rapid.Uint64Range(0, uint64(MaxRunNo)).Draw(t, label+"r"))}
		}
		r := Record{
			Kind:       Kind(rapid.IntRange(1, int(kindMax)).Draw(t, "kind")),
			Pos:        rapid.Uint32().Draw(t, "pos"),
			Time:       rapid.Int64().Draw(t, "time"),
			Deadline:   rapid.Int64().Draw(t, "deadline"),
			Ref:        rapid.Uint32().Draw(t, "ref"),
			WorkflowID: rapid.String().Draw(t, "wf"),
			Type:       rapid.String().Draw(t, "type"),
			Name:       rapid.String().Draw(t, "name"),
			MsgID:      rapid.String().Draw(t, "msg"),
			Status:     Status(rapid.IntRange(0, int(statusMax)).Draw(t, "status")),
			Attempt:    rapid.Uint32().Draw(t, "attempt"),
			Origin:     Origin(rapid.IntRange(0, 4).Draw(t, "origin")),
			Gen:        rapid.Uint32().Draw(t, "gen"),
			Pred:       ref("pred"),
			Next:       ref("next"),
			By:         ref("by"),
			ParentID:   rapid.String().Draw(t, "parentID"),
		}
		p := ref("parent")
		r.Parent = ParentRef{Shard: p.Shard, Run: p.Run, Pos: rapid.Uint32().Draw(t, "ppos")}
		if rapid.Bool().Draw(t, "hasKey") {
			r.Key = CtxKey{WorkflowID: rapid.StringN(1, 20, -1).Draw(t, "kwf"), Run: ref("key").Run, Pos: rapid.Uint32().Draw(t, "kpos")}
		}
		tk := ref("token")
		r.Token = Token{Gen: uint8(rapid.IntRange(0, 63).Draw(t, "tgen")), Shard: tk.Shard, Run: tk.Run, Pos: rapid.Uint32().Draw(t, "tpos")}
		if r.Token.Run == 0 {
			r.Token = Token{}
		}
		// Zero refs encode as absent, so their other fields must be zero too.
		if r.Pred.Run == 0 {
			r.Pred = RunRef{}
		}
		if r.Next.Run == 0 {
			r.Next = RunRef{}
		}
		if r.By.Run == 0 {
			r.By = RunRef{}
		}
		if r.Parent.Run == 0 {
			r.Parent = ParentRef{}
		}
		if pl := rapid.SliceOf(rapid.Byte()).Draw(t, "payload"); len(pl) > 0 {
			r.Payload = pl
		}
		return r
	})
}

func TestRecordRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRecord().Draw(t, "rec")
		enc := EncodeRecord(nil, &r)
		got, err := DecodeRecord(enc)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
		// Every strict prefix must fail to decode rather than yield a record.
		for i := 0; i < len(enc); i++ {
			if _, err := DecodeRecord(enc[:i]); err == nil {
				t.Fatalf("prefix of %d/%d bytes decoded without error", i, len(enc))
			}
		}
	})
}

func TestOpRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		op := Op{Kind: OpKind(rapid.IntRange(1, int(opMax)).Draw(t, "kind"))}
		switch op.Kind {
		case OpStart, OpAppend:
			op.Run = RunNo(rapid.Uint64Range(1, uint64(MaxRunNo)).Draw(t, "run"))
			op.Rec = genRecord().Draw(t, "rec")
		case OpPark, OpLoad, OpTombstone:
			op.Run = RunNo(rapid.Uint64Range(1, uint64(MaxRunNo)).Draw(t, "run"))
		case OpAck:
			op.MsgID = rapid.String().Draw(t, "msg")
		case OpSeen:
			op.MsgID = rapid.String().Draw(t, "msg")
			op.WorkflowID = rapid.String().Draw(t, "wf")
		}
		got, err := DecodeOp(EncodeOp(nil, &op))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(got, op) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, op)
		}
	})
}

// A token's text form keeps all four parts, the store generation
// included, and every 24-digit form decodes (its six high bits are the
// generation).
func TestTokenRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tk := Token{
			Gen:   uint8(rapid.IntRange(0, 63).Draw(t, "gen")),
			Shard: rapid.IntRange(0, 1023).Draw(t, "shard"),
			Run:   RunNo(rapid.Uint64Range(0, uint64(MaxRunNo)).Draw(t, "run")),
			Pos:   rapid.Uint32().Draw(t, "pos"),
		}
		got, err := ParseToken(tk.String())
		if err != nil || got != tk {
			t.Fatalf("ParseToken(%s) = %+v, %v; want %+v", tk, got, err, tk)
		}
	})
	for _, bad := range []string{"", "tk", "tk00", "xx000000000000000000000000", "tkzz0000000000000000000000", "tk04000000000000000000000000"} {
		if _, err := ParseToken(bad); err == nil {
			t.Errorf("ParseToken(%q) accepted a bad token", bad)
		}
	}
	for _, c := range []struct {
		tk   Token
		text string
	}{
		{Token{Shard: 1023, Run: MaxRunNo, Pos: 0xffffffff}, "tk03ffffffffffffffffffffff"},
		{Token{Gen: 63, Shard: 1023, Run: MaxRunNo, Pos: 0xffffffff}, "tkffffffffffffffffffffffff"},
		{Token{Gen: 1, Shard: 0, Run: 1, Pos: 2}, "tk040000000000000100000002"},
		{Token{Gen: 63, Shard: 768}, "tkff0000000000000000000000"},
		{Token{Gen: TokenGen(65), Shard: 5, Run: 7, Pos: 9}, "tk040500000000000700000009"},
	} {
		if got := c.tk.String(); got != c.text {
			t.Errorf("%+v.String() = %s, want %s", c.tk, got, c.text)
		}
		if got, err := ParseToken(c.text); err != nil || got != c.tk {
			t.Errorf("ParseToken(%s) = %+v, %v; want %+v", c.text, got, err, c.tk)
		}
	}
}

// TestShardOfGolden pins the placement of workflow IDs on shards: a change
// here strands every data directory ever written.
func TestShardOfGolden(t *testing.T) {
	cases := []struct {
		id   string
		n    int
		want int
	}{
		{"order-1", 1, 0},
		{"order-1", 4, shardOfGolden["order-1/4"]},
		{"order-1", 1024, shardOfGolden["order-1/1024"]},
		{"payment-7f3a", 7, shardOfGolden["payment-7f3a/7"]},
		{"über-ünïcode", 16, shardOfGolden["über-ünïcode/16"]},
	}
	for _, c := range cases {
		if got := ShardOf(c.id, c.n); got != c.want {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", c.id, c.n, got, c.want)
		}
	}
}

// Values computed with the Java reference (Math.floorMod over the FNV-1a +
// fmix64 hash of String.charAt code units) and frozen here.
var shardOfGolden = map[string]int{
	"order-1/4":       1,   // Java: hash 5267876955464718757
	"order-1/1024":    421, //
	"payment-7f3a/7":  4,   // Java: hash -369369600258764290 (negative: floorMod matters)
	"über-ünïcode/16": 8,   // Java: hash -8586561234384632440
}

func TestShardOfCongruentWhenGrowingByMultiple(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.String().Draw(t, "id")
		n := rapid.IntRange(1, 128).Draw(t, "n")
		k := rapid.IntRange(1, 1024/n).Draw(t, "k")
		if got, want := ShardOf(id, k*n)%n, ShardOf(id, n); got != want {
			t.Fatalf("ShardOf(%q, %d) mod %d = %d, want ShardOf(%q, %d) = %d", id, k*n, n, got, id, n, want)
		}
	})
}

func TestApplyRefusesAndLeavesStateUnchanged(t *testing.T) {
	s := NewShard(0, 1)
	start := Op{Kind: OpStart, Run: 1, Rec: Record{Kind: KindStart, WorkflowID: "wf", Gen: 1, Time: 5}}
	if err := s.Apply(&start); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s)
	bad := []Op{
		{Kind: OpStart, Run: 5, Rec: Record{Kind: KindStart, WorkflowID: "x"}}, // wrong number
		{Kind: OpStart, Run: 2, Rec: Record{Kind: KindStep, WorkflowID: "x"}},  // not a start
		{Kind: OpAppend, Run: 9, Rec: Record{Kind: KindStep, Pos: 1}},          // no such run
		{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindStep, Pos: 3}},          // position gap
		{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindFired, Pos: 1, Ref: 7}}, // completes the future
		{Kind: OpLoad, Run: 1},       // not parked
		{Kind: OpAck, MsgID: "nope"}, // not in outbox
		{Kind: OpSeen, MsgID: "in"},  // no receiving workflow ID
		{Kind: OpTombstone, Run: 1},  // not finished
		{Kind: OpKind(99)},           // unknown
	}
	for i := range bad {
		if err := s.Apply(&bad[i]); err == nil {
			t.Errorf("op %d (%s) accepted", i, bad[i].Kind)
		}
		if after := snapshot(t, s); !bytes.Equal(before, after) {
			t.Fatalf("op %d (%s) changed the shard although refused", i, bad[i].Kind)
		}
	}
}

// snapshot is a crude, order-stable rendering of a shard's state.
func snapshot(t *testing.T, s *Shard) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, r := range s.SortedRuns() {
		b.WriteString(r.WorkflowID)
		b.WriteByte(byte(r.State))
		for i := range r.Journal {
			b.Write(EncodeRecord(nil, &r.Journal[i]))
		}
	}
	for _, m := range s.SortedOutbox() {
		b.WriteString(m.ID)
	}
	b.WriteByte(byte(s.NextRun))
	b.WriteByte(byte(len(s.Timers)))
	b.WriteByte(byte(len(s.Seen)))
	return b.Bytes()
}

// Every message Apply sends carries the time of the record that produced
// it, and every message with a parent reference the workflow ID of the run
// that reference names; the receiving shard's dedup entry names the
// workflow the message was delivered to.
func TestApplySendsParentIDAndSendTime(t *testing.T) {
	s := NewShard(0, 1)
	apply := func(op Op) {
		t.Helper()
		if err := s.Apply(&op); err != nil {
			t.Fatalf("%s: %v", op.Kind, err)
		}
	}
	apply(Op{Kind: OpStart, Run: 1, Rec: Record{Kind: KindStart, WorkflowID: "p", Gen: 1, Time: 1}})
	apply(Op{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindChild, Pos: 1, Time: 7, WorkflowID: "k", Type: "K", MsgID: "p/1/1"}})
	apply(Op{Kind: OpAppend, Run: 1, Rec: Record{Kind: KindSend, Pos: 2, Time: 8, WorkflowID: "x", Name: "go", MsgID: "p/1/2"}})
	apply(Op{Kind: OpSeen, MsgID: "p/1/1", WorkflowID: "k"})
	apply(Op{Kind: OpStart, Run: 2, Rec: Record{Kind: KindStart, WorkflowID: "k", Gen: 1, Time: 9, Origin: OriginChild,
		Parent: ParentRef{Shard: 0, Run: 1, Pos: 1}, ParentID: "p"}})
	apply(Op{Kind: OpAppend, Run: 2, Rec: Record{Kind: KindUpdate, Pos: 1, Time: 10, Name: "u", MsgID: "u-1",
		Parent: ParentRef{Shard: 0, Run: 1, Pos: 2}, ParentID: "p"}})
	apply(Op{Kind: OpAppend, Run: 2, Rec: Record{Kind: KindUpdateDone, Pos: 2, Ref: 1, Time: 11, Status: StatusOK}})
	apply(Op{Kind: OpAppend, Run: 2, Rec: Record{Kind: KindDone, Pos: 3, Time: 12, Status: StatusOK}})
	want := map[string]struct {
		kind     MsgKind
		parentID string
		sent     int64
	}{
		"p/1/1":  {MsgStartChild, "p", 7},
		"p/1/2":  {MsgSignal, "", 8},
		"k/1/u1": {MsgUpdateResult, "p", 11},
		"k/1/r":  {MsgChildResult, "p", 12},
	}
	if len(s.Outbox) != len(want) {
		t.Fatalf("outbox holds %d messages, want %d", len(s.Outbox), len(want))
	}
	for id, w := range want {
		m := s.Outbox[id]
		if m == nil || m.Kind != w.kind || m.ParentID != w.parentID || m.Sent != w.sent {
			t.Errorf("message %q = %+v; want kind %s, parent ID %q, sent %d", id, m, w.kind, w.parentID, w.sent)
		}
	}
	if wf := s.Seen["p/1/1"]; wf != "k" {
		t.Errorf("dedup entry names %q, want k", wf)
	}
}
