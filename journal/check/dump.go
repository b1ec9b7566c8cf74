package check

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// DumpOptions configure WriteDump.
type DumpOptions struct {
	Options // the memory budget
	// Physical adds a "phys" member to each line (shard, run numbers, raw
	// references, outbox sequence, the renumbered flag) and one "shard"
	// line per shard. A comparison of logical content must leave it off.
	Physical bool
}

// WriteLogicalDump writes the logical dump of shards: WriteDump without
// physical fields. It is the oracle the simulator and reshard compare
// directories by.
func WriteLogicalDump(w io.Writer, shards []*model.Shard) error {
	return WriteDump(w, shards, DumpOptions{})
}

// WriteDump writes the state of shards as sorted JSON lines, one object
// per line, each with a "t" member saying what it is:
//
//	{"t":"shard","phys":{...}}                      only with Physical: shard, count, lsn, next_run, next_seq, store_gen
//	{"t":"run","run":"wf#2","workflow_id":"wf","gen":2,"type":..,"state":..,"status":..,"started":..,"finished":..,"latest":true}
//	{"t":"rec","run":"wf#2","pos":5,"kind":"child","archived":true,...record fields...}
//	{"t":"timer","run":"wf#2","pos":3,"at":1000}
//	{"t":"msg","id":"wf/2/c5","kind":"start-child","from":"wf#2","target":..,"parent":"wf#2@5","parent_id":"wf","sent":..,...}
//	{"t":"seen","id":"wf/2/c5","workflow_id":"wf.2.kid"}
//
// Order: shard lines by shard; then runs by workflow ID and generation,
// each followed by its records in position order (a tombstone's records
// are its archived history, marked "archived"); then timers by run and
// position; then messages by ID; then dedup entries by message ID and
// receiving workflow ID (once each, whichever shards hold them). Zero
// fields are left out.
//
// A run is named "<workflow ID>#<gen>". A reference is rendered as the run
// it resolves to, with "@<pos>" where it names a journal position: parent
// and caller references, Ctx::key values (key) and completion tokens
// (token) are positioned; pred, next, by and from are not. A reference
// that matches no run is "dangling". A completion token's store
// generation is physical (a reshard changes it, as it changes run
// numbers): the logical form leaves it out, the "phys" member has the
// token's text form ("tk" + 24 hex digits), generation included.
// Payloads are JSON strings when they
// are UTF-8 ("payload"), base64 otherwise ("payload_b64"). Record fields
// keep the names of model.Record in snake case; statuses, origins and
// kinds are their String forms.
//
// The logical dump of a state does not depend on its shard count or run
// numbers as long as each (workflow ID, generation) names one run, which
// Verify checks.
func WriteDump(w io.Writer, shards []*model.Shard, opts DumpOptions) error {
	return WriteDumpContext(context.Background(), w, shards, opts)
}

// WriteDumpContext is WriteDump that gives up when ctx is done: it looks
// at ctx before each shard and every checkEvery runs or lines, and then
// returns ctx.Err(). What was written by then is a prefix of the dump.
func WriteDumpContext(ctx context.Context, w io.Writer, shards []*model.Shard, opts DumpOptions) error {
	return shardsView(shards, opts.Options).dump(ctx, w, opts.Physical)
}

// WriteDump writes the dump of the directory d (see WriteDump) in memory
// bounded by opts.Memory, whatever its number of runs: each line is
// written as soon as its place in the order is known.
func (d *Dir) WriteDump(ctx context.Context, w io.Writer, opts DumpOptions) error {
	v := d.view(opts.Options)
	if err := v.countRuns(ctx); err != nil {
		return err
	}
	return v.dump(ctx, w, opts.Physical)
}

// name is a run's invariant identity.
func name(r *model.Run) string { return r.WorkflowID + "#" + strconv.FormatUint(uint64(r.Gen), 10) }

func at(n string, pos uint32) string { return n + "@" + strconv.FormatUint(uint64(pos), 10) }

const danglingRef = "dangling"

// writeSeen writes the dedup lines: one per message ID and receiving
// workflow, whichever shards hold it (Verify reports an entry on a shard
// its workflow does not belong on).
func writeSeen(out io.Writer, seen *store.SpillMap, phys bool) error {
	var cur, line []byte
	var l seenLine
	var shards []int
	flush := func() error {
		if cur == nil {
			return nil
		}
		if phys {
			l.Phys = &seenPhys{Shards: shards}
		}
		line = l.appendJSON(line[:0])
		_, err := out.Write(line)
		return err
	}
	err := seen.Each(nil, func(k, _ []byte) error {
		e := strEnd(k)
		e += strEnd(k[e:])
		index := int(int64(binary.BigEndian.Uint64(k[e:]) ^ (1 << 63)))
		if cur != nil && bytes.Equal(k[:e], cur) {
			shards = append(shards, index)
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		cur = append(cur[:0], k[:e]...)
		id, rest, err := cutStr(k)
		if err != nil {
			return err
		}
		wf, _, err := cutStr(rest)
		if err != nil {
			return err
		}
		l, shards = seenLine{T: "seen", ID: id, WorkflowID: wf}, []int{index}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

type shardLine struct {
	T    string     `json:"t"`
	Phys *shardPhys `json:"phys"`
}

type shardPhys struct {
	Shard    int    `json:"shard"`
	Count    int    `json:"count"`
	LSN      uint64 `json:"lsn"`
	NextRun  uint64 `json:"next_run"`
	NextSeq  uint64 `json:"next_seq"`
	StoreGen uint64 `json:"store_gen"`
}

type runLine struct {
	T          string   `json:"t"`
	Run        string   `json:"run"`
	WorkflowID string   `json:"workflow_id"`
	Gen        uint32   `json:"gen"`
	Type       string   `json:"type,omitempty"`
	State      string   `json:"state"`
	Status     string   `json:"status,omitempty"`
	Started    int64    `json:"started,omitempty"`
	Finished   int64    `json:"finished,omitempty"`
	Latest     bool     `json:"latest,omitempty"`
	Phys       *runPhys `json:"phys,omitempty"`
	// tm is the template the line is rendered into, with a hole for
	// latest when latestHole is set (dumprun.go).
	tm         *template
	latestHole bool
}

type runPhys struct {
	Shard      int    `json:"shard"`
	No         uint64 `json:"no"`
	Renumbered bool   `json:"renumbered,omitempty"`
}

func (d *dumper) runLine(slot int, r *model.Run, latest bool) runLine {
	line := runLine{T: "run", Run: name(r), WorkflowID: r.WorkflowID, Gen: r.Gen, Type: r.Type, State: r.State.String(),
		Started: r.Started, Finished: r.Finished}
	if r.Status != model.StatusNone {
		line.Status = r.Status.String()
	}
	line.Latest = latest
	if d.phys {
		line.Phys = &runPhys{Shard: d.w.infos[slot].Index, No: uint64(r.No), Renumbered: r.Renumbered}
	}
	return line
}

type recLine struct {
	T          string  `json:"t"`
	Run        string  `json:"run"`
	Pos        uint32  `json:"pos"`
	Kind       string  `json:"kind"`
	Archived   bool    `json:"archived,omitempty"`
	Time       int64   `json:"time,omitempty"`
	Deadline   int64   `json:"deadline,omitempty"`
	Ref        uint32  `json:"ref,omitempty"`
	WorkflowID string  `json:"workflow_id,omitempty"`
	Type       string  `json:"type,omitempty"`
	Name       string  `json:"name,omitempty"`
	MsgID      string  `json:"msg_id,omitempty"`
	Status     string  `json:"status,omitempty"`
	Attempt    uint32  `json:"attempt,omitempty"`
	Origin     string  `json:"origin,omitempty"`
	Gen        uint32  `json:"gen,omitempty"`
	Parent     string  `json:"parent,omitempty"`
	ParentID   string  `json:"parent_id,omitempty"`
	Pred       string  `json:"pred,omitempty"`
	Next       string  `json:"next,omitempty"`
	By         string  `json:"by,omitempty"`
	Key        string  `json:"key,omitempty"`
	Token      string  `json:"token,omitempty"`
	Payload    *string `json:"payload,omitempty"`
	PayloadB64 []byte  `json:"payload_b64,omitempty"`
	// RecPos is the record's own Pos field when it differs from its
	// index (a damaged journal); normally absent.
	RecPos *uint32   `json:"rec_pos,omitempty"`
	Phys   *refsPhys `json:"phys,omitempty"`
	tm     *template // a reference that is holeMark becomes a hole in it
}

// refsPhys holds a record's or message's references as stored.
type refsPhys struct {
	Shard  int    `json:"shard"`
	No     uint64 `json:"no,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	From   string `json:"from,omitempty"`
	Parent string `json:"parent,omitempty"`
	Pred   string `json:"pred,omitempty"`
	Next   string `json:"next,omitempty"`
	By     string `json:"by,omitempty"`
	Key    string `json:"key,omitempty"`
	Token  string `json:"token,omitempty"`
}

func payload(p []byte) (*string, []byte) {
	if len(p) == 0 {
		return nil, nil
	}
	if utf8.Valid(p) {
		s := string(p)
		return &s, nil
	}
	return nil, p
}

func strIf[T fmt.Stringer](v T, zero bool) string {
	if zero {
		return ""
	}
	return v.String()
}

// recLine is record index of run r (stored in slot under key; cur: see
// keyRef), rendered into d.tm: its references are worked out in the
// order they are written (Parent to Token), as the template's holes are.
func (d *dumper) recLine(slot int, key model.RunNo, r *model.Run, cur bool, index uint32, rec *model.Record, archived bool) recLine {
	line := recLine{T: "rec", Run: d.curName, Pos: index, Kind: rec.Kind.String(), Archived: archived,
		Time: rec.Time, Deadline: rec.Deadline, Ref: rec.Ref, WorkflowID: rec.WorkflowID, Type: rec.Type,
		Name: rec.Name, MsgID: rec.MsgID, Attempt: rec.Attempt, Gen: rec.Gen, ParentID: rec.ParentID,
		Status: strIf(rec.Status, rec.Status == model.StatusNone),
		Origin: strIf(rec.Origin, rec.Kind != model.KindStart && rec.Origin == model.OriginFresh),
		Parent: d.posRef(rec.Parent.Shard, rec.Parent.Run, rec.Parent.Pos),
		Pred:   d.runRef(rec.Pred),
		Next:   d.runRef(rec.Next),
		By:     d.runRef(rec.By),
		Key:    d.keyRef(rec.Key, key, r, cur),
		Token:  d.posRef(rec.Token.Shard, rec.Token.Run, rec.Token.Pos),
		tm:     &d.tm,
	}
	if rec.Pos != index {
		p := rec.Pos
		line.RecPos = &p
	}
	line.Payload, line.PayloadB64 = payload(rec.Payload)
	if d.phys {
		p := &refsPhys{Shard: d.w.infos[slot].Index, No: uint64(r.No)}
		if !rec.Parent.IsZero() {
			p.Parent = rec.Parent.String()
		}
		if !rec.Pred.IsZero() {
			p.Pred = rec.Pred.String()
		}
		if !rec.Next.IsZero() {
			p.Next = rec.Next.String()
		}
		if !rec.By.IsZero() {
			p.By = rec.By.String()
		}
		if rec.Key.WorkflowID != "" {
			p.Key = rec.Key.String()
		}
		if rec.Token.Run != 0 {
			p.Token = rec.Token.String()
		}
		line.Phys = p
	}
	return line
}

type timerLine struct {
	T    string    `json:"t"`
	Run  string    `json:"run"`
	Pos  uint32    `json:"pos"`
	At   int64     `json:"at"`
	Phys *refsPhys `json:"phys,omitempty"`
}

type msgLine struct {
	T          string    `json:"t"`
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	From       string    `json:"from"`
	Target     string    `json:"target"`
	Parent     string    `json:"parent,omitempty"`
	ParentID   string    `json:"parent_id,omitempty"`
	Type       string    `json:"type,omitempty"`
	Name       string    `json:"name,omitempty"`
	Status     string    `json:"status,omitempty"`
	Deadline   int64     `json:"deadline,omitempty"`
	Sent       int64     `json:"sent,omitempty"`
	Payload    *string   `json:"payload,omitempty"`
	PayloadB64 []byte    `json:"payload_b64,omitempty"`
	Phys       *refsPhys `json:"phys,omitempty"`
	tm         *template // a reference that is holeMark becomes a hole in it
}

type seenLine struct {
	T          string    `json:"t"`
	ID         string    `json:"id"`
	WorkflowID string    `json:"workflow_id"`
	Phys       *seenPhys `json:"phys,omitempty"`
}

type seenPhys struct {
	Shards []int `json:"shards"`
}
