package check

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// The run and record lines, most of the dump, are rendered on several
// goroutines (workers()): the order map is read on one, which cuts it
// into batches of runs; each batch is looked up and rendered on a worker
// into a buffer of its own; the buffers are written in batch order
// (inOrder), so the dump is the same whichever worker is faster.

// dumpItem is one run of the order map: where it is stored and whether
// its shard's index names it.
type dumpItem struct {
	slot   int
	key    model.RunNo
	latest model.RunNo // the run number the shard's index entry for the ID names
	hasIdx bool
}

// dumpBatch is how many runs a worker renders at a time.
const dumpBatch = 256

// writeRuns writes the run and record lines in order.
func (d *dumper) writeRuns(ctx context.Context, out io.Writer, order *store.SpillMap) error {
	if err := d.odd.Settle(); err != nil { // read by every worker
		return err
	}
	n := workers()
	renderers := make([]dumper, n)
	for i := range renderers {
		renderers[i] = dumper{w: d.w, phys: d.phys, odd: d.odd, odds: d.odds}
	}
	free := make(chan []byte, 3*n) // rendered buffers, written and given back
	produce := func(emit func([]dumpItem) error) error {
		var group []byte           // the current workflow ID, as encoded
		latest := map[int]uint64{} // its index entries: slot -> run number
		batch := make([]dumpItem, 0, dumpBatch)
		count, written := 0, 0
		err := order.Each(nil, func(k, v []byte) error {
			if count++; count%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			e := strEnd(k)
			if !bytes.Equal(k[:e], group) {
				group = append(group[:0], k[:e]...)
				clear(latest)
			}
			rest := k[e:]
			if rest[0] == 0 {
				latest[int(binary.BigEndian.Uint32(rest[1:]))] = binary.BigEndian.Uint64(v)
				return nil
			}
			it := dumpItem{slot: int(binary.BigEndian.Uint32(rest[len(rest)-12:])), key: model.RunNo(binary.BigEndian.Uint64(rest[len(rest)-8:]))}
			no, ok := latest[it.slot]
			it.latest, it.hasIdx = model.RunNo(no), ok
			if batch = append(batch, it); len(batch) == dumpBatch {
				if err := emit(batch); err != nil {
					return err
				}
				prev := written
				written += len(batch)
				if crossed := written / progressEvery * progressEvery; crossed > prev {
					d.w.progress(PhaseWrite, crossed, d.runs) // at each multiple passed
				}
				batch = make([]dumpItem, 0, dumpBatch)
			}
			return nil
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		return emit(batch)
	}
	work := func(worker int, batch []dumpItem) ([]byte, error) {
		var buf []byte
		select {
		case buf = <-free:
		default:
		}
		return renderers[worker].renderRuns(buf[:0], batch)
	}
	consume := func(buf []byte) error {
		_, err := out.Write(buf)
		select {
		case free <- buf:
		default:
		}
		return err
	}
	return inOrder(n, produce, work, consume)
}

// renderRuns appends the lines of the runs of batch to buf.
func (d *dumper) renderRuns(buf []byte, batch []dumpItem) ([]byte, error) {
	for _, it := range batch {
		r, h, ok, err := d.w.srcs[it.slot].run(it.key)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("check: run %d of shard %d vanished during the dump", it.key, d.w.infos[it.slot].Index)
		}
		d.cur = nil
		if it.key == r.No && d.w.byIndex[d.w.infos[it.slot].Index] == it.slot && model.ShardOf(r.WorkflowID, len(d.w.srcs)) == d.w.infos[it.slot].Index {
			d.cur = r
		}
		line := d.runLine(it.slot, r, it.hasIdx && it.latest == r.No)
		buf = line.appendJSON(buf)
		archived := r.State == model.StateTombstone
		for i := range h {
			line := d.recLine(it.slot, r, uint32(i), &h[i], archived)
			if d.err != nil {
				return nil, d.err
			}
			buf = line.appendJSON(buf)
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	return buf, nil
}
