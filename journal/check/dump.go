package check

import (
	"bufio"
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
	return d.view(opts.Options).dump(ctx, w, opts.Physical)
}

// How the dump streams. A first pass over every shard's run entries and ID
// index puts one small key per run into a spill map sorted by workflow ID
// and generation (with the shard's index entries for the ID before its
// runs, which say which run is the latest); runs whose identity a
// Ctx::key value cannot be resolved through by its home shard (on another
// shard, stored under another number) go into a second map. Timers,
// messages and dedup entries are rendered into spill maps keyed by their
// place in the order. Then the runs are read back in order by point
// lookups, each written with its records, and the other maps after them.
// References are resolved by point lookups on the shard they name.

type dumper struct {
	w    *view
	phys bool
	err  error // the first lookup error; lines rendered after it are discarded
	odd  *store.SpillMap
	odds int // entries put into odd: none in a healthy directory
	runs int // runs collected (progress)
	// cur is the run being written when it is the one its home shard
	// answers for under its own number: a Ctx::key naming it (as a step's
	// own key does) resolves without a lookup.
	cur  *model.Run
	line []byte // a line rendered for a spill map
	key  []byte
}

func (w *view) dump(ctx context.Context, out io.Writer, phys bool) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	sp, err := newSpills(w.opts, 5)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sp.close(); err == nil {
			err = cerr
		}
	}()
	d := &dumper{w: w, phys: phys, odd: sp.new("odd")}
	order, timers, msgs, seen := sp.new("order"), sp.new("timers"), sp.new("msgs"), sp.new("seen")
	if err := d.collect(ctx, order); err != nil {
		return err
	}
	if err := d.collectOthers(ctx, timers, msgs, seen); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	if phys {
		for _, s := range w.srcs {
			if s == nil {
				continue
			}
			i := s.info()
			l := shardLine{T: "shard", Phys: &shardPhys{Shard: i.Index, Count: i.Count, LSN: i.LSN,
				NextRun: uint64(i.NextRun), NextSeq: i.NextSeq, StoreGen: i.StoreGen}}
			if _, err := bw.Write(l.appendJSON(nil)); err != nil {
				return err
			}
		}
	}
	if err := d.writeRuns(ctx, bw, order); err != nil {
		return err
	}
	d.w.progressEnd(PhaseWrite, d.runs)
	if err := sp.drop(order); err != nil {
		return err
	}
	for _, m := range []*store.SpillMap{timers, msgs} {
		err := m.Each(nil, func(_, v []byte) error {
			_, err := bw.Write(v)
			return err
		})
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := d.writeSeen(bw, seen); err != nil {
		return err
	}
	return bw.Flush()
}

// collect fills order (see above) and d.odd.
func (d *dumper) collect(ctx context.Context, order *store.SpillMap) error {
	n := len(d.w.srcs)
	for slot, s := range d.w.srcs {
		if s == nil {
			continue
		}
		info := d.w.infos[slot]
		home := d.w.byIndex[info.Index] == slot
		err := s.entries(ctx, func(key model.RunNo, r *model.Run) error {
			k := appendStr(d.key[:0], r.WorkflowID)
			k = append(k, 1)
			k = appendU32(k, r.Gen)
			k = appendI64(k, int64(info.Index))
			k = appendU64(k, uint64(r.No))
			k = appendU32(k, uint32(slot))
			k = appendU64(k, uint64(key))
			d.key = k
			d.runs++
			d.w.progress(PhaseSort, d.runs, 0)
			if err := order.Put(k, nil); err != nil {
				return err
			}
			if !home || key != r.No || model.ShardOf(r.WorkflowID, n) != info.Index {
				return d.addOdd(r)
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = s.index(func(id string, no model.RunNo) error {
			k := appendStr(d.key[:0], id)
			k = append(k, 0)
			k = appendU32(k, uint32(slot))
			d.key = k
			return order.Put(k, appendU64(nil, uint64(no)))
		})
		if err != nil {
			return err
		}
	}
	d.w.progressEnd(PhaseSort, d.runs)
	return nil
}

// addOdd counts a run that its home shard does not answer for under its
// (workflow ID, number) identity: the value is the count and the first
// one's generation.
func (d *dumper) addOdd(r *model.Run) error {
	k := appendU64(appendStr(nil, r.WorkflowID), uint64(r.No))
	v, ok, err := d.odd.Get(k)
	if err != nil {
		return err
	}
	if !ok {
		d.odds++
		return d.odd.Put(k, appendU32(appendU32(nil, 1), r.Gen))
	}
	n := binary.BigEndian.Uint32(v)
	return d.odd.Put(k, appendU32(appendU32(nil, n+1), binary.BigEndian.Uint32(v[4:])))
}

// name is a run's invariant identity.
func name(r *model.Run) string { return r.WorkflowID + "#" + strconv.FormatUint(uint64(r.Gen), 10) }

func at(n string, pos uint32) string { return n + "@" + strconv.FormatUint(uint64(pos), 10) }

const danglingRef = "dangling"

func (d *dumper) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dumper) runRef(ref model.RunRef) string {
	if ref.IsZero() {
		return ""
	}
	t, res, err := d.w.lookup(ref.Shard, ref.Run, -1)
	if err != nil {
		d.fail(err)
	}
	if res == resolved && t.r != nil {
		return name(t.r)
	}
	return danglingRef
}

func (d *dumper) posRef(shard int, no model.RunNo, pos uint32) string {
	if no == 0 {
		return ""
	}
	if s := d.runRef(model.RunRef{Shard: shard, Run: no}); s != danglingRef {
		return at(s, pos)
	}
	return danglingRef
}

// keyRef renders a Ctx::key value: the one run anywhere with its workflow
// ID and number, found on the ID's home shard or among the odd runs.
func (d *dumper) keyRef(k model.CtxKey) string {
	if k.WorkflowID == "" {
		return ""
	}
	count, gen := 0, uint32(0)
	if c := d.cur; c != nil && c.WorkflowID == k.WorkflowID && c.No == k.Run {
		count, gen = 1, c.Gen
	} else if slot, ok := d.w.byIndex[model.ShardOf(k.WorkflowID, len(d.w.srcs))]; ok {
		r, found, err := d.w.srcs[slot].entry(k.Run)
		if err != nil {
			d.fail(err)
		}
		if found && r.WorkflowID == k.WorkflowID && r.No == k.Run {
			count, gen = 1, r.Gen
		}
	}
	var v []byte
	ok := false
	if d.odds > 0 {
		var err error
		if v, ok, err = d.odd.Get(appendU64(appendStr(nil, k.WorkflowID), uint64(k.Run))); err != nil {
			d.fail(err)
		}
	}
	if ok {
		if count == 0 {
			gen = binary.BigEndian.Uint32(v[4:])
		}
		count += int(binary.BigEndian.Uint32(v))
	}
	if count == 1 {
		return at(k.WorkflowID+"#"+strconv.FormatUint(uint64(gen), 10), k.Pos)
	}
	return danglingRef
}

// render encodes line as the dump writes it, for a spill map.
func (d *dumper) render(line interface{ appendJSON([]byte) []byte }) ([]byte, error) {
	d.line = line.appendJSON(d.line[:0])
	return d.line, d.err
}

// collectOthers renders the timer and message lines into their maps, and
// puts each dedup entry into seen.
func (d *dumper) collectOthers(ctx context.Context, timers, msgs, seen *store.SpillMap) error {
	var seq uint64 // keeps keys unique
	for slot, s := range d.w.srcs {
		if s == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		index := d.w.infos[slot].Index
		err := s.timers(func(k model.TimerKey) error {
			run := danglingRef
			r, ok, err := s.entry(k.Run)
			if err != nil {
				return err
			}
			if ok {
				run = name(r)
			}
			l := timerLine{T: "timer", Run: run, Pos: k.Pos, At: k.At}
			key := appendI64(appendU32(appendStr(nil, run), k.Pos), k.At)
			if d.phys {
				l.Phys = &refsPhys{Shard: index, No: uint64(k.Run)}
				key = appendI64(key, int64(index))
			}
			seq++
			key = appendU64(appendU64(key, uint64(k.Run)), seq)
			v, err := d.render(&l)
			if err != nil {
				return err
			}
			return timers.Put(key, v)
		})
		if err != nil {
			return err
		}
		err = s.outbox(func(id string, m *model.Message) error {
			l := msgLine{T: "msg", ID: m.ID, Kind: m.Kind.String(), From: d.runRef(m.From), Target: m.Target,
				Parent: d.posRef(m.Parent.Shard, m.Parent.Run, m.Parent.Pos), ParentID: m.ParentID, Type: m.Type, Name: m.Name,
				Status: strIf(m.Status, m.Status == model.StatusNone), Deadline: m.Deadline, Sent: m.Sent}
			if l.From == "" {
				l.From = danglingRef
			}
			l.Payload, l.PayloadB64 = payload(m.Payload)
			if d.phys {
				l.Phys = &refsPhys{Shard: index, Seq: m.Seq, From: m.From.String()}
				if !m.Parent.IsZero() {
					l.Phys.Parent = m.Parent.String()
				}
			}
			v, err := d.render(&l)
			if err != nil {
				return err
			}
			seq++
			return msgs.Put(appendU64(appendI64(appendStr(nil, id), int64(index)), seq), v)
		})
		if err != nil {
			return err
		}
		err = s.seen(func(id, wf string) error {
			return seen.Put(appendU32(appendI64(appendStr(appendStr(nil, id), wf), int64(index)), uint32(slot)), nil)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeSeen writes the dedup lines: one per message ID and receiving
// workflow, whichever shards hold it (Verify reports an entry on a shard
// its workflow does not belong on).
func (d *dumper) writeSeen(out io.Writer, seen *store.SpillMap) error {
	var cur []byte
	var l seenLine
	var shards []int
	flush := func() error {
		if cur == nil {
			return nil
		}
		if d.phys {
			l.Phys = &seenPhys{Shards: shards}
		}
		d.line = l.appendJSON(d.line[:0])
		_, err := out.Write(d.line)
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

func (d *dumper) recLine(slot int, r *model.Run, index uint32, rec *model.Record, archived bool) recLine {
	line := recLine{T: "rec", Run: name(r), Pos: index, Kind: rec.Kind.String(), Archived: archived,
		Time: rec.Time, Deadline: rec.Deadline, Ref: rec.Ref, WorkflowID: rec.WorkflowID, Type: rec.Type,
		Name: rec.Name, MsgID: rec.MsgID, Attempt: rec.Attempt, Gen: rec.Gen, ParentID: rec.ParentID,
		Status: strIf(rec.Status, rec.Status == model.StatusNone),
		Origin: strIf(rec.Origin, rec.Kind != model.KindStart && rec.Origin == model.OriginFresh),
		Parent: d.posRef(rec.Parent.Shard, rec.Parent.Run, rec.Parent.Pos),
		Pred:   d.runRef(rec.Pred),
		Next:   d.runRef(rec.Next),
		By:     d.runRef(rec.By),
		Key:    d.keyRef(rec.Key),
		Token:  d.posRef(rec.Token.Shard, rec.Token.Run, rec.Token.Pos),
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
