package check

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// How the dump streams. The runs are in the dump by workflow ID, but a
// shard's store holds them by run number, so no store can be read in the
// dump's order without a random read per run. Instead every shard's runs
// pass once, in key order (sequential reads), on several goroutines at
// once (one shard each, workers()), and each run is rendered at once,
// with its records, into a template: its lines as they will be written,
// except for holes where a reference names another run (parent,
// predecessor, next run, sender, caller, completion token, a Ctx::key
// another shard answers for) and where "latest" goes. The template goes
// into one spill map ("lines") under the run's place in the order (its
// workflow ID, generation, shard and numbers); each hole's reference goes
// into the reference join verify uses (refJoin, verify_join.go). The ID
// index goes into the same map as the runs, ahead of each ID's runs (it
// says which run is the latest), and the outbox's messages into a map of
// their own as templates too, keyed by message ID. The timers go into the
// join whole: their place in the order is their run's name.
//
// Once every shard has passed, the join reads each shard's referenced
// runs in key order and puts each hole's text into the map beside its
// template (the template's key and the hole's number), and each timer's
// line into the timers map. Then the maps are read in order: a template is
// written with its holes filled as soon as its fills (which sort right
// after it) have been read. Memory is the maps' and the join's shares of
// the budget (Options.Memory): beyond it they spill to scratch stores,
// where each run of 32 memtables is compacted once into one level
// (store.SpillMap) and the runs are merged once, so the dump costs one
// sequential read of every store, a sequential read of the referenced
// runs per shard and one external sort of the rendered lines, and its
// memory does not grow with the number of scratch tables.

// holeMark is the value a reference field of a line holds when its text
// is not known yet: rendering the line into a template leaves a hole
// there. No rendered reference is ever this string (a name has a '#').
const holeMark = "\x00"

// Kinds of hole.
const (
	holeFill   byte = iota // the text the join puts beside the template, in hole order
	holeLatest             // `,"latest":true` when the ID index names the run
	holeKey                // a Ctx::key known on the spot, unless the odd runs say otherwise
	holeRec                // a record line's start, `{"t":"rec","run":"<name>"`, the same for every record of a run
)

// template is lines rendered with holes (see above). Its encoding, the
// value a spill map holds, is the body followed by its holes and the
// holes' length (4 bytes), so that encoding does not copy the body: the
// holes are uvarint fills, uvarint holes, each hole (uvarint offset into
// the body, kind byte, and for holeKey: count byte, uvarint gen, uvarint
// pos, uvarint run number, the workflow ID as appendStr).
type template struct {
	body   []byte
	holes  []tmplHole
	marked int // holes whose offset the rendering has set
	fills  int
}

type tmplHole struct {
	at   int
	kind byte
	// holeKey: the Ctx::key, and the runs found on the spot (count 0 or
	// 1, and the one's generation)
	wf    string
	no    model.RunNo
	pos   uint32
	count uint8
	gen   uint32
}

func (t *template) reset() {
	t.body, t.holes, t.marked, t.fills = t.body[:0], t.holes[:0], 0, 0
}

// add queues a hole; rendering the line then marks where it is. The
// lines' reference fields are worked out in the order they are written.
func (t *template) add(h tmplHole) {
	if h.kind == holeFill {
		t.fills++
	}
	t.holes = append(t.holes, h)
}

// fill queues a fill hole and returns its number.
func (t *template) fill() int {
	t.add(tmplHole{kind: holeFill})
	return t.fills - 1
}

func (t *template) mark(at int) {
	if t.marked < len(t.holes) {
		t.holes[t.marked].at = at
	}
	t.marked++
}

// encode appends the holes to the body and returns the template's
// encoding (it shares the body's array: valid until the next reset).
func (t *template) encode() ([]byte, error) {
	if t.marked != len(t.holes) {
		return nil, errors.New("check: a dump template's holes do not match its references")
	}
	b := t.body
	n := len(b)
	b = binary.AppendUvarint(b, uint64(t.fills))
	b = binary.AppendUvarint(b, uint64(len(t.holes)))
	for _, h := range t.holes {
		b = binary.AppendUvarint(b, uint64(h.at))
		b = append(b, h.kind)
		if h.kind == holeKey {
			b = append(b, h.count)
			b = binary.AppendUvarint(b, uint64(h.gen))
			b = binary.AppendUvarint(b, uint64(h.pos))
			b = binary.AppendUvarint(b, uint64(h.no))
			b = appendStr(b, h.wf)
		}
	}
	b = appendU32(b, uint32(len(b)-n))
	t.body = b
	return b, nil
}

// splitTemplate returns a template's body and holes (see template).
func splitTemplate(v []byte) (body []byte, holes joinDecoder, err error) {
	if len(v) < 4 {
		return nil, holes, errDamagedTemplate
	}
	n := int(binary.BigEndian.Uint32(v[len(v)-4:]))
	if n > len(v)-4 {
		return nil, holes, errDamagedTemplate
	}
	end := len(v) - 4 - n
	return v[:end], joinDecoder{b: v[end : len(v)-4]}, nil
}

// Kinds of reference put into the join by the dump (the first byte of
// the value).
const (
	djName  byte = iota + 1 // a run reference: the target's name
	djAt                    // a positioned one: name@pos
	djKey                   // a Ctx::key: name@pos if it is the ID's one run
	djTimer                 // a timer: its line, under its run's name
)

// Maps a fill goes into (the second byte of a fill's join value).
const (
	intoLines byte = iota
	intoMsgs
)

// dumpShared is what the dump's goroutines share, under mu.
type dumpShared struct {
	mu                  sync.Mutex // over the maps, odds, runs
	lines, msgs, timers *store.SpillMap
	seen, odd           *store.SpillMap
	odds                int // entries put into odd: none in a healthy directory
	runs                int // runs rendered (progress)
	join                *refJoin
}

// dumper renders on one goroutine.
type dumper struct {
	w    *view
	phys bool
	sh   *dumpShared
	tm   template
	slot int // the shard being rendered
	// the run being rendered (nil: a message), stored under curKey
	curRun  *model.Run
	curKey  model.RunNo
	curName string
	prefix  []byte // its record lines' start (holeRec)
	dest    byte   // the map the template goes into (intoLines, intoMsgs)
	k       []byte // the template's key
	err     error  // the first error putting a reference into the join
	val     []byte
	jkey    []byte
}

func (w *view) dump(ctx context.Context, out io.Writer, phys bool) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	sp, err := newSpills(w.opts, 7)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sp.close(); err == nil {
			err = cerr
		}
	}()
	sh := &dumpShared{lines: sp.new("lines"), msgs: sp.new("msgs"), timers: sp.new("timers"), seen: sp.new("seen"),
		odd: sp.new("odd"), join: &refJoin{w: w, m: sp.new("refs")}}
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
	n := workers()
	ds := make([]dumper, n)
	for i := range ds {
		ds[i] = dumper{w: w, phys: phys, sh: sh}
	}
	produce := func(emit func(int) error) error {
		for slot, src := range w.srcs {
			if src == nil {
				continue
			}
			if err := emit(slot); err != nil {
				return err
			}
		}
		return nil
	}
	work := func(worker, slot int) (struct{}, error) {
		return struct{}{}, ds[worker].shard(ctx, slot)
	}
	if err := inOrder(n, produce, work, func(struct{}) error { return nil }); err != nil {
		return err
	}
	w.progressEnd(PhaseSort, sh.runs)
	if err := sh.odd.Settle(); err != nil { // read by the join's goroutines
		return err
	}
	err = sh.join.resolve(ctx, nil, func() func(target, resolution, []byte) error {
		d := &dumper{w: w, phys: phys, sh: sh}
		return d.finish
	})
	if err != nil {
		return err
	}
	if err := sp.drop(sh.join.m); err != nil {
		return err
	}
	wr := &tmplWriter{out: bw, sh: sh, ctx: ctx, w: w}
	if err := wr.runs(); err != nil {
		return err
	}
	w.progressEnd(PhaseWrite, wr.written)
	if err := sp.drop(sh.lines); err != nil {
		return err
	}
	err = sh.timers.Each(nil, func(_, v []byte) error {
		_, err := bw.Write(v)
		return err
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := wr.walk(sh.msgs, func(k []byte) int { return strEnd(k) + 12 }, nil); err != nil {
		return err
	}
	if err := writeSeen(bw, sh.seen, phys); err != nil {
		return err
	}
	return bw.Flush()
}

// shard renders the shard in slot: its runs into templates, its ID
// index, timers, messages and dedup entries.
func (d *dumper) shard(ctx context.Context, slot int) error {
	s, info := d.w.srcs[slot], d.w.infos[slot]
	d.slot = slot
	home := d.w.byIndex[info.Index] == slot
	n := len(d.w.srcs)
	sh := d.sh
	err := s.runs(ctx, func(key model.RunNo, r *model.Run, h []model.Record, _ bool) error {
		k := appendStr(d.k[:0], r.WorkflowID)
		k = append(k, 1)
		k = appendU32(k, r.Gen)
		k = appendI64(k, int64(info.Index))
		k = appendU64(k, uint64(r.No))
		k = appendU32(k, uint32(slot))
		k = appendU64(k, uint64(key))
		d.k = k
		cur := home && key == r.No && model.ShardOf(r.WorkflowID, n) == info.Index
		d.curRun, d.curKey, d.dest, d.curName = r, key, intoLines, name(r)
		d.prefix = recPrefix(d.prefix[:0], d.curName)
		d.tm.reset()
		line := d.runLine(slot, r, false)
		line.tm, line.latestHole = &d.tm, true
		d.tm.add(tmplHole{kind: holeLatest})
		d.tm.body = line.appendJSON(d.tm.body)
		archived := r.State == model.StateTombstone
		for i := range h {
			// The line is rendered whole, then its start cut out and
			// marked by a hole: it is a fifth of the dump's bytes.
			start, first := len(d.tm.body), len(d.tm.holes)
			d.tm.add(tmplHole{kind: holeRec})
			d.tm.mark(start)
			line := d.recLine(slot, key, r, cur, uint32(i), &h[i], archived)
			d.tm.body = line.appendJSON(d.tm.body)
			if !bytes.HasPrefix(d.tm.body[start:], d.prefix) {
				return errors.New("check: a record line does not start as its run's do")
			}
			p := len(d.prefix)
			d.tm.body = append(d.tm.body[:start], d.tm.body[start+p:]...)
			for j := first + 1; j < len(d.tm.holes); j++ {
				d.tm.holes[j].at -= p
			}
		}
		if d.err != nil {
			return d.err
		}
		v, err := d.tm.encode()
		if err != nil {
			return err
		}
		k = append(k, 0)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		sh.runs++
		d.w.progress(PhaseSort, sh.runs, 0)
		if err := sh.lines.Put(k, v); err != nil {
			return err
		}
		if !cur {
			return d.addOdd(r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = s.index(func(id string, no model.RunNo) error {
		k := appendStr(d.k[:0], id)
		k = append(k, 0)
		k = appendU32(k, uint32(slot))
		d.k = k
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.lines.Put(k, appendU64(d.val[:0], uint64(no)))
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = s.timers(func(k model.TimerKey) error {
		v := append(d.val[:0], djTimer)
		v = binary.AppendUvarint(v, uint64(slot))
		v = binary.AppendUvarint(v, uint64(k.Run))
		v = binary.AppendUvarint(v, uint64(k.Pos))
		v = binary.AppendVarint(v, k.At)
		d.val = v
		var err error
		d.jkey, err = sh.join.add(d.jkey, slot, k.Run, -1, v)
		return err
	})
	if err != nil {
		return err
	}
	err = s.outbox(func(id string, m *model.Message) error {
		d.k = appendU32(appendI64(appendStr(d.k[:0], id), int64(info.Index)), uint32(slot))
		d.curRun, d.dest = nil, intoMsgs
		d.tm.reset()
		l := msgLine{T: "msg", ID: m.ID, Kind: m.Kind.String(), From: d.runRef(m.From), Target: m.Target,
			Parent: d.posRef(m.Parent.Shard, m.Parent.Run, m.Parent.Pos), ParentID: m.ParentID, Type: m.Type, Name: m.Name,
			Status: strIf(m.Status, m.Status == model.StatusNone), Deadline: m.Deadline, Sent: m.Sent, tm: &d.tm}
		if l.From == "" {
			l.From = danglingRef
		}
		l.Payload, l.PayloadB64 = payload(m.Payload)
		if d.phys {
			l.Phys = &refsPhys{Shard: info.Index, Seq: m.Seq, From: m.From.String()}
			if !m.Parent.IsZero() {
				l.Phys.Parent = m.Parent.String()
			}
		}
		d.tm.body = l.appendJSON(d.tm.body)
		if d.err != nil {
			return d.err
		}
		v, err := d.tm.encode()
		if err != nil {
			return err
		}
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.msgs.Put(append(d.k, 0), v)
	})
	if err != nil {
		return err
	}
	return s.seen(func(id, wf string) error {
		d.k = appendU32(appendI64(appendStr(appendStr(d.k[:0], id), wf), int64(info.Index)), uint32(slot))
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.seen.Put(d.k, nil)
	})
}

// addOdd counts a run that its home shard does not answer for under its
// (workflow ID, number) identity: the value is the count and the first
// one's generation. The caller holds sh.mu.
func (d *dumper) addOdd(r *model.Run) error {
	sh := d.sh
	k := appendU64(appendStr(nil, r.WorkflowID), uint64(r.No))
	v, ok, err := sh.odd.Get(k)
	if err != nil {
		return err
	}
	if !ok {
		sh.odds++
		return sh.odd.Put(k, appendU32(appendU32(nil, 1), r.Gen))
	}
	n := binary.BigEndian.Uint32(v)
	return sh.odd.Put(k, appendU32(appendU32(nil, n+1), binary.BigEndian.Uint32(v[4:])))
}

// oddRuns adds the odd runs with the identity (wf, no) to count runs
// found elsewhere (gen: the first one's generation).
func (sh *dumpShared) oddRuns(wf string, no model.RunNo, count int, gen uint32) (int, uint32, error) {
	if sh.odds == 0 {
		return count, gen, nil
	}
	v, ok, err := sh.odd.Get(appendU64(appendStr(nil, wf), uint64(no)))
	if err != nil || !ok {
		return count, gen, err
	}
	if count == 0 {
		gen = binary.BigEndian.Uint32(v[4:])
	}
	return count + int(binary.BigEndian.Uint32(v)), gen, nil
}

// recPrefix appends the start of the record lines of the run named nm.
func recPrefix(b []byte, nm string) []byte {
	return jsonStr(append(b, `{"t":"rec","run":`...), nm)
}

func keyText(wf string, gen uint32, pos uint32, count int) string {
	if count == 1 {
		return at(wf+"#"+strconv.FormatUint(uint64(gen), 10), pos)
	}
	return danglingRef
}

// deferFill puts a fill hole's reference into the join: kind, the map and
// key of the template (d.k), and what follows.
func (d *dumper) deferFill(kind, into byte, slot int, no model.RunNo, extra func([]byte) []byte) {
	i := d.tm.fill()
	v := append(d.val[:0], kind, into)
	v = binary.AppendUvarint(v, uint64(i))
	v = appendBytes(v, d.k)
	if extra != nil {
		v = extra(v)
	}
	d.val = v
	var err error
	if d.jkey, err = d.sh.join.add(d.jkey, slot, no, -1, v); err != nil {
		d.fail(err)
	}
}

func appendBytes(b, p []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(p))), p...) }

func (d *dumper) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// self is the name of the run being rendered when ref names it (no read
// needed), else "".
func (d *dumper) self(slot int, no model.RunNo) string {
	if d.curRun != nil && slot == d.slot && no == d.curKey {
		return name(d.curRun)
	}
	return ""
}

// runRef renders a run reference: at once when no run needs reading, or
// holeMark with the reference put into the join.
func (d *dumper) runRef(ref model.RunRef) string {
	if ref.IsZero() {
		return ""
	}
	slot, ok := d.w.byIndex[ref.Shard]
	if !ok || ref.Run == model.NoSuchRun {
		return danglingRef
	}
	if n := d.self(slot, ref.Run); n != "" {
		return n
	}
	d.deferFill(djName, d.dest, slot, ref.Run, nil)
	return holeMark
}

func (d *dumper) posRef(shard int, no model.RunNo, pos uint32) string {
	if no == 0 {
		return ""
	}
	slot, ok := d.w.byIndex[shard]
	if !ok || no == model.NoSuchRun {
		return danglingRef
	}
	if n := d.self(slot, no); n != "" {
		return at(n, pos)
	}
	d.deferFill(djAt, d.dest, slot, no, func(v []byte) []byte { return binary.AppendUvarint(v, uint64(pos)) })
	return holeMark
}

// keyRef renders a Ctx::key value: the one run anywhere with its workflow
// ID and number, found on the ID's home shard or among the odd runs. The
// run being rendered (r, stored under key; cur: its home shard answers
// for it under its number) is known on the spot, as is a home shard that
// does not exist; the odd runs are known only once every shard has
// passed, so those are holeKey holes.
func (d *dumper) keyRef(k model.CtxKey, key model.RunNo, r *model.Run, cur bool) string {
	if k.WorkflowID == "" {
		return ""
	}
	h := tmplHole{kind: holeKey, wf: k.WorkflowID, no: k.Run, pos: k.Pos}
	if cur && r.WorkflowID == k.WorkflowID && r.No == k.Run {
		h.count, h.gen = 1, r.Gen
	} else if slot, ok := d.w.byIndex[model.ShardOf(k.WorkflowID, len(d.w.srcs))]; ok {
		if slot != d.slot || k.Run != key {
			d.deferFill(djKey, intoLines, slot, k.Run, func(v []byte) []byte {
				v = binary.AppendUvarint(v, uint64(k.Pos))
				v = binary.AppendUvarint(v, uint64(k.Run))
				return appendStr(v, k.WorkflowID)
			})
			return holeMark
		}
		if r.WorkflowID == k.WorkflowID && r.No == k.Run {
			h.count, h.gen = 1, r.Gen
		}
	}
	d.tm.add(h)
	return holeMark
}

// finish is the join's finisher: it works out one deferred reference
// from what the lookup found and puts its text (or a timer's line) into
// its map.
func (d *dumper) finish(t target, res resolution, val []byte) error {
	dec := joinDecoder{b: val}
	kind := dec.byte()
	nm := danglingRef
	if res == resolved && t.r != nil {
		nm = name(t.r)
	}
	sh := d.sh
	if kind == djTimer {
		slot := int(dec.uvarint())
		no := model.RunNo(dec.uvarint())
		pos := uint32(dec.uvarint())
		atT, n := binary.Varint(dec.b)
		if dec.bad || n <= 0 || slot >= len(d.w.srcs) {
			return errDamagedJoin
		}
		index := d.w.infos[slot].Index
		l := timerLine{T: "timer", Run: nm, Pos: pos, At: atT}
		key := appendI64(appendU32(appendStr(d.k[:0], nm), pos), atT)
		if d.phys {
			l.Phys = &refsPhys{Shard: index, No: uint64(no)}
			key = appendI64(key, int64(index))
		}
		key = appendU32(appendU64(key, uint64(no)), uint32(slot))
		d.k = key
		d.val = l.appendJSON(d.val[:0])
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.timers.Put(key, d.val)
	}
	into := dec.byte()
	i := dec.uvarint()
	n := dec.uvarint()
	if dec.bad || uint64(len(dec.b)) < n {
		return errDamagedJoin
	}
	tk := dec.b[:n]
	dec.b = dec.b[n:]
	text := nm
	switch kind {
	case djName:
	case djAt:
		if pos := dec.uvarint(); nm != danglingRef {
			text = at(nm, uint32(pos))
		}
	case djKey:
		pos := uint32(dec.uvarint())
		no := model.RunNo(dec.uvarint())
		wf := dec.str()
		count, gen := 0, uint32(0)
		if res == resolved && t.r != nil && t.r.WorkflowID == wf && t.r.No == no {
			count, gen = 1, t.r.Gen
		}
		var err error
		if count, gen, err = sh.oddRuns(wf, no, count, gen); err != nil {
			return err
		}
		text = keyText(wf, gen, pos, count)
	default:
		return errDamagedJoin
	}
	if dec.bad {
		return errDamagedJoin
	}
	m := sh.lines
	if into == intoMsgs {
		m = sh.msgs
	}
	d.k = appendU32(append(append(d.k[:0], tk...), 1), uint32(i))
	d.val = jsonStr(d.val[:0], text)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return m.Put(d.k, d.val)
}

// tmplWriter writes templates with their holes filled.
type tmplWriter struct {
	out     io.Writer
	sh      *dumpShared
	ctx     context.Context
	w       *view
	written int // runs written (progress)

	key    []byte   // the template held while its fills are read
	tmpl   []byte   // its value
	fills  [][]byte // the fills read so far
	need   int
	latest bool // the held template's latest hole is filled
	buf    []byte
	prefix []byte   // a run's record line start (holeRec)
	fbuf   [][]byte // fill buffers for reuse
}

var errDamagedTemplate = errors.New("check: a damaged dump template")

// runs writes the run and record lines: the lines map, with the ID index
// entries of each workflow ID (ahead of its runs) saying which run is the
// latest.
func (wr *tmplWriter) runs() error {
	var group []byte           // the current workflow ID, as encoded
	latest := map[int]uint64{} // its index entries: slot -> run number
	return wr.walk(wr.sh.lines, func(k []byte) int {
		e := strEnd(k)
		if !bytes.Equal(k[:e], group) {
			group = append(group[:0], k[:e]...)
			clear(latest)
		}
		if len(k) > e && k[e] == 0 {
			return -1
		}
		return e + 33
	}, func(k, v []byte) (bool, error) {
		e := strEnd(k)
		if len(k) > e && k[e] == 0 { // an index entry
			if len(k) != e+5 || len(v) != 8 {
				return false, errDamagedTemplate
			}
			latest[int(binary.BigEndian.Uint32(k[e+1:]))] = binary.BigEndian.Uint64(v)
			return false, nil
		}
		// a run: is it the one its shard's index entry names?
		no := binary.BigEndian.Uint64(k[e+13:])
		slot := int(binary.BigEndian.Uint32(k[e+21:]))
		l, ok := latest[slot]
		wr.written++
		if wr.written%progressEvery == 0 {
			wr.w.progress(PhaseWrite, wr.written, wr.sh.runs)
		}
		return ok && l == no, nil
	})
}

// walk writes the templates of m in key order. keyLen gives the length
// of an entry's template key (-1: the entry is not a template or fill,
// and other is called with it); a template's key is followed by 0, a
// fill's by 1 and its number. other also says, for a template, whether
// its latest hole is filled.
func (wr *tmplWriter) walk(m *store.SpillMap, keyLen func(k []byte) int, other func(k, v []byte) (bool, error)) error {
	count := 0
	err := m.Each(nil, func(k, v []byte) error {
		if count++; count%checkEvery == 0 {
			if err := wr.ctx.Err(); err != nil {
				return err
			}
		}
		n := keyLen(k)
		if n < 0 {
			if other == nil {
				return errDamagedTemplate
			}
			_, err := other(k, v)
			return err
		}
		if n >= len(k) {
			return errDamagedTemplate
		}
		if k[n] == 1 { // a fill
			if wr.need == 0 || !bytes.Equal(k[:n], wr.key) || len(k) != n+5 || int(binary.BigEndian.Uint32(k[n+1:])) != len(wr.fills) {
				return errDamagedTemplate
			}
			i := len(wr.fills)
			if i < len(wr.fbuf) {
				wr.fbuf[i] = append(wr.fbuf[i][:0], v...)
			} else {
				wr.fbuf = append(wr.fbuf, bytes.Clone(v))
			}
			wr.fills = wr.fbuf[:i+1]
			if len(wr.fills) == wr.need {
				wr.need = 0
				return wr.write(wr.key, wr.tmpl, wr.fills)
			}
			return nil
		}
		if wr.need != 0 || len(k) != n+1 {
			return errDamagedTemplate
		}
		latest := false
		if other != nil {
			var err error
			if latest, err = other(k, v); err != nil {
				return err
			}
		}
		_, dec, err := splitTemplate(v)
		if err != nil {
			return err
		}
		need := int(dec.uvarint())
		if dec.bad {
			return errDamagedTemplate
		}
		wr.latest = latest
		if need == 0 {
			return wr.write(k[:n], v, nil)
		}
		wr.need, wr.fills = need, wr.fills[:0]
		wr.key = append(wr.key[:0], k[:n]...)
		wr.tmpl = append(wr.tmpl[:0], v...)
		return nil
	})
	if err == nil && wr.need != 0 {
		err = errDamagedTemplate
	}
	return err
}

// write writes template v, whose key is k, with its fills.
func (wr *tmplWriter) write(k, v []byte, fills [][]byte) error {
	body, dec, err := splitTemplate(v)
	if err != nil {
		return err
	}
	dec.uvarint()
	n := int(dec.uvarint())
	prev, fill := 0, 0
	out := wr.out
	var prefix []byte // of the record lines (holeRec), once one is met
	for range n {
		var b []byte
		at, kind := int(dec.uvarint()), dec.byte()
		if dec.bad || at < prev || at > len(body) {
			return errDamagedTemplate
		}
		if _, err := out.Write(body[prev:at]); err != nil {
			return err
		}
		prev = at
		switch kind {
		case holeFill:
			if fill >= len(fills) {
				return errDamagedTemplate
			}
			b = fills[fill]
			fill++
		case holeLatest:
			b = jsonTrueField(wr.buf[:0], "latest", wr.latest)
			wr.buf = b
		case holeRec:
			if prefix == nil {
				wf, rest, err := cutStr(k)
				if err != nil || len(rest) < 5 {
					return errDamagedTemplate
				}
				wr.prefix = recPrefix(wr.prefix[:0], wf+"#"+strconv.FormatUint(uint64(binary.BigEndian.Uint32(rest[1:])), 10))
				prefix = wr.prefix
			}
			b = prefix
		case holeKey:
			count := int(dec.byte())
			gen := uint32(dec.uvarint())
			pos := uint32(dec.uvarint())
			no := model.RunNo(dec.uvarint())
			wf := dec.str()
			if dec.bad {
				return errDamagedTemplate
			}
			var err error
			if count, gen, err = wr.sh.oddRuns(wf, no, count, gen); err != nil {
				return err
			}
			b = jsonStr(wr.buf[:0], keyText(wf, gen, pos, count))
			wr.buf = b
		default:
			return errDamagedTemplate
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	if dec.bad || len(dec.b) != 0 {
		return errDamagedTemplate
	}
	_, err = out.Write(body[prev:])
	return err
}
