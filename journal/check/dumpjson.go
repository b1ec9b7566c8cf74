package check

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// The dump's lines are appended to a byte slice by hand rather than
// through encoding/json's reflection, which cost the dump more than
// reading the stores. Each appendJSON writes exactly what a json.Encoder
// with SetEscapeHTML(false) writes for the line's struct (field order,
// omitempty, escaping, the final newline): dumpjson_test.go checks that
// on random lines, so the struct tags stay the specification.

// jsonField appends a member name with its comma: `,"name":` (no comma
// before the first member, which every line's "t" is).
func jsonField(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// jsonStr appends s as a JSON string. Printable ASCII is copied with '"'
// and '\\' escaped; anything else (control characters, non-ASCII,
// invalid UTF-8) goes through encoding/json, whose escaping is the
// reference.
func jsonStr(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 {
			return jsonStrSlow(b, s)
		}
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', c)
			start = i + 1
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func jsonStrSlow(b []byte, s string) []byte {
	var buf sliceWriter
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil { // a string always encodes
		panic(err)
	}
	return append(b, buf[:len(buf)-1]...) // without the newline
}

type sliceWriter []byte

func (w *sliceWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

func jsonStrField(b []byte, name, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return b
	}
	return jsonStr(jsonField(b, name), v)
}

// jsonRefField is jsonStrField for a reference: when v is holeMark and
// the line is rendered into a template, only the member name is written
// and the template marks where the resolved reference goes.
func jsonRefField(b []byte, name, v string, omitEmpty bool, tm *template) []byte {
	if tm != nil && v == holeMark {
		b = jsonField(b, name)
		tm.mark(len(b))
		return b
	}
	return jsonStrField(b, name, v, omitEmpty)
}

func jsonIntField(b []byte, name string, v int64, omitEmpty bool) []byte {
	if omitEmpty && v == 0 {
		return b
	}
	return strconv.AppendInt(jsonField(b, name), v, 10)
}

func jsonUintField(b []byte, name string, v uint64, omitEmpty bool) []byte {
	if omitEmpty && v == 0 {
		return b
	}
	return strconv.AppendUint(jsonField(b, name), v, 10)
}

func jsonTrueField(b []byte, name string, v bool) []byte { // omitempty
	if !v {
		return b
	}
	return append(jsonField(b, name), "true"...)
}

// jsonPayload appends the payload members (both omitempty).
func jsonPayload(b []byte, p *string, b64 []byte) []byte {
	if p != nil {
		b = jsonStr(jsonField(b, "payload"), *p)
	}
	if len(b64) > 0 {
		b = append(jsonField(b, "payload_b64"), '"')
		b = base64.StdEncoding.AppendEncode(b, b64)
		b = append(b, '"')
	}
	return b
}

// jsonStart appends `{"t":"<t>"`.
func jsonStart(b []byte, t string) []byte {
	b = append(b, `{"t":`...)
	return jsonStr(b, t)
}

func (l *shardLine) appendJSON(b []byte) []byte {
	b = append(jsonStart(b, l.T), `,"phys":`...)
	if p := l.Phys; p != nil {
		b = strconv.AppendInt(append(b, `{"shard":`...), int64(p.Shard), 10)
		b = jsonIntField(b, "count", int64(p.Count), false)
		b = jsonUintField(b, "lsn", p.LSN, false)
		b = jsonUintField(b, "next_run", p.NextRun, false)
		b = jsonUintField(b, "next_seq", p.NextSeq, false)
		b = jsonUintField(b, "store_gen", p.StoreGen, false)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}', '\n')
}

func (l *runLine) appendJSON(b []byte) []byte {
	b = jsonStart(b, l.T)
	b = jsonStrField(b, "run", l.Run, false)
	b = jsonStrField(b, "workflow_id", l.WorkflowID, false)
	b = jsonUintField(b, "gen", uint64(l.Gen), false)
	b = jsonStrField(b, "type", l.Type, true)
	b = jsonStrField(b, "state", l.State, false)
	b = jsonStrField(b, "status", l.Status, true)
	b = jsonIntField(b, "started", l.Started, true)
	b = jsonIntField(b, "finished", l.Finished, true)
	if l.tm != nil && l.latestHole {
		l.tm.mark(len(b))
	} else {
		b = jsonTrueField(b, "latest", l.Latest)
	}
	if p := l.Phys; p != nil {
		b = strconv.AppendInt(append(b, `,"phys":{"shard":`...), int64(p.Shard), 10)
		b = jsonUintField(b, "no", p.No, false)
		b = jsonTrueField(b, "renumbered", p.Renumbered)
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}

func (l *recLine) appendJSON(b []byte) []byte {
	b = jsonStart(b, l.T)
	b = jsonStrField(b, "run", l.Run, false)
	b = jsonUintField(b, "pos", uint64(l.Pos), false)
	b = jsonStrField(b, "kind", l.Kind, false)
	b = jsonTrueField(b, "archived", l.Archived)
	b = jsonIntField(b, "time", l.Time, true)
	b = jsonIntField(b, "deadline", l.Deadline, true)
	b = jsonUintField(b, "ref", uint64(l.Ref), true)
	b = jsonStrField(b, "workflow_id", l.WorkflowID, true)
	b = jsonStrField(b, "type", l.Type, true)
	b = jsonStrField(b, "name", l.Name, true)
	b = jsonStrField(b, "msg_id", l.MsgID, true)
	b = jsonStrField(b, "status", l.Status, true)
	b = jsonUintField(b, "attempt", uint64(l.Attempt), true)
	b = jsonStrField(b, "origin", l.Origin, true)
	b = jsonUintField(b, "gen", uint64(l.Gen), true)
	b = jsonRefField(b, "parent", l.Parent, true, l.tm)
	b = jsonStrField(b, "parent_id", l.ParentID, true)
	b = jsonRefField(b, "pred", l.Pred, true, l.tm)
	b = jsonRefField(b, "next", l.Next, true, l.tm)
	b = jsonRefField(b, "by", l.By, true, l.tm)
	b = jsonRefField(b, "key", l.Key, true, l.tm)
	b = jsonRefField(b, "token", l.Token, true, l.tm)
	b = jsonPayload(b, l.Payload, l.PayloadB64)
	if l.RecPos != nil {
		b = strconv.AppendUint(jsonField(b, "rec_pos"), uint64(*l.RecPos), 10)
	}
	if l.Phys != nil {
		b = l.Phys.appendJSON(jsonField(b, "phys"))
	}
	return append(b, '}', '\n')
}

func (p *refsPhys) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"shard":`...), int64(p.Shard), 10)
	b = jsonUintField(b, "no", p.No, true)
	b = jsonUintField(b, "seq", p.Seq, true)
	b = jsonStrField(b, "from", p.From, true)
	b = jsonStrField(b, "parent", p.Parent, true)
	b = jsonStrField(b, "pred", p.Pred, true)
	b = jsonStrField(b, "next", p.Next, true)
	b = jsonStrField(b, "by", p.By, true)
	b = jsonStrField(b, "key", p.Key, true)
	b = jsonStrField(b, "token", p.Token, true)
	return append(b, '}')
}

func (l *timerLine) appendJSON(b []byte) []byte {
	b = jsonStart(b, l.T)
	b = jsonStrField(b, "run", l.Run, false)
	b = jsonUintField(b, "pos", uint64(l.Pos), false)
	b = jsonIntField(b, "at", l.At, false)
	if l.Phys != nil {
		b = l.Phys.appendJSON(jsonField(b, "phys"))
	}
	return append(b, '}', '\n')
}

func (l *msgLine) appendJSON(b []byte) []byte {
	b = jsonStart(b, l.T)
	b = jsonStrField(b, "id", l.ID, false)
	b = jsonStrField(b, "kind", l.Kind, false)
	b = jsonRefField(b, "from", l.From, false, l.tm)
	b = jsonStrField(b, "target", l.Target, false)
	b = jsonRefField(b, "parent", l.Parent, true, l.tm)
	b = jsonStrField(b, "parent_id", l.ParentID, true)
	b = jsonStrField(b, "type", l.Type, true)
	b = jsonStrField(b, "name", l.Name, true)
	b = jsonStrField(b, "status", l.Status, true)
	b = jsonIntField(b, "deadline", l.Deadline, true)
	b = jsonIntField(b, "sent", l.Sent, true)
	b = jsonPayload(b, l.Payload, l.PayloadB64)
	if l.Phys != nil {
		b = l.Phys.appendJSON(jsonField(b, "phys"))
	}
	return append(b, '}', '\n')
}

func (l *seenLine) appendJSON(b []byte) []byte {
	b = jsonStart(b, l.T)
	b = jsonStrField(b, "id", l.ID, false)
	b = jsonStrField(b, "workflow_id", l.WorkflowID, false)
	if p := l.Phys; p != nil {
		b = append(b, `,"phys":{"shards":`...)
		if p.Shards == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, s := range p.Shards {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(s), 10)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}
