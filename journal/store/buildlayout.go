package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// The build layout. A store of a directory being built (gen's, under a
// temporary name no reader opens: journal.CreateOptions.Build) holds each
// run under its run entry key alone ("R" run:8), as one value:
//
//	uvarint len(entry) | entry (§5.2) | history (the archive encoding, §5.2, of its journal)
//
// and no record keys ("R" run:8 pos:4). Every other key is as in
// storekey.go. An evicting engine reads a run back with one point read
// (which the build stores' bloom filters serve) instead of an iterator
// over its records, and a checkpoint writes, and a tombstone deletes, one
// key per run instead of one per record. FinishBuild rewrites such a store
// into the store layout, splitting each run value into its entry and
// record keys: the keys and values of the result are those the ordinary
// checkpoints would have written.

// EncodeBuildRun appends run r's build-layout value to dst.
func EncodeBuildRun(dst []byte, r *model.Run) []byte {
	e := model.EntryOf(r)
	mark := len(dst)
	dst = model.EncodeRunEntry(dst, &e)
	n := len(dst) - mark
	// Put the entry's length in front of it: encode it after, then rotate.
	var lb [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lb[:], uint64(n))
	dst = append(dst, lb[:l]...)
	copy(dst[mark+l:], dst[mark:mark+n])
	copy(dst[mark:], lb[:l])
	return model.EncodeHistory(dst, r.Journal)
}

// SplitBuildRun splits a build-layout run value into the run entry's
// encoding, the entry decoded and the history's encoding (both slices of
// val). The history's record count is checked against the entry's.
func SplitBuildRun(val []byte) (entry []byte, e model.RunEntry, history []byte, err error) {
	n, l := binary.Uvarint(val)
	if l <= 0 || n > uint64(len(val)-l) {
		return nil, e, nil, errors.New("build-layout run value: bad entry length")
	}
	entry, history = val[l:l+int(n)], val[l+int(n):]
	if e, err = model.DecodeRunEntry(entry); err != nil {
		return nil, e, nil, err
	}
	count, err := model.HistoryLen(history)
	if err != nil {
		return nil, e, nil, err
	}
	if count != int(e.Records) {
		return nil, e, nil, fmt.Errorf("the run entry says %d journal records, its value has %d", e.Records, count)
	}
	return entry, e, history, nil
}

// DecodeBuildRun decodes run no from its build-layout value, with the
// checks LoadRunKey makes of the store layout's keys.
func DecodeBuildRun(no model.RunNo, val []byte) (*model.Run, error) {
	_, e, history, err := SplitBuildRun(val)
	if err != nil {
		return nil, err
	}
	if err := checkRunEntry(&e); err != nil {
		return nil, err
	}
	r := model.RunOfEntry(no, &e)
	if e.Records == 0 {
		return r, nil
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

// buildHistory appends to dst the archived history of run no, tombstoned
// while evicted, from its build-layout value in src: the value's history
// part, which is the archive's encoding, byte for byte.
func buildHistory(src pebble.Reader, dst []byte, no model.RunNo, n uint32) ([]byte, error) {
	if src == nil {
		return nil, fmt.Errorf("archiving run %d: no store to read its %d journal records from", no, n)
	}
	var serr error // a damaged value, which the message names as such
	found, err := withRunValue(src, no, func(v []byte) error {
		_, e, history, err := SplitBuildRun(v)
		if err == nil && e.Records != n {
			err = fmt.Errorf("the store's run has %d journal records, want %d", e.Records, n)
		}
		serr = err
		dst = append(dst, history...)
		return err
	})
	if err == nil && !found {
		return nil, fmt.Errorf("archiving run %d: the store lacks it (the run entry says %d records)", no, n)
	}
	if serr != nil {
		return nil, fmt.Errorf("archiving run %d: %w", no, serr)
	}
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// withRunValue calls fn with run no's value in src, a shard's store as
// its last checkpoint left it (valid only during the call); found is
// false, fn not called, when src has no such key. src must not be nil.
func withRunValue(src pebble.Reader, no model.RunNo, fn func(v []byte) error) (found bool, err error) {
	v, closer, err := src.Get(RunKey(no))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = fn(v)
	if cerr := closer.Close(); err == nil {
		err = cerr
	}
	return true, err
}

// tombstoneUnreadBuild adds to b the keys of run no, tombstoned while
// evicted and Unread, from its build-layout value in src (one read): the
// tombstoned run, then its archive, the value's history part byte for
// byte (as buildHistory gives it). buf is scratch space, returned.
func tombstoneUnreadBuild(b *pebble.Batch, src pebble.Reader, s *model.Shard, no model.RunNo, buf []byte) ([]byte, error) {
	if src == nil {
		return buf, errors.New("no store to read it from")
	}
	found, err := withRunValue(src, no, func(v []byte) error {
		_, e, history, err := SplitBuildRun(v)
		if err != nil {
			return err
		}
		r, err := s.ResolveTombstone(no, &e)
		if err != nil {
			return err
		}
		buf = EncodeBuildRun(buf[:0], r)
		if err := b.Set(RunKey(no), buf, nil); err != nil {
			return err
		}
		return b.Set(ArchiveKey(no), history, nil) // the batch copies history
	})
	if err == nil && !found {
		err = errors.New("the store lacks it")
	}
	return buf, err
}

// FinishBuild writes the store of build layout src (whole, in key order)
// into a new store at dir in the store layout (StoreWriter: sorted
// sstables, checked, ingested, synced): each run value becomes its run
// entry key and one key per journal record; every other key is copied.
// src is only read.
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
	var kb []byte
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if k[0] != KeyRun {
			err = sw.Add(k, v)
			continue
		}
		if len(k) != 9 {
			err = &StoreError{Path: srcPath, Key: fmt.Sprintf("%q", k), Err: errors.New("a record key in a build-layout store")}
			continue
		}
		no := model.RunNo(binary.BigEndian.Uint64(k[1:]))
		kb, err = splitBuildRun(sw, kb, no, v)
		if err != nil {
			err = &StoreError{Path: srcPath, Key: StoreKey{Kind: KeyRun, Run: no}.String(), Err: err}
		}
	}
	if err == nil {
		err = it.Error()
		if err != nil {
			err = WrapStoreError(srcPath, "reading", err)
		}
	}
	if err = CloseIter(srcPath, it, err); err != nil {
		sw.Abort()
		return err
	}
	return sw.Finish()
}

// splitBuildRun adds run no's store-layout keys, from its build-layout
// value v, to sw; kb is scratch for the keys.
func splitBuildRun(sw *StoreWriter, kb []byte, no model.RunNo, v []byte) ([]byte, error) {
	entry, _, history, err := SplitBuildRun(v)
	if err != nil {
		return kb, err
	}
	kb = appendBE64Key(kb[:0], KeyRun, uint64(no))
	if err := sw.Add(kb, entry); err != nil {
		return kb, err
	}
	pos := uint32(0)
	err = model.EachHistoryBytes(history, func(rec []byte) error {
		kb = AppendRecordKey(kb[:0], no, pos)
		pos++
		return sw.Add(kb, rec)
	})
	return kb, err
}
