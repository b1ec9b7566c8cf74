package reshard

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/fusee-dev/fusee/journal/model"
)

// A digest summarises a directory's logical content in a form that does
// not change when runs move and are renumbered: every run reference is
// replaced by the identity of the run it names (workflow ID and
// generation), run numbers, outbox sequence numbers, token generations and
// the renumbered flag are left out, and items are combined by addition,
// so order does not matter. The old directory's digest is computed while
// it is read; the new shards' is computed by reading them back; the
// switch does not begin unless both, and the per-kind counts, are equal.
//
// Each item is hashed with two seeds of its kind's own (so equal bytes of
// two kinds hash apart without the kind being written into the hash), and
// counted in an array indexed by kind.
type digest struct {
	seeds  *[numItemKinds][2]maphash.Seed
	sum    [2]uint64
	counts [numItemKinds]int64
}

// itemKind is the kind of a digest item.
type itemKind uint8

// The item kinds: a run by its state (with its journal), an archive, an
// outbox message, a dedup entry, an index entry, a timer; itemRecord only
// counts the journal records of runs.
const (
	itemRunRunning itemKind = iota
	itemRunParked
	itemRunFinished
	itemRunTombstone
	itemRunOther // a state the entry decoder refuses: never seen
	itemArchive
	itemOutbox
	itemDedup
	itemIndex
	itemTimer
	itemRecord
	numItemKinds
)

// itemNames name the kinds in diff's message.
var itemNames = [numItemKinds]string{
	itemRunRunning:   "run:" + model.StateRunning.String(),
	itemRunParked:    "run:" + model.StateParked.String(),
	itemRunFinished:  "run:" + model.StateFinished.String(),
	itemRunTombstone: "run:" + model.StateTombstone.String(),
	itemRunOther:     "run:other",
	itemArchive:      "archive",
	itemOutbox:       "outbox",
	itemDedup:        "dedup",
	itemIndex:        "index",
	itemTimer:        "timer",
	itemRecord:       "record",
}

// runKind is the item kind of a run in state s.
func runKind(s model.RunState) itemKind {
	switch s {
	case model.StateRunning:
		return itemRunRunning
	case model.StateParked:
		return itemRunParked
	case model.StateFinished:
		return itemRunFinished
	case model.StateTombstone:
		return itemRunTombstone
	}
	return itemRunOther
}

func newDigestPair() (*digest, *digest) {
	seeds := new([numItemKinds][2]maphash.Seed)
	for k := range seeds {
		seeds[k] = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	}
	return &digest{seeds: seeds}, &digest{seeds: seeds}
}

// empty is a digest with d's seeds and nothing added.
func (d *digest) empty() *digest { return &digest{seeds: d.seeds} }

func (d *digest) add(kind itemKind, item []byte) {
	d.counts[kind]++
	s := &d.seeds[kind]
	d.sum[0] += maphash.Bytes(s[0], item)
	d.sum[1] += maphash.Bytes(s[1], item)
}

// merge adds o (a digest of other items, with the same seeds) to d.
func (d *digest) merge(o *digest) {
	for lane := range d.sum {
		d.sum[lane] += o.sum[lane]
	}
	for k, n := range o.counts {
		d.counts[k] += n
	}
}

// diff reports the differences between two digests ("" none): the counts
// that differ, by kind name, else that the content does.
func (d *digest) diff(o *digest) string {
	var diffs []string
	for k, n := range d.counts {
		if n != o.counts[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %d before, %d after", itemNames[k], n, o.counts[k]))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return strings.Join(diffs, "; ")
	}
	if d.sum != o.sum {
		return "the counts agree but the content differs"
	}
	return ""
}

// identityFunc names the run a reference points at: the hash of its
// workflow ID and generation (identity), or ok=false for a dangling
// reference.
type identityFunc func(ref model.RunRef) (id uint64, ok bool, err error)

// canon builds the canonical bytes of items for a digest.
type canon struct {
	id    identityFunc
	b     []byte          // the item being built
	r     []byte          // a record's canonical bytes, before they join b
	mapFn model.RunMapper // c.ref, made once
	err   error
}

// ref is the mapper of canonical bytes: it appends the identity of the
// run ref names (or "dangling") to c.b and replaces the reference by one
// that is the same for every run.
func (c *canon) ref(_ model.RefField, ref model.RunRef) model.RunRef {
	if ref.Run == noSuchRun {
		c.b = append(c.b, 0)
		return model.RunRef{Run: 1}
	}
	id, ok, err := c.id(ref)
	if err != nil && c.err == nil {
		c.err = err
	}
	if !ok {
		c.b = append(c.b, 0)
	} else {
		c.b = append(c.b, 1)
		c.b = binary.BigEndian.AppendUint64(c.b, id)
	}
	return model.RunRef{Run: 1}
}

func (c *canon) mapper() model.RunMapper {
	if c.mapFn == nil {
		c.mapFn = c.ref
	}
	return c.mapFn
}

// A record's part of an item is its length and its canonical bytes: the
// identities of the runs it names (ref), then its encoding with every
// reference replaced by ref's stand-in and its token generation cleared.
// A record without a reference is its own bytes. rawRecord builds them
// from the encoded record, rewriting its references in place
// (model.RecordRefs); record from a decoded one (TestRecordCanonMatchesDecode
// compares the two).

// rawRecord adds a record's length and canonical bytes to c.b.
func (c *canon) rawRecord(shard int, rec []byte, h *model.RecordHead) {
	if !h.HasRefs() {
		c.b = binary.AppendUvarint(c.b, uint64(len(rec)))
		c.b = append(c.b, rec...)
		return
	}
	r, ok := model.ReadRecordRefs(rec, h)
	if !ok {
		// Not as EncodeRecord writes it: decoded, as before.
		d, err := model.DecodeRecord(rec)
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			return
		}
		c.record(shard, d)
		return
	}
	b := c.b
	c.b = c.r[:0]
	r.MapRefs(shard, c.mapper())
	r.SetTokenGen(0)
	c.b = r.Append(c.b)
	c.endRecord(b)
}

// record adds a decoded record's length and canonical bytes to c.b.
func (c *canon) record(keyShard int, rec model.Record) {
	b := c.b
	c.b = c.r[:0]
	rec.MapRefs(keyShard, c.mapper())
	clearTokenGen(&rec)
	c.b = model.EncodeRecord(c.b, &rec)
	c.endRecord(b)
}

// endRecord appends the record's canonical bytes, built in c.b, to the
// item b with their length, and makes b c.b again.
func (c *canon) endRecord(b []byte) {
	c.r = c.b
	b = binary.AppendUvarint(b, uint64(len(c.r)))
	c.b = append(b, c.r...)
}

// runItem begins a run's canonical bytes: its entry without the run
// number, the renumbered flag or the store's own record count (records is
// the length of the journal that follows). The one encoding of a run for
// the old digest, from decoded or raw runs, and for the new one.
func (c *canon) runItem(e *model.RunEntry, records int) {
	c.b = c.b[:0]
	c.b = binary.AppendUvarint(c.b, uint64(len(e.WorkflowID)))
	c.b = append(c.b, e.WorkflowID...)
	c.b = binary.AppendUvarint(c.b, uint64(e.Gen))
	c.b = append(c.b, byte(e.State), byte(e.Status))
	c.b = binary.AppendVarint(c.b, e.Started)
	c.b = binary.AppendVarint(c.b, e.Finished)
	c.b = append(c.b, e.Type...)
	c.b = binary.AppendUvarint(c.b, uint64(records))
}

// archiveOf begins an archive's canonical bytes: the identity of the run
// it belongs to (run no of shard), which binds it to its run whether or
// not the run's entry has been seen (a store's archive keys sort before
// its run keys, and the new stores are checked as they are written).
func (c *canon) archiveOf(shard int, no model.RunNo) {
	c.b = c.b[:0]
	c.ref(0, model.RunRef{Shard: shard, Run: no})
}

func (c *canon) message(d *digest, m model.Message) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = c.b[:0]
	m.MapRefs(c.mapper())
	c.b = model.EncodeMessage(c.b, &m)
	d.add(itemOutbox, c.b)
}

func (c *canon) seen(d *digest, id, wf string) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = binary.AppendUvarint(c.b[:0], uint64(len(id)))
	c.b = append(c.b, id...)
	c.b = append(c.b, wf...)
	d.add(itemDedup, c.b)
}

func (c *canon) index(d *digest, wf string, ref model.RunRef) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = append(c.b[:0], wf...)
	c.b = append(c.b, 0)
	c.ref(0, ref)
	d.add(itemIndex, c.b)
}

func (c *canon) timer(d *digest, k model.TimerKey, shard int) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = binary.AppendVarint(c.b[:0], k.At)
	c.b = binary.AppendUvarint(c.b, uint64(k.Pos))
	c.ref(0, model.RunRef{Shard: shard, Run: k.Run})
	d.add(itemTimer, c.b)
}
