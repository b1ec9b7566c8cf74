package store

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
)

// StoreWriter builds a new shard store from keys given in ascending order
// within each kind (a key's first byte, docs/format.md §5.1), without
// holding the shard in memory: each kind's keys go straight into sstables
// of their own (a new table every bulkTableSize bytes), which Finish
// ingests into a fresh pebble store in one call and syncs; the tables of
// different kinds never overlap, so pebble places them all in the bottom
// level. A caller can thus write the runs of a store and its archives,
// index or timers as they come, in one pass. It is WriteShardStore for a
// caller that streams (reshard); the caller is responsible for the keys
// being a valid store.
type StoreWriter struct {
	// NoReadBack leaves out checkTable, the read of every finished table
	// before it is ingested. Only the benchmark of the bare rewrite (the
	// floor reshard is measured against) sets it.
	NoReadBack bool

	fs     vfs.FS
	dir    string
	tmp    string
	db     *pebble.DB
	trap   *fatalTrap
	wopts  sstable.WriterOptions
	ropts  sstable.ReaderOptions
	lanes  [256]*storeLane // by kind (a key's first byte): an array, not a map, since every Add looks its lane up
	paths  []string
	keys   int64
	bytes  int64
	closed bool
	// readBuf is checkTable's read buffer (a sequentialReadable's), kept
	// from table to table and taken from checkBufs.
	readBuf *[]byte
}

// A storeLane is the table being written for one kind of key.
type storeLane struct {
	w    *sstable.Writer
	last []byte
}

// NewStoreWriter starts a new store at dir, which must not exist.
func NewStoreWriter(fs vfs.FS, dir string) (*StoreWriter, error) {
	if _, err := fs.Stat(dir); err == nil {
		return nil, fmt.Errorf("writing shard store %s: it already exists", dir)
	}
	tmp := dir + ".ingest"
	if err := fs.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("writing shard store %s: %w", dir, err)
	}
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("writing shard store %s: %w", dir, err)
	}
	trap := &fatalTrap{}
	db, err := openTrappedStore(fs, dir, trap)
	if err != nil {
		_ = fs.RemoveAll(tmp)
		return nil, err
	}
	o := StoreOptions(fs, nil, false, true)
	o.EnsureDefaults()
	return &StoreWriter{fs: fs, dir: dir, tmp: tmp, db: db, trap: trap,
		wopts: o.MakeWriterOptions(6, db.FormatMajorVersion().MaxTableFormat()), ropts: o.MakeReaderOptions()}, nil
}

// Add appends one key; keys of one kind (first byte) must come in
// strictly ascending order, kinds in any order.
func (sw *StoreWriter) Add(key, value []byte) error {
	if len(key) == 0 {
		return fmt.Errorf("writing shard store %s: empty key", sw.dir)
	}
	l := sw.lanes[key[0]]
	if l == nil {
		l = &storeLane{}
		sw.lanes[key[0]] = l
	}
	if l.last != nil && string(key) <= string(l.last) {
		return fmt.Errorf("writing shard store %s: key %s after %s: keys out of order", sw.dir, describeKey(key), describeKey(l.last))
	}
	l.last = append(l.last[:0], key...)
	if l.w != nil && l.w.Raw().EstimatedSize() >= bulkTableSize {
		if err := sw.closeTable(l); err != nil {
			return err
		}
	}
	if l.w == nil {
		path := sw.fs.PathJoin(sw.tmp, fmt.Sprintf("%06d.sst", len(sw.paths)+1))
		f, err := sw.fs.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return fmt.Errorf("writing shard store %s: %w", sw.dir, err)
		}
		sw.paths = append(sw.paths, path)
		l.w = sstable.NewWriter(newTableFile(f), sw.wopts)
	}
	sw.keys++
	sw.bytes += int64(len(key) + len(value))
	if err := l.w.Set(key, value); err != nil {
		return fmt.Errorf("writing shard store %s: %w", sw.dir, err)
	}
	return nil
}

// Bytes is how many key and value bytes were added.
func (sw *StoreWriter) Bytes() int64 { return sw.bytes }

func (sw *StoreWriter) closeTable(l *storeLane) error {
	if l.w == nil {
		return nil
	}
	err := l.w.Close() // flushes, syncs and closes the file
	l.w = nil
	if err != nil {
		return fmt.Errorf("writing shard store %s: %w", sw.dir, err)
	}
	return nil
}

// Finish ingests the tables and syncs the store and its parent directory.
// After an error the store directory may hold a partial store: the caller
// removes it (it was building beside the data anyway).
func (sw *StoreWriter) Finish() (err error) {
	if sw.closed {
		return fmt.Errorf("writing shard store %s: already finished", sw.dir)
	}
	sw.closed = true
	defer func() { _ = sw.fs.RemoveAll(sw.tmp) }()
	defer RecoverStoreFatal(sw.dir, &err)
	for _, l := range sw.lanes {
		if l == nil {
			continue
		}
		if cerr := sw.closeTable(l); err == nil {
			err = cerr
		}
	}
	for _, path := range sw.paths {
		if err != nil || sw.NoReadBack {
			break
		}
		err = sw.checkTable(path)
	}
	if sw.readBuf != nil {
		checkBufs.Put(sw.readBuf)
		sw.readBuf = nil
	}
	if err == nil && len(sw.paths) > 0 {
		// Ingest syncs the tables, the MANIFEST and the directory. Nothing
		// is in the memtable (no WAL either): there is nothing to flush,
		// and a flush that fails is retried by pebble without end.
		err = sw.db.Ingest(context.Background(), sw.paths)
	}
	if cerr := sw.db.Close(); err == nil {
		err = cerr
	}
	if terr := sw.trap.Err(); terr != nil {
		err = terr // what pebble reported on its own comes first
	}
	if err != nil {
		return fmt.Errorf("writing shard store %s: %w", sw.dir, err)
	}
	return meta.SyncDir(sw.fs, sw.fs.PathDir(sw.dir))
}

// checkTable reads a finished table back from the filesystem and checks
// every block's checksum, so that a table written or stored wrong is found
// before it is ingested, not when the engine first reads that block. The
// file was just written, so the reads come mostly from the page cache.
func (sw *StoreWriter) checkTable(path string) error {
	f, err := sw.fs.Open(path)
	if err != nil {
		return err
	}
	file, err := objstorageprovider.NewFileReadable(f, sw.fs, objstorageprovider.NewReadaheadConfig(), path)
	if err != nil {
		_ = f.Close()
		return err
	}
	if sw.readBuf == nil {
		sw.readBuf = checkBufs.Get().(*[]byte)
	}
	readable := &sequentialReadable{Readable: file, win: fileWindow{buf: (*sw.readBuf)[:0]}}
	r, err := sstable.NewReader(context.Background(), readable, sw.ropts)
	if err != nil {
		_ = readable.Close()
		return fmt.Errorf("reading back %s: %w", path, err)
	}
	err = r.ValidateBlockChecksums()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("reading back %s: %w", path, err)
	}
	return nil
}

// tableWriteBytes is how much a new table's file buffers before it
// writes: pebble's own writable buffers 4 KiB, about one block, so that
// every block was a write of its own.
const tableWriteBytes = 64 << 10

// A tableFile is pebble's file writable (objstorageprovider's) with a
// larger buffer (tableWriteBytes): the same bytes in fewer writes.
type tableFile struct {
	f  vfs.File
	bw *bufio.Writer
}

// tableBufs holds tableFile buffers between tables: a table being written
// takes one and gives it back once finished, so that the tables written
// one after another (seven or so a store) share a few instead of each
// zeroing (and, where the heap grew, faulting in) 64 KiB of its own.
var tableBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, tableWriteBytes) }}

func newTableFile(f vfs.File) *tableFile {
	bw := tableBufs.Get().(*bufio.Writer)
	bw.Reset(f)
	return &tableFile{f: f, bw: bw}
}

// release gives the buffer back (tableBufs); the file is done with it.
func (t *tableFile) release() {
	if t.bw == nil {
		return
	}
	t.bw.Reset(nil)
	tableBufs.Put(t.bw)
	t.bw = nil
}

func (t *tableFile) Write(p []byte) error {
	_, err := t.bw.Write(p)
	return err
}

// Finish writes what is buffered, syncs and closes the file.
func (t *tableFile) Finish() error {
	err := t.bw.Flush()
	t.release()
	if err == nil {
		err = t.f.Sync()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort closes the file, leaving it as it is.
func (t *tableFile) Abort() {
	t.release()
	_ = t.f.Close()
}

// checkReadBytes is how much checkTable reads from a table at a time.
const checkReadBytes = 1 << 20

// checkBufs holds checkTable's read buffers between stores: a store's
// writer takes one when it reads its first table back and gives it back
// once it has read them all, so that the stores written one after another
// share a few buffers instead of each zeroing (and, where the heap grew,
// faulting in) a MiB of its own.
var checkBufs = sync.Pool{New: func() any { b := make([]byte, 0, checkReadBytes); return &b }}

// A sequentialReadable serves ReadAt from a buffer it fills with reads of
// up to cap(buf) bytes: checkTable reads a table's blocks in file order
// (ValidateBlockChecksums sorts them by offset), a few KiB each, and so
// makes one read of the file per buffer instead of one per block. The
// bytes are the file's either way: the checksums are checked on what is
// read from it.
type sequentialReadable struct {
	objstorage.Readable
	mu  sync.Mutex
	win fileWindow
}

func (r *sequentialReadable) ReadAt(ctx context.Context, p []byte, off int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.win.copyOut(p, off) {
		return nil
	}
	n := min(int64(cap(r.win.buf)), r.Size()-off)
	if n < int64(len(p)) { // larger than the buffer, or past the end
		return r.Readable.ReadAt(ctx, p, off)
	}
	r.win.buf = r.win.buf[:n]
	if err := r.Readable.ReadAt(ctx, r.win.buf, off); err != nil {
		r.win.buf = r.win.buf[:0]
		return err
	}
	r.win.off = off
	copy(p, r.win.buf)
	return nil
}

// Abort stops a write that will not be finished and releases the store.
func (sw *StoreWriter) Abort() {
	if sw.closed {
		return
	}
	sw.closed = true
	for _, l := range sw.lanes {
		if l != nil && l.w != nil {
			_ = l.w.Close()
		}
	}
	_ = sw.db.Close()
	_ = sw.fs.RemoveAll(sw.tmp)
}

func describeKey(k []byte) string {
	if sk, err := ParseStoreKey(k); err == nil {
		return sk.String()
	}
	return fmt.Sprintf("%q", k)
}

// AppendRunKeys calls fn with the store keys of run r in key order: its
// run entry, then its records by position. Key and value are only valid
// during the call.
func AppendRunKeys(r *model.Run, fn func(key, value []byte) error) error {
	e := model.EntryOf(r)
	kb := appendBE64Key(nil, KeyRun, uint64(r.No))
	if err := fn(kb, model.EncodeRunEntry(nil, &e)); err != nil {
		return err
	}
	var vb []byte
	for pos := range r.Journal {
		kb = binary.BigEndian.AppendUint32(appendBE64Key(kb[:0], KeyRun, uint64(r.No)), uint32(pos))
		vb = model.EncodeRecord(vb[:0], &r.Journal[pos])
		if err := fn(kb, vb); err != nil {
			return err
		}
	}
	return nil
}

// EncodeIndexValue is the value of an ID index ("I") key.
func EncodeIndexValue(no model.RunNo) []byte { return model.EncodeRunNo(no) }

// HeaderKey is the store key of the checkpoint header.
func HeaderKey() []byte { return append([]byte(nil), headerKey...) }

// OpenScratchStore creates a pebble store at path for temporary sorted
// data (a reshard's plan and run map, its external sort of new store
// keys): no write-ahead log (what it holds is rebuilt from the old
// directory if the process dies), memtable of memtableBytes, and a
// fatalTrap as its logger, so pebble's failures, on any goroutine, come
// back as errors (ScratchStore.Failed).
func OpenScratchStore(fs vfs.FS, path string, memtableBytes, cacheBytes int) (_ *ScratchStore, err error) {
	defer RecoverStoreFatal(path, &err)
	trap := &fatalTrap{}
	o := StoreOptions(fs, pebble.NewCache(int64(max(cacheBytes, 1<<20))), false, true)
	trap.install(o)
	o.DisableWAL = true
	o.FS = noSyncFS{o.FS} // nothing in it outlives the process
	o.MemTableSize = uint64(max(memtableBytes, 1<<20))
	// Point lookups (a run map) probe every flushed table: a bloom filter
	// per table answers most misses without reading a block, and the
	// cache keeps index blocks from being read again for each. (Tables
	// are in L0, but a SpillMap compacts a sealed run of its tables into
	// a lower level.)
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// Written once, read once in key order: compacting would rewrite the
	// data for nothing; a merging iterator over the flushed tables sorts
	// it as well. (A SpillMap bounds how many tables one read merges by
	// compacting runs of them itself: see SpillMap.)
	o.DisableAutomaticCompactions = true
	o.L0CompactionThreshold = 1 << 20
	o.L0StopWritesThreshold = 1 << 20
	o.ErrorIfExists = false
	// Written once and read once, on the same machine, then deleted:
	// compressing it would cost CPU on both sides to save scratch space
	// the budget does not count.
	for i := range o.Levels {
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	db, err := openPebble(path, o)
	o.Cache.Unref()
	if err == nil {
		if err = trap.Err(); err != nil {
			_ = db.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening scratch store %s: %w", path, err)
	}
	return &ScratchStore{DB: db, path: path, trap: trap}, nil
}
