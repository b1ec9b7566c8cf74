package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// The build layout. A store of a directory being built (gen's, under a
// temporary name no reader opens: journal.CreateOptions.Build) holds each
// run as two keys at most instead of one per journal record:
//
//	"R" run:8    the run entry (§5.2), as in the store layout
//	"J" run:8    the run's journal, in the archive encoding (§5.2); absent when it is empty (a tombstone)
//
// and no record keys ("R" run:8 pos:4). Every other key is as in
// storekey.go. An evicting engine reads a run back with two point reads
// (which the build stores' bloom filters serve) instead of an iterator
// over its records, and a run entry alone from blocks dense with entries;
// a checkpoint writes, and a tombstone deletes, one journal key per run
// instead of one key per record. FinishBuild rewrites such a store into
// the store layout, splitting each journal into its record keys: the keys
// and values of the result are those the ordinary checkpoints would have
// written.

// KeyBuildJournal is the first byte of a build-layout journal key.
const KeyBuildJournal byte = 'J'

// BuildJournalKey is the build-layout key of run no's journal.
func BuildJournalKey(no model.RunNo) []byte { return be64Key(KeyBuildJournal, uint64(no)) }

// checkBuildJournal checks a build-layout journal value against its run
// entry's record count.
func checkBuildJournal(history []byte, records uint32) error {
	n, err := model.HistoryLen(history)
	if err != nil {
		return err
	}
	if n != int(records) {
		return fmt.Errorf("the run entry says %d journal records, its journal key has %d", records, n)
	}
	return nil
}

// DecodeBuildRun decodes run no from its build-layout entry and journal
// (nil: none), with the checks LoadRunKey makes of the store layout's keys.
func DecodeBuildRun(no model.RunNo, entry, history []byte) (*model.Run, error) {
	e, err := model.DecodeRunEntry(entry)
	if err != nil {
		return nil, err
	}
	if e.WorkflowID == "" {
		return nil, errors.New("run entry without a workflow ID")
	}
	if (e.State == model.StateTombstone) != (e.Records == 0) {
		return nil, fmt.Errorf("a %s run with %d journal records", e.State, e.Records)
	}
	r := &model.Run{No: no, WorkflowID: e.WorkflowID, Gen: e.Gen, Type: e.Type, State: e.State,
		Status: e.Status, Started: e.Started, Finished: e.Finished, Renumbered: e.Renumbered}
	if e.Records == 0 {
		if history != nil {
			return nil, errors.New("a journal key for a run without records")
		}
		return r, nil
	}
	if err := checkBuildJournal(history, e.Records); err != nil {
		return nil, err
	}
	if r.Journal, err = model.DecodeHistory(history); err != nil {
		return nil, err
	}
	for i := range r.Journal {
		if r.Journal[i].Pos != uint32(i) {
			return nil, fmt.Errorf("journal record %d says position %d", i, r.Journal[i].Pos)
		}
	}
	return r, nil
}

// writeBuildRun adds run r's build-layout keys to b: its entry, and its
// journal unless the store holds it already (from, the first position
// changed since the store last reflected the run, is its length); a
// tombstone's journal key is deleted (if the store held records).
func writeBuildRun(b *pebble.Batch, buf []byte, r *model.Run, from uint32) ([]byte, error) {
	e := model.EntryOf(r)
	buf = model.EncodeRunEntry(buf[:0], &e)
	if err := b.Set(RunKey(r.No), buf, nil); err != nil {
		return buf, err
	}
	switch {
	case r.State == model.StateTombstone:
		if from > 0 {
			return buf, b.Delete(BuildJournalKey(r.No), nil)
		}
	case int(from) < len(r.Journal):
		buf = model.EncodeHistory(buf[:0], r.Journal)
		return buf, b.Set(BuildJournalKey(r.No), buf, nil)
	}
	return buf, nil
}

// buildHistory appends to dst the archived history of run no, tombstoned
// while evicted, from its build-layout journal key in src: the archive's
// encoding, byte for byte.
func buildHistory(src pebble.Reader, dst []byte, no model.RunNo, n uint32) ([]byte, error) {
	if src == nil {
		return nil, fmt.Errorf("archiving run %d: no store to read its %d journal records from", no, n)
	}
	v, closer, err := src.Get(BuildJournalKey(no))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("archiving run %d: the store lacks its journal (the run entry says %d records)", no, n)
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	if err := checkBuildJournal(v, n); err != nil {
		return nil, fmt.Errorf("archiving run %d: %w", no, err)
	}
	return append(dst, v...), nil
}

// FinishBuild writes the store of build layout src (whole, in key order)
// into a new store at dir in the store layout (StoreWriter: sorted
// sstables, checked, ingested, synced): each run's journal key becomes one
// key per record after its entry; every other key is copied. src is only
// read.
func FinishBuild(fs vfs.FS, src pebble.Reader, srcPath, dir string) (err error) {
	defer RecoverStoreFatal(srcPath, &err)
	sw, err := NewStoreWriter(fs, dir)
	if err != nil {
		return err
	}
	it, err := src.NewIter(nil)
	if err != nil {
		sw.Abort()
		return WrapStoreError(srcPath, "reading", err)
	}
	jt, err := src.NewIter(&pebble.IterOptions{LowerBound: []byte{KeyBuildJournal}, UpperBound: []byte{KeyBuildJournal + 1}})
	if err != nil {
		it.Close()
		sw.Abort()
		return WrapStoreError(srcPath, "reading", err)
	}
	err = finishKeys(sw, srcPath, it, jt)
	err = CloseIter(srcPath, jt, err)
	if err = CloseIter(srcPath, it, err); err != nil {
		sw.Abort()
		return err
	}
	return sw.Finish()
}

// finishKeys adds every key of it but the journal keys to sw, each run
// entry followed by the record keys of its journal, which jt (over the
// journal keys) yields in step.
func finishKeys(sw *StoreWriter, srcPath string, it, jt *pebble.Iterator) error {
	jok := jt.First()
	var kb []byte
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) > 0 && k[0] == KeyBuildJournal {
			ok = it.SeekGE([]byte{KeyBuildJournal + 1})
			if !ok {
				break
			}
			k, v = it.Key(), it.Value()
		}
		if err := sw.Add(k, v); err != nil {
			return err
		}
		if len(k) != 9 || k[0] != KeyRun {
			continue
		}
		no := model.RunNo(binary.BigEndian.Uint64(k[1:]))
		e, err := model.DecodeRunEntry(v)
		if err == nil && e.Records > 0 {
			kb = appendBE64Key(kb[:0], KeyBuildJournal, uint64(no))
			if !jok || !bytes.Equal(jt.Key(), kb) {
				err = errors.New("no journal key for a run with records")
			} else {
				kb, err = splitJournal(sw, kb, no, jt.Value(), e.Records)
				jok = jt.Next()
			}
		}
		if err != nil {
			return &StoreError{Path: srcPath, Key: StoreKey{Kind: KeyRun, Run: no}.String(), Err: err}
		}
	}
	if err := errors.Join(it.Error(), jt.Error()); err != nil {
		return WrapStoreError(srcPath, "reading", err)
	}
	if jok {
		return &StoreError{Path: srcPath, Key: fmt.Sprintf("%q", jt.Key()), Err: errors.New("a journal key without its run entry")}
	}
	return nil
}

// splitJournal adds run no's record keys, from its build-layout journal
// history, to sw; kb is scratch for the keys.
func splitJournal(sw *StoreWriter, kb []byte, no model.RunNo, history []byte, records uint32) ([]byte, error) {
	if err := checkBuildJournal(history, records); err != nil {
		return kb, err
	}
	pos := uint32(0)
	err := model.EachHistoryBytes(history, func(rec []byte) error {
		kb = AppendRecordKey(kb[:0], no, pos)
		pos++
		return sw.Add(kb, rec)
	})
	return kb, err
}
