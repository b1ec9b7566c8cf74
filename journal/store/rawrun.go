package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/fusee-dev/fusee/journal/model"
)

// Raw runs: a store's runs with their records as encoded bytes, for a
// rewrite that copies what it does not change (reshard). The records are
// checked by ScanRecord (package journal/model, rawrecord.go), not decoded.

// AppendRunKey appends the key of run no's entry to dst.
func AppendRunKey(dst []byte, no model.RunNo) []byte { return appendBE64Key(dst, KeyRun, uint64(no)) }

// AppendRecordKey appends the key of journal record pos of run no to dst.
func AppendRecordKey(dst []byte, no model.RunNo, pos uint32) []byte {
	return binary.BigEndian.AppendUint32(appendBE64Key(dst, KeyRun, uint64(no)), pos)
}

// RawRun is a run as its store holds it: its entry decoded, its records
// and archive as encoded bytes (checked, not decoded).
type RawRun struct {
	No      model.RunNo
	Entry   model.RunEntry
	Records [][]byte           // the encoded records, by position
	Heads   []model.RecordHead // ScanRecord of each record
	Archive []byte             // a tombstone's encoded archived history (nil otherwise)
	// ArchiveRecords are Archive's records in order, each scanned once
	// here for every reader of the run (nil without an archive).
	ArchiveRecords []ArchivedRecord

	// The memory of a recycled run (ShardReader.Recycle), reused by the
	// next run read into it: the records' bytes, the archive's, and the
	// slices' backing arrays.
	buf, archive []byte
	records      [][]byte
	heads        []model.RecordHead
	archived     []ArchivedRecord
}

// An ArchivedRecord is one record of a RawRun's archive, as
// model.EachHistoryRecordAt gives it: where it begins in the archive
// (its length's first byte: Archive[:At] is the history's count and the
// records before it), its bytes (aliasing Archive) and its ScanRecord.
type ArchivedRecord struct {
	At   int
	Rec  []byte
	Head model.RecordHead
}

// scanArchive checks an encoded archived history (EachHistoryRecordAt)
// and returns its records, aliasing p, appended to dst[:0].
func scanArchive(dst []ArchivedRecord, p []byte) ([]ArchivedRecord, error) {
	n, err := model.HistoryLen(p)
	if err != nil {
		return nil, err
	}
	recs := slices.Grow(dst[:0], min(n, len(p)))
	err = model.EachHistoryRecordAt(p, func(at int, rec []byte, h *model.RecordHead) error {
		recs = append(recs, ArchivedRecord{At: at, Rec: rec, Head: *h})
		return nil
	})
	return recs, err
}

// rawOf encodes a run of the overlay (and its archive) as a RawRun.
func rawOf(r *model.Run, archive []model.Record) (*RawRun, error) {
	rr := &RawRun{No: r.No, Entry: model.EntryOf(r)}
	var buf []byte
	ends := make([]int, len(r.Journal))
	for i := range r.Journal {
		buf = model.EncodeRecord(buf, &r.Journal[i])
		ends[i] = len(buf)
	}
	rr.Records = make([][]byte, len(r.Journal))
	rr.Heads = make([]model.RecordHead, len(r.Journal))
	start := 0
	for i, end := range ends {
		rr.Records[i] = buf[start:end:end]
		h, err := model.ScanRecord(rr.Records[i])
		if err != nil {
			return nil, fmt.Errorf("run %d record %d: %w", r.No, i, err)
		}
		rr.Heads[i] = h
		start = end
	}
	if archive != nil {
		rr.Archive = model.EncodeHistory(nil, archive)
		var err error
		if rr.ArchiveRecords, err = scanArchive(nil, rr.Archive); err != nil {
			return nil, fmt.Errorf("run %d archive: %w", r.No, err)
		}
	}
	return rr, nil
}

// RawRuns is Runs with each run as a RawRun: the same runs in the same
// order with the same checks, but records are scanned (ScanRecord), not
// decoded. A RawRun belongs to fn, which may give it back with Recycle
// once it is done with it: the reader reuses only what it is given back.
func (sr *ShardReader) RawRuns(ctx context.Context, fn func(r *RawRun) error) (err error) {
	return eachRun(ctx, sr, runSource[*RawRun]{
		overlay: rawOf,
		stored: func(it *pebble.Iterator, k StoreKey, arch *archiveCursor) (*RawRun, error) {
			rr, err := sr.readRawRun(it, k)
			if err != nil {
				return nil, err
			}
			rr.archive, rr.archived, err = arch.takeRaw(rr.No, rr.Entry.State == model.StateTombstone, rr.archive, rr.archived)
			if err != nil {
				return nil, err
			}
			if rr.Entry.State == model.StateTombstone {
				rr.Archive, rr.ArchiveRecords = rr.archive, rr.archived
			}
			return rr, nil
		},
		skipArchive: func(arch *archiveCursor, no model.RunNo, tombstone bool) error {
			_, _, err := arch.takeRaw(no, tombstone, nil, nil)
			return err
		},
	}, fn)
}

// Recycle gives back a RawRun that RawRuns handed out (the taker uses
// nothing of it after: not its records, heads or archive), so that a
// later run is read into its memory instead of new memory. It may be
// called from any goroutine.
func (sr *ShardReader) Recycle(rr *RawRun) {
	if cap(rr.buf)+cap(rr.archive) > maxRecycledBytes {
		return // an outsized run's memory is not kept
	}
	sr.recycled.Put(rr)
}

// maxRecycledBytes is the most record and archive bytes a recycled
// RawRun may keep.
const maxRecycledBytes = 64 << 10

const (
	// rawRunPresize is the most records readRawRun sizes its slices for
	// before it reads them.
	rawRunPresize = 64
	// rawRunBufBytes is the capacity a raw run's buffer starts with.
	rawRunBufBytes = 512
)

// readRawRun reads the run whose entry is the iterator's current key (k)
// and its records, checked as readRun and checkStoredRun check them, and
// leaves the iterator just past them. The bytes are copied into one
// buffer of the run's own.
func (sr *ShardReader) readRawRun(it *pebble.Iterator, k StoreKey) (*RawRun, error) {
	key := it.Key()
	if k.IsRecord {
		return nil, sr.keyError(key, fmt.Errorf("a journal record without its run entry"))
	}
	if k.Run == model.NoSuchRun {
		return nil, sr.keyError(key, fmt.Errorf("a run numbered %d, the number reserved for references to no run", model.NoSuchRun))
	}
	e, err := model.DecodeRunEntry(it.Value())
	if err != nil {
		return nil, sr.keyError(key, err)
	}
	if err := checkRunEntry(&e); err != nil {
		return nil, sr.keyError(key, err)
	}
	if k.Run >= sr.stored.NextRun {
		return nil, sr.keyError(key, fmt.Errorf("run %d is not below the header's next run number %d", k.Run, sr.stored.NextRun))
	}
	// Read into a recycled run's memory if there is one (Recycle), else
	// sized for the records the entry counts (bounded: the count is not
	// checked yet) and a run's usual few hundred bytes, so that a run
	// costs one allocation of each instead of a growth series.
	n := min(int(e.Records), rawRunPresize)
	rr, _ := sr.recycled.Get().(*RawRun)
	if rr == nil {
		rr = &RawRun{}
	}
	*rr = RawRun{No: k.Run, Entry: e, Heads: slices.Grow(rr.heads[:0], n),
		buf: rr.buf, archive: rr.archive, records: rr.records, archived: rr.archived}
	buf := rr.buf[:0]
	if n > 0 && cap(buf) == 0 {
		buf = make([]byte, 0, rawRunBufBytes)
	}
	ends := sr.rawEnds[:0] // where each record ends in buf: the reader's, reused
	defer func() { sr.rawEnds = ends }()
	for it.Next() {
		key := it.Key()
		rk, err := ParseStoreKey(key)
		if err != nil {
			return nil, sr.keyError(nil, err)
		}
		if !rk.IsRecord {
			break // the next run's entry
		}
		if rk.Run != k.Run {
			return nil, sr.keyError(key, fmt.Errorf("a journal record without its run entry"))
		}
		if int(rk.Pos) != len(ends) || rk.Pos >= e.Records {
			return nil, sr.keyError(key, fmt.Errorf("journal record at position %d, want position %d of %d", rk.Pos, len(ends), e.Records))
		}
		val := it.Value()
		h, err := model.ScanRecord(val)
		if err != nil {
			return nil, sr.keyError(key, err)
		}
		if h.Pos != rk.Pos {
			return nil, sr.keyError(key, fmt.Errorf("record says position %d", h.Pos))
		}
		buf = append(buf, val...)
		ends = append(ends, len(buf))
		rr.Heads = append(rr.Heads, h)
	}
	if err := it.Error(); err != nil {
		return nil, WrapStoreError(sr.path, "reading", err)
	}
	if uint32(len(ends)) != e.Records {
		return nil, sr.keyError(RunKey(k.Run), fmt.Errorf("the run entry says %d journal records, the store has %d", e.Records, len(ends)))
	}
	rr.buf, rr.heads = buf, rr.Heads
	rr.Records = slices.Grow(rr.records[:0], len(ends))[:len(ends)]
	rr.records = rr.Records
	start := 0
	for i, end := range ends {
		rr.Records[i] = buf[start:end:end]
		start = end
	}
	if e.State != model.StateTombstone {
		if st := &rr.Heads[0]; st.Kind != model.KindStart || string(st.WorkflowID(rr.Records[0])) != e.WorkflowID {
			return nil, sr.keyError(RunKey(k.Run), fmt.Errorf("run %d's journal does not begin with its start record", k.Run))
		}
	}
	return rr, nil
}

// takeRaw is take with the archive's bytes (a copy, in p's memory) and
// its records, checked (scanArchive, in recs' memory). Without an archive
// it returns p and recs emptied.
func (c *archiveCursor) takeRaw(no model.RunNo, tombstone bool, p []byte, recs []ArchivedRecord) ([]byte, []ArchivedRecord, error) {
	p, recs = p[:0], recs[:0]
	err := c.takeWith(no, tombstone, func(val []byte) error {
		var err error
		p = append(p, val...)
		recs, err = scanArchive(recs, p)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return p, recs, nil
}
