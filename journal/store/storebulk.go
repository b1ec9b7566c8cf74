package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
)

// A keyPart emits one key range of a store in ascending order; the parts
// of storeParts, one after another, are the whole store in key order. Key
// and value passed to fn are only valid during the call.
type keyPart func(fn func(key, value []byte) error) error

// storeParts splits the store that reflects s under header hdr into key
// ranges that can be written independently (into separate sstables, in
// parallel): the small kinds before the runs, the runs in up to runParts
// ranges of run numbers, the kinds after.
func storeParts(s *model.Shard, hdr *model.CheckpointHeader, runParts int) []keyPart {
	runs := s.SortedRuns()
	parts := []keyPart{func(fn func(k, v []byte) error) error {
		var kb, vb []byte
		// "A": archives by run number.
		for _, no := range slices.Sorted(maps.Keys(s.Archive)) {
			kb = appendBE64Key(kb[:0], KeyArchive, uint64(no))
			if err := fn(kb, model.EncodeHistory(vb[:0], s.Archive[no])); err != nil {
				return err
			}
		}
		// "H": the header.
		if err := fn(headerKey, model.EncodeHeader(vb[:0], hdr)); err != nil {
			return err
		}
		// "I": the ID index by workflow ID (byte order, as Go compares strings).
		for _, id := range slices.Sorted(maps.Keys(s.ByID)) {
			kb = append(append(kb[:0], KeyIndex), id...)
			vb = binary.BigEndian.AppendUint64(vb[:0], uint64(s.ByID[id]))
			if err := fn(kb, vb); err != nil {
				return err
			}
		}
		// "O": the outbox by sequence number.
		for _, m := range s.SortedOutbox() {
			kb = appendBE64Key(kb[:0], KeyOutbox, m.Seq)
			if err := fn(kb, model.EncodeMessage(vb[:0], m)); err != nil {
				return err
			}
		}
		return nil
	}}
	// "R": each run's entry, then its records by position.
	per := max(1, (len(runs)+runParts-1)/max(1, runParts))
	for lo := 0; lo < len(runs); lo += per {
		chunk := runs[lo:min(lo+per, len(runs))]
		parts = append(parts, func(fn func(k, v []byte) error) error {
			var kb, vb []byte
			for _, r := range chunk {
				e := model.EntryOf(r)
				kb = appendBE64Key(kb[:0], KeyRun, uint64(r.No))
				if err := fn(kb, model.EncodeRunEntry(vb[:0], &e)); err != nil {
					return err
				}
				for pos := range r.Journal {
					kb = binary.BigEndian.AppendUint32(appendBE64Key(kb[:0], KeyRun, uint64(r.No)), uint32(pos))
					vb = model.EncodeRecord(vb[:0], &r.Journal[pos])
					if err := fn(kb, vb); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	parts = append(parts, func(fn func(k, v []byte) error) error {
		var kb, vb []byte
		// "S": received message IDs, with the workflow each went to.
		for _, id := range slices.Sorted(maps.Keys(s.Seen)) {
			kb = append(append(kb[:0], KeySeen), id...)
			if err := fn(kb, model.EncodeSeenValue(vb[:0], s.Seen[id])); err != nil {
				return err
			}
		}
		// "T": timers by fire time, run, position.
		for _, k := range slices.SortedFunc(maps.Keys(s.Timers), model.CompareTimers) {
			kb = AppendTimerKey(kb[:0], k)
			if err := fn(kb, nil); err != nil {
				return err
			}
		}
		return nil
	})
	return parts
}

// EachStoreKey calls fn with every key of the store that reflects s under
// header hdr, in ascending key order.
func EachStoreKey(s *model.Shard, hdr *model.CheckpointHeader, fn func(key, value []byte) error) error {
	for _, part := range storeParts(s, hdr, 1) {
		if err := part(fn); err != nil {
			return err
		}
	}
	return nil
}

// HeaderFor fills the counters of hdr from s, the store generation
// included: a store's header gen is always its shard's StoreGen.
func HeaderFor(s *model.Shard, hdr model.CheckpointHeader) model.CheckpointHeader {
	hdr.Version = model.StoreVersion
	hdr.Shard, hdr.Count = s.Index, s.Count
	hdr.LSN, hdr.NextRun, hdr.NextSeq = s.LSN, s.NextRun, s.NextSeq
	hdr.Gen = s.StoreGen
	return hdr
}

// bulkTableSize is where WriteShardStore starts a new sstable.
const bulkTableSize = 64 << 20

// WriteShardStore builds a complete new store for shard s at dir (a store
// directory such as <data dir>/shards/0003/store, which must not exist),
// fast: it writes s's keys in order into sstables, ingests them into a
// fresh pebble store, which places them in its last level without
// rewriting them, and syncs. The store's header is hdr with the shard's
// own numbers (shard, count, LSN, next run, next seq, store generation)
// filled in from s; the caller supplies the log position, clock, creation
// time and checkpoint seq. hdr.Gen must be 0 or s.StoreGen: a store
// rebuilt whole gets a new generation by its shard getting one (a
// reshard sets each new shard's StoreGen to the old one's + 1 before
// writing it). Reshard, upgrade and the generator write shards with it.
// s.ByID must be the index its runs imply (each ID's highest generation:
// RebuildIndex makes it so); WriteShardStore refuses a shard whose index
// differs rather than write a store that recovery would refuse.
//
// On failure dir may hold a partial store; the caller removes it (it was
// building beside the directory anyway).
func WriteShardStore(fs vfs.FS, dir string, s *model.Shard, hdr model.CheckpointHeader) error {
	if s.StoreGen == 0 || (hdr.Gen != 0 && hdr.Gen != s.StoreGen) {
		return fmt.Errorf("writing shard store %s: store generation %d for a shard of store generation %d (0 is no generation)",
			dir, hdr.Gen, s.StoreGen)
	}
	hdr = HeaderFor(s, hdr)
	if ids := model.DeriveIndex(s.Runs); !maps.Equal(ids, s.ByID) {
		// The store would not load: its index must be the one the runs imply.
		return fmt.Errorf("writing shard store %s: the shard's ID index differs from its runs' highest generations: %s",
			dir, firstIDDiff(s.ByID, ids))
	}
	if _, err := fs.Stat(dir); err == nil {
		return fmt.Errorf("writing shard store %s: it already exists", dir)
	}
	tmp := dir + ".ingest"
	if err := fs.RemoveAll(tmp); err != nil {
		return fmt.Errorf("writing shard store %s: %w", dir, err)
	}
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("writing shard store %s: %w", dir, err)
	}
	defer func() { _ = fs.RemoveAll(tmp) }()

	db, err := OpenStore(fs, dir, nil, false, true)
	if err != nil {
		return err
	}
	paths, err := writeTables(fs, tmp, db, s, &hdr)
	if err == nil && len(paths) > 0 {
		err = db.Ingest(context.Background(), paths)
	}
	if err == nil {
		// Ingest synced the tables, the manifest and the store directory.
		// Flush is a no-op here (nothing went through the memtable) and
		// makes that not depend on ingest's internals.
		err = db.Flush()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing shard store %s: %w", dir, err)
	}
	return meta.SyncDir(fs, fs.PathDir(dir))
}

// writeTables writes s's keys into sstables under tmp and returns their
// paths. The store's key ranges (storeParts) are written by up to
// GOMAXPROCS goroutines, each range into its own tables, a new table every
// bulkTableSize bytes; the tables do not overlap, so one ingest places
// them all in the last level.
func writeTables(fs vfs.FS, tmp string, db *pebble.DB, s *model.Shard, hdr *model.CheckpointHeader) ([]string, error) {
	o := StoreOptions(fs, nil, false, true)
	o.EnsureDefaults()
	wopts := o.MakeWriterOptions(6, db.FormatMajorVersion().MaxTableFormat())
	workers := runtime.GOMAXPROCS(0)
	parts := storeParts(s, hdr, 2*workers)
	paths := make([][]string, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i, part := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			paths[i], errs[i] = writePart(fs, fs.PathJoin(tmp, fmt.Sprintf("part%04d-", i)), wopts, part)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(paths...), nil
}

// writePart writes one key range into tables named prefix000001.sst, ….
// A range with no keys writes no table.
func writePart(fs vfs.FS, prefix string, wopts sstable.WriterOptions, part keyPart) ([]string, error) {
	var (
		paths []string
		w     *sstable.Writer
	)
	closeTable := func() error {
		if w == nil {
			return nil
		}
		err := w.Close() // flushes, syncs and closes the file
		w = nil
		return err
	}
	err := part(func(k, v []byte) error {
		if w != nil && w.Raw().EstimatedSize() >= bulkTableSize {
			if err := closeTable(); err != nil {
				return err
			}
		}
		if w == nil {
			path := fmt.Sprintf("%s%06d.sst", prefix, len(paths)+1)
			f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				return err
			}
			paths = append(paths, path)
			w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), wopts)
		}
		return w.Set(k, v)
	})
	if err != nil {
		if w != nil {
			_ = w.Close()
		}
		return nil, err
	}
	return paths, closeTable()
}
