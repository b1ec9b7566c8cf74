package reshard

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
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
type digest struct {
	seeds  *[2]maphash.Seed
	sum    [2]uint64
	counts map[string]int64
}

func newDigestPair() (*digest, *digest) {
	seeds := &[2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	return &digest{seeds: seeds, counts: map[string]int64{}}, &digest{seeds: seeds, counts: map[string]int64{}}
}

func (d *digest) add(kind string, item []byte) {
	d.counts[kind]++
	var h maphash.Hash
	for lane, seed := range d.seeds {
		h.SetSeed(seed)
		h.WriteString(kind)
		h.WriteByte(0)
		h.Write(item)
		d.sum[lane] += h.Sum64()
	}
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

// equal reports the first difference between two digests ("" none).
func (d *digest) diff(o *digest) string {
	kinds := map[string]bool{}
	for k := range d.counts {
		kinds[k] = true
	}
	for k := range o.counts {
		kinds[k] = true
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if d.counts[k] != o.counts[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %d before, %d after", k, d.counts[k], o.counts[k]))
		}
	}
	if len(diffs) > 0 {
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
	id  identityFunc
	b   []byte
	err error
}

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

func (c *canon) record(keyShard int, rec model.Record) {
	rec.MapRefs(keyShard, c.ref)
	clearTokenGen(&rec)
	c.b = model.EncodeRecord(c.b, &rec)
}

// run adds a run, its journal and its archive to d. The item methods do
// nothing with a nil d.
func (c *canon) run(d *digest, shard int, r *model.Run, archive []model.Record) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	e := model.EntryOf(r)
	c.runItem(&e, len(r.Journal))
	for _, rec := range r.Journal {
		c.record(shard, rec)
	}
	d.add("run:"+r.State.String(), c.b)
	d.counts["record"] += int64(len(r.Journal))
	if archive != nil {
		c.archiveOf(shard, r.No)
		for _, rec := range archive {
			c.record(shard, rec)
		}
		d.add("archive", c.b)
	}
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
	m.MapRefs(c.ref)
	c.b = model.EncodeMessage(c.b, &m)
	d.add("outbox", c.b)
}

func (c *canon) seen(d *digest, id, wf string) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = binary.AppendUvarint(c.b[:0], uint64(len(id)))
	c.b = append(c.b, id...)
	c.b = append(c.b, wf...)
	d.add("dedup", c.b)
}

func (c *canon) index(d *digest, wf string, ref model.RunRef) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = append(c.b[:0], wf...)
	c.b = append(c.b, 0)
	c.ref(0, ref)
	d.add("index", c.b)
}

func (c *canon) timer(d *digest, k model.TimerKey, shard int) {
	if d == nil {
		return // a dry run checks nothing against it
	}
	c.b = binary.AppendVarint(c.b[:0], k.At)
	c.b = binary.AppendUvarint(c.b, uint64(k.Pos))
	c.ref(0, model.RunRef{Shard: shard, Run: k.Run})
	d.add("timer", c.b)
}
