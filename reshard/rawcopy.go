package reshard

import (
	"encoding/binary"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// The byte-copy rewrite: a run is read as a store.RawRun (records
// checked, not decoded), and only the records whose presence mask shows a
// run reference (parent, pred, next, by, key, token: about a fifth of
// them) are rewritten, in their encoded bytes (model.RecordRefs: the
// reference fields encoded again between the bytes before and after
// them); every other record, in journals and archived histories alike,
// goes into the new store as the bytes it had, and an archived history
// with no reference in it goes whole. The digest (canon.rawRun) likewise
// takes a reference-free record's bytes as they are and rewrites the
// others' references in place.

// rawRewriter rewrites raw runs for their new shard and number. One
// goroutine uses it; its buffers are reused from run to run.
type rawRewriter struct {
	mapper model.RunMapper
	gen    uint64 // the new stores' generation
	put    func(shard int, key, value []byte) error
	counts *Counts
	// token adds a pending completion of old shard oldShard's run oldNo
	// to the report's list.
	token  func(oldShard int, oldNo model.RunNo, t TokenChange) error
	kb, vb []byte
	hb     []byte // the archive being rewritten
	rb     []byte // a rewritten record inside an archive
	async  []asyncToken
	done   map[uint32]bool
	// pending are the last run's pending completions, old and new token
	// (the report's renumbered_unfinished entries carry them).
	pending []RunToken
}

// asyncToken is a completion token of an unfinished run, before and
// after the rewrite.
type asyncToken struct {
	pos      uint32
	old, new model.Token
}

// record returns rec as the new store holds it: rec itself when it has no
// run reference, else rewritten into dst. The references are rewritten in
// the encoded bytes (model.RecordRefs); only a record whose references are
// not as EncodeRecord writes them (none the engine writes) is decoded.
func (w *rawRewriter) record(oldShard int, rec []byte, h *model.RecordHead, dst []byte, unfinished bool) ([]byte, error) {
	if !h.HasRefs() {
		return rec, nil
	}
	r, ok := model.ReadRecordRefs(rec, h)
	if !ok {
		return w.decoded(oldShard, rec, dst, unfinished)
	}
	old := r.Token
	r.MapRefs(oldShard, w.mapper)
	r.SetTokenGen(model.TokenGen(w.gen))
	if unfinished && h.Kind == model.KindAsync && old.Run != 0 {
		w.async = append(w.async, asyncToken{pos: h.Pos, old: old, new: r.Token})
	}
	return r.Append(dst), nil
}

// decoded is record by decoding, mapping and encoding.
func (w *rawRewriter) decoded(oldShard int, rec []byte, dst []byte, unfinished bool) ([]byte, error) {
	r, err := model.DecodeRecord(rec)
	if err != nil {
		return nil, err
	}
	old := r.Token
	r.MapRefs(oldShard, w.mapper)
	setTokenGen(&r, w.gen)
	if unfinished && r.Kind == model.KindAsync && old.Run != 0 {
		w.async = append(w.async, asyncToken{pos: r.Pos, old: old, new: r.Token})
	}
	return model.EncodeRecord(dst, &r), nil
}

// run puts the keys of rr, old shard oldShard's run, as run m.No of new
// shard m.Shard: its entry, its records and its archive.
func (w *rawRewriter) run(rr *store.RawRun, oldShard int, m plan.Mapped) error {
	e := rr.Entry
	e.Renumbered = m.Renumbered
	w.kb = store.AppendRunKey(w.kb[:0], m.No)
	w.vb = model.EncodeRunEntry(w.vb[:0], &e)
	if err := w.put(m.Shard, w.kb, w.vb); err != nil {
		return err
	}
	unf := plan.Unfinished(e.State)
	w.async, w.pending = w.async[:0], w.pending[:0]
	if unf {
		clear(w.done)
	}
	for k, rec := range rr.Records {
		h := &rr.Heads[k]
		val, err := w.record(oldShard, rec, h, w.vb[:0], unf)
		if err != nil {
			return err
		}
		if h.HasRefs() {
			w.vb = val // rewritten into w.vb (else val is rec itself)
		}
		if unf && h.Kind == model.KindAsyncDone {
			if w.done == nil {
				w.done = map[uint32]bool{}
			}
			w.done[h.Ref] = true
		}
		w.kb = store.AppendRecordKey(w.kb[:0], m.No, uint32(k))
		if err := w.put(m.Shard, w.kb, val); err != nil {
			return err
		}
	}
	w.counts.Records += int64(len(rr.Records))
	if err := w.pendingTokens(oldShard, rr.No, e.WorkflowID); err != nil {
		return err
	}
	if rr.Archive == nil {
		return nil
	}
	return w.archive(rr, oldShard, m)
}

// pendingTokens reports the last run's completion tokens that no
// completion record answered: the run's pending ones.
func (w *rawRewriter) pendingTokens(oldShard int, oldNo model.RunNo, wf string) error {
	for _, t := range w.async {
		if w.done[t.pos] {
			continue
		}
		w.counts.PendingTokens++
		rt := RunToken{Position: t.pos, Old: t.old.String(), New: t.new.String()}
		w.pending = append(w.pending, rt)
		err := w.token(oldShard, oldNo, TokenChange{WorkflowID: wf, Position: rt.Position, Old: rt.Old, New: rt.New})
		if err != nil {
			return err
		}
	}
	return nil
}

// archive puts rr's history archive as run m.No's: copied whole unless a
// record in it has a reference; from the first such record on, it is
// built again in w.hb.
func (w *rawRewriter) archive(rr *store.RawRun, oldShard int, m plan.Mapped) error {
	w.counts.Archives++
	w.counts.Records += int64(len(rr.ArchiveRecords))
	rewrite := false
	for k := range rr.ArchiveRecords {
		a := &rr.ArchiveRecords[k]
		if !a.Head.HasRefs() {
			if rewrite {
				w.hb = model.AppendHistoryRecord(w.hb, a.Rec)
			}
			continue
		}
		if !rewrite {
			rewrite = true
			w.hb = append(w.hb[:0], rr.Archive[:a.At]...)
		}
		val, err := w.record(oldShard, a.Rec, &a.Head, w.rb[:0], false)
		if err != nil {
			return err
		}
		w.rb = val
		w.hb = model.AppendHistoryRecord(w.hb, val)
	}
	val := rr.Archive
	if rewrite {
		val = w.hb
	}
	w.kb = binary.BigEndian.AppendUint64(append(w.kb[:0], store.KeyArchive), uint64(m.No))
	return w.put(m.Shard, w.kb, val)
}

// rawRun adds a run read as bytes, its journal and its archive to d.
func (c *canon) rawRun(d *digest, shard int, r *store.RawRun) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	e := &r.Entry
	c.runItem(e, len(r.Records))
	for k, rec := range r.Records {
		c.rawRecord(shard, rec, &r.Heads[k])
	}
	d.add(runKind(e.State), c.b)
	d.counts[itemRecord] += int64(len(r.Records))
	if r.Archive != nil {
		c.archiveOf(shard, r.No)
		for k := range r.ArchiveRecords {
			a := &r.ArchiveRecords[k]
			c.rawRecord(shard, a.Rec, &a.Head)
		}
		d.add(itemArchive, c.b)
	}
}
