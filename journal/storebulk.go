package journal

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// eachStoreKey calls fn with every key of the store that reflects s under
// header hdr, in ascending key order (the order sstables need). Key and
// value are only valid during the call.
func eachStoreKey(s *Shard, hdr *CheckpointHeader, fn func(key, value []byte) error) error {
	var kb, vb []byte
	// "A": archives by run number.
	for _, no := range slices.Sorted(maps.Keys(s.Archive)) {
		vb = EncodeHistory(vb[:0], s.Archive[no])
		if err := fn(ArchiveKey(no), vb); err != nil {
			return err
		}
	}
	// "H": the header.
	if err := fn(headerKey, EncodeHeader(vb[:0], hdr)); err != nil {
		return err
	}
	// "I": the ID index by workflow ID (byte order, as Go compares strings).
	for _, id := range slices.Sorted(maps.Keys(s.ByID)) {
		kb = append(append(kb[:0], KeyIndex), id...)
		if err := fn(kb, encodeRunNo(s.ByID[id])); err != nil {
			return err
		}
	}
	// "O": the outbox by sequence number.
	for _, m := range s.SortedOutbox() {
		vb = EncodeMessage(vb[:0], m)
		if err := fn(OutboxKey(m.Seq), vb); err != nil {
			return err
		}
	}
	// "R": each run's entry, then its records by position.
	for _, r := range s.SortedRuns() {
		e := entryOf(r)
		vb = EncodeRunEntry(vb[:0], &e)
		if err := fn(RunKey(r.No), vb); err != nil {
			return err
		}
		for pos := range r.Journal {
			vb = EncodeRecord(vb[:0], &r.Journal[pos])
			if err := fn(RecordKey(r.No, uint32(pos)), vb); err != nil {
				return err
			}
		}
	}
	// "S": received message IDs.
	for _, id := range slices.Sorted(maps.Keys(s.Seen)) {
		kb = append(append(kb[:0], KeySeen), id...)
		if err := fn(kb, nil); err != nil {
			return err
		}
	}
	// "T": timers by fire time, run, position.
	timers := slices.SortedFunc(maps.Keys(s.Timers), func(a, b TimerKey) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Run, b.Run), cmp.Compare(a.Pos, b.Pos))
	})
	for _, k := range timers {
		if err := fn(TimerKeyBytes(k), nil); err != nil {
			return err
		}
	}
	return nil
}

// headerFor fills the counters of hdr from s.
func headerFor(s *Shard, hdr CheckpointHeader) CheckpointHeader {
	hdr.Version = StoreVersion
	hdr.Shard, hdr.Count = s.Index, s.Count
	hdr.LSN, hdr.NextRun, hdr.NextSeq = s.LSN, s.NextRun, s.NextSeq
	return hdr
}

// bulkTableSize is where WriteShardStore starts a new sstable.
const bulkTableSize = 64 << 20

// WriteShardStore builds a complete new store for shard s at dir (a store
// directory such as <data dir>/shards/0003/store, which must not exist),
// fast: it writes s's keys in order into sstables, ingests them into a
// fresh pebble store, which places them in its last level without
// rewriting them, and syncs. The store's header is hdr with the shard's
// own numbers (shard, count, LSN, next run, next seq) filled in from s;
// the caller supplies the log position, clock, creation time and store
// generation. Reshard, upgrade and the generator write shards with it.
//
// On failure dir may hold a partial store; the caller removes it (it was
// building beside the directory anyway).
func WriteShardStore(fs vfs.FS, dir string, s *Shard, hdr CheckpointHeader) error {
	hdr = headerFor(s, hdr)
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

	db, err := openStore(fs, dir, nil, false, true)
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
	return syncDir(fs, fs.PathDir(dir))
}

// writeTables writes s's keys into sstables under tmp, starting a new table
// every bulkTableSize bytes, and returns their paths.
func writeTables(fs vfs.FS, tmp string, db *pebble.DB, s *Shard, hdr *CheckpointHeader) ([]string, error) {
	o := storeOptions(fs, nil, false, true)
	o.EnsureDefaults()
	wopts := o.MakeWriterOptions(6, db.FormatMajorVersion().MaxTableFormat())
	var (
		paths []string
		w     *sstable.Writer
	)
	closeTable := func() error {
		if w == nil {
			return nil
		}
		err := w.Close() // syncs and closes the file
		w = nil
		return err
	}
	err := eachStoreKey(s, hdr, func(k, v []byte) error {
		if w != nil && w.Raw().EstimatedSize() >= bulkTableSize {
			if err := closeTable(); err != nil {
				return err
			}
		}
		if w == nil {
			path := fs.PathJoin(tmp, fmt.Sprintf("%06d.sst", len(paths)+1))
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

// syncDir fsyncs a directory so the entries created or renamed in it are
// durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
