package check

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// anyStr draws strings of every sort the escaping must get right: empty,
// plain ASCII, quotes and backslashes, control characters, any Unicode
// (U+2028 and U+2029 included) and bytes that are not UTF-8.
func anyStr(t *rapid.T, label string) string {
	switch rapid.IntRange(0, 4).Draw(t, label+"-sort") {
	case 0:
		return ""
	case 1:
		return rapid.StringMatching(`[a-z0-9#@/._-]{0,20}`).Draw(t, label)
	case 2:
		return rapid.StringOf(rapid.SampledFrom([]rune{'a', '"', '\\', '\n', '\t', '\b', '\f', '\r', 0, 0x1f, 0x7f, '<', '&', 0x2028, 0x2029, 'é', 0xfffd})).Draw(t, label)
	case 3:
		return rapid.String().Draw(t, label)
	default:
		return string(rapid.SliceOf(rapid.Byte()).Draw(t, label))
	}
}

func anyInt(t *rapid.T, label string) int64 {
	return rapid.OneOf(rapid.Just(int64(0)), rapid.Int64()).Draw(t, label)
}

func anyUint(t *rapid.T, label string) uint64 {
	return rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, label)
}

func anyU32(t *rapid.T, label string) uint32 {
	return rapid.OneOf(rapid.Just(uint32(0)), rapid.Uint32()).Draw(t, label)
}

func anyPayload(t *rapid.T) (*string, []byte) {
	switch rapid.IntRange(0, 2).Draw(t, "payload-sort") {
	case 0:
		return nil, nil
	case 1:
		s := anyStr(t, "payload")
		return &s, nil
	default:
		return nil, rapid.SliceOf(rapid.Byte()).Draw(t, "payload_b64")
	}
}

func anyRefsPhys(t *rapid.T) *refsPhys {
	if rapid.Bool().Draw(t, "no-phys") {
		return nil
	}
	return &refsPhys{Shard: int(anyInt(t, "shard")), No: anyUint(t, "no"), Seq: anyUint(t, "seq"), From: anyStr(t, "from"),
		Parent: anyStr(t, "parent"), Pred: anyStr(t, "pred"), Next: anyStr(t, "next"), By: anyStr(t, "by"),
		Key: anyStr(t, "key"), Token: anyStr(t, "token")}
}

// TestDumpLinesEncodeAsEncodingJSON checks every dump line's hand-written
// encoder against encoding/json (SetEscapeHTML(false)) on random lines.
func TestDumpLinesEncodeAsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var line interface{ appendJSON([]byte) []byte }
		switch rapid.IntRange(0, 5).Draw(t, "line") {
		case 0:
			l := &shardLine{T: anyStr(t, "t")}
			if rapid.Bool().Draw(t, "phys") {
				l.Phys = &shardPhys{Shard: int(anyInt(t, "shard")), Count: int(anyInt(t, "count")), LSN: anyUint(t, "lsn"),
					NextRun: anyUint(t, "next_run"), NextSeq: anyUint(t, "next_seq"), StoreGen: anyUint(t, "store_gen")}
			}
			line = l
		case 1:
			l := &runLine{T: "run", Run: anyStr(t, "run"), WorkflowID: anyStr(t, "wf"), Gen: anyU32(t, "gen"), Type: anyStr(t, "type"),
				State: anyStr(t, "state"), Status: anyStr(t, "status"), Started: anyInt(t, "started"), Finished: anyInt(t, "finished"),
				Latest: rapid.Bool().Draw(t, "latest")}
			if rapid.Bool().Draw(t, "phys") {
				l.Phys = &runPhys{Shard: int(anyInt(t, "shard")), No: anyUint(t, "no"), Renumbered: rapid.Bool().Draw(t, "renum")}
			}
			line = l
		case 2:
			l := &recLine{T: "rec", Run: anyStr(t, "run"), Pos: anyU32(t, "pos"), Kind: anyStr(t, "kind"), Archived: rapid.Bool().Draw(t, "archived"),
				Time: anyInt(t, "time"), Deadline: anyInt(t, "deadline"), Ref: anyU32(t, "ref"), WorkflowID: anyStr(t, "wf"),
				Type: anyStr(t, "type"), Name: anyStr(t, "name"), MsgID: anyStr(t, "msg"), Status: anyStr(t, "status"),
				Attempt: anyU32(t, "attempt"), Origin: anyStr(t, "origin"), Gen: anyU32(t, "gen"), Parent: anyStr(t, "parent"),
				ParentID: anyStr(t, "parent_id"), Pred: anyStr(t, "pred"), Next: anyStr(t, "next"), By: anyStr(t, "by"),
				Key: anyStr(t, "key"), Token: anyStr(t, "token"), Phys: anyRefsPhys(t)}
			l.Payload, l.PayloadB64 = anyPayload(t)
			if rapid.Bool().Draw(t, "rec_pos") {
				p := anyU32(t, "rec_pos_value")
				l.RecPos = &p
			}
			line = l
		case 3:
			line = &timerLine{T: "timer", Run: anyStr(t, "run"), Pos: anyU32(t, "pos"), At: anyInt(t, "at"), Phys: anyRefsPhys(t)}
		case 4:
			l := &msgLine{T: "msg", ID: anyStr(t, "id"), Kind: anyStr(t, "kind"), From: anyStr(t, "from"), Target: anyStr(t, "target"),
				Parent: anyStr(t, "parent"), ParentID: anyStr(t, "parent_id"), Type: anyStr(t, "type"), Name: anyStr(t, "name"),
				Status: anyStr(t, "status"), Deadline: anyInt(t, "deadline"), Sent: anyInt(t, "sent"), Phys: anyRefsPhys(t)}
			l.Payload, l.PayloadB64 = anyPayload(t)
			line = l
		default:
			l := &seenLine{T: "seen", ID: anyStr(t, "id"), WorkflowID: anyStr(t, "wf")}
			if rapid.Bool().Draw(t, "phys") {
				l.Phys = &seenPhys{}
				if !rapid.Bool().Draw(t, "nil-shards") {
					l.Phys.Shards = rapid.SliceOf(rapid.IntRange(-3, 1000)).Draw(t, "shards")
				}
			}
			line = l
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(line); err != nil {
			t.Fatal(err)
		}
		if got := line.appendJSON([]byte("prefix")); string(got) != "prefix"+want.String() {
			t.Fatalf("encoded\n%s\nencoding/json:\n%s", got[len("prefix"):], want.Bytes())
		}
	})
}
