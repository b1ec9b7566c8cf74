package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
)

// evQueue is the engine's queue of pending events in bounded memory: a
// heap of the events due before a horizon, and a scratch pebble store
// (when the engine has one) of the later ones, keyed by due time. Every
// event in memory is due before every spilled one, so the heap's top is
// the queue's. When the heap outgrows spillAbove it keeps the earlier
// half and spills the rest; when it runs dry it takes back the earliest
// spilled events, whole due times at a time. The scratch store is no part
// of the directory: the engine derives its events again from the journals
// when it reopens one.
type evQueue struct {
	mem     evHeap
	sp      *spill // nil: nothing spills
	horizon int64  // events due at or after it are spilled (math.MaxInt64: none)
	spilled int
	limit   int   // spill once the heap holds more events than this
	err     error // the first scratch store error (the engine stops with it)
}

// spillAbove is how many events the heap holds before it spills (by
// default: tests lower it).
const spillAbove = 100_000

func newEvQueue(sp *spill, limit int) evQueue {
	return evQueue{sp: sp, horizon: math.MaxInt64, limit: limit}
}

func (q *evQueue) fail(err error) {
	if q.err == nil {
		q.err = err
	}
}

func (q *evQueue) push(ev event) {
	if q.sp != nil && ev.at >= q.horizon {
		q.fail(q.sp.put(ev))
		q.spilled++
		return
	}
	q.mem.push(ev)
	if q.sp != nil && len(q.mem) > q.limit {
		q.spillLater()
	}
}

// spillLater moves the later half of the heap (whole due times) to the
// scratch store and lowers the horizon to the first time it moved.
func (q *evQueue) spillLater() {
	ats := make([]int64, len(q.mem))
	for i := range q.mem {
		ats[i] = q.mem[i].at
	}
	slices.Sort(ats)
	cut := ats[len(ats)/2]
	if cut == ats[0] {
		return // one due time holds half the heap: nothing to split
	}
	keep := q.mem[:0]
	for _, ev := range q.mem {
		if ev.at >= cut {
			q.fail(q.sp.put(ev))
			q.spilled++
		} else {
			keep = append(keep, ev)
		}
	}
	clear(q.mem[len(keep):])
	q.mem = keep
	q.mem.init()
	q.horizon = cut
}

// fill takes back spilled events when the heap is empty.
func (q *evQueue) fill() {
	if len(q.mem) > 0 || q.spilled == 0 {
		return
	}
	evs, next, err := q.sp.take(max(1, q.limit/2))
	if err != nil {
		q.fail(err)
		q.spilled = 0
		return
	}
	q.spilled -= len(evs)
	q.horizon = next
	for _, ev := range evs {
		q.mem.push(ev)
	}
}

func (q *evQueue) Len() int {
	return len(q.mem) + q.spilled
}

func (q *evQueue) top() *event {
	q.fill()
	return q.mem.top()
}

func (q *evQueue) pop() event {
	q.fill()
	return q.mem.pop()
}

// scratch is the engine's scratch store, outside the data directory
// (store.OpenScratchStore: no log), removed when the engine is done.
type scratch struct {
	db  *store.ScratchStore
	dir string
	fs  vfs.FS
}

// openScratch creates a scratch store at dir, which must not exist.
func openScratch(fs vfs.FS, dir string) (*scratch, error) {
	if _, err := fs.Stat(dir); err == nil {
		return nil, fmt.Errorf("event scratch store %s already exists: remove it (a sim engine left it when it was killed)", dir)
	}
	db, err := store.OpenScratchStore(fs, dir, 4<<20, 1<<20)
	if err != nil {
		return nil, err
	}
	return &scratch{db: db, dir: dir, fs: fs}, nil
}

// close closes and removes the scratch store.
func (s *scratch) close() error {
	if s == nil {
		return nil
	}
	err := errors.Join(s.db.Failed(), s.db.Close())
	return errors.Join(err, s.fs.RemoveAll(s.dir))
}

// failed wraps err, or a failure pebble reported on its own, for the
// scratch store.
func (s *scratch) failed(err error) error {
	if err != nil {
		return fmt.Errorf("event scratch store %s: %w", s.dir, err)
	}
	return s.db.Failed()
}

// spill is one evQueue's part of the scratch store: keys are the queue's
// prefix byte, the due time (sign flipped, big-endian) and a sequence
// number; values the event.
type spill struct {
	*scratch
	prefix byte
	seq    uint64
	buf    []byte
}

func (s *spill) key(dst []byte, at int64, seq uint64) []byte {
	dst = append(dst, s.prefix)
	dst = binary.BigEndian.AppendUint64(dst, uint64(at)^1<<63)
	return binary.BigEndian.AppendUint64(dst, seq)
}

func (s *spill) put(ev event) error {
	s.seq++
	var key [17]byte
	v := s.buf[:0]
	v = binary.AppendUvarint(v, uint64(len(ev.wf)))
	v = append(v, ev.wf...)
	v = binary.AppendUvarint(v, uint64(ev.gen))
	v = binary.AppendUvarint(v, uint64(ev.pos))
	v = append(v, byte(ev.kind))
	v = binary.AppendUvarint(v, uint64(len(ev.msg)))
	v = append(v, ev.msg...)
	v = binary.AppendUvarint(v, uint64(ev.shard))
	v = binary.AppendUvarint(v, uint64(ev.run))
	v = binary.AppendUvarint(v, uint64(ev.fresh))
	s.buf = v
	return s.failed(s.db.Set(s.key(key[:0], ev.at, s.seq), v, pebble.NoSync))
}

// take removes and returns the earliest spilled events: at least n of
// them (all if fewer), then every other one due at the last one's time;
// next is the due time of the first left (math.MaxInt64: none left).
func (s *spill) take(n int) (evs []event, next int64, err error) {
	next = math.MaxInt64
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{s.prefix}, UpperBound: []byte{s.prefix + 1}})
	if err != nil {
		return nil, next, fmt.Errorf("event scratch store %s: %w", s.dir, err)
	}
	var last []byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		at := int64(binary.BigEndian.Uint64(k[1:]) ^ 1<<63)
		if len(evs) >= n && at != evs[len(evs)-1].at {
			next = at
			break
		}
		ev, derr := decodeSpilled(at, it.Value())
		if derr != nil {
			_ = it.Close()
			return nil, next, fmt.Errorf("event scratch store %s: key %x: %w", s.dir, k, derr)
		}
		evs = append(evs, ev)
		last = append(last[:0], k...)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, next, fmt.Errorf("event scratch store %s: %w", s.dir, err)
	}
	if len(evs) > 0 {
		end := append(last, 0) // just past the last key taken
		if err := s.db.DeleteRange([]byte{s.prefix}, end, pebble.NoSync); err != nil {
			return nil, next, s.failed(err)
		}
	}
	return evs, next, s.failed(nil)
}

func decodeSpilled(at int64, v []byte) (event, error) {
	ev := event{at: at}
	bad := errors.New("undecodable event")
	uv := func() uint64 {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			v = nil
			return 0
		}
		v = v[n:]
		return x
	}
	str := func() string {
		n := uv()
		if uint64(len(v)) < n {
			v = nil
			return ""
		}
		s := string(v[:n])
		v = v[n:]
		return s
	}
	ev.wf = str()
	ev.gen = uint32(uv())
	ev.pos = uint32(uv())
	if len(v) == 0 {
		return ev, bad
	}
	ev.kind = evKind(v[0])
	v = v[1:]
	ev.msg = str()
	ev.shard = int(uv())
	ev.run = model.RunNo(uv())
	ev.fresh = int(uv())
	if v == nil || len(v) != 0 {
		return ev, bad
	}
	return ev, nil
}

// removeStaleEventStores removes the event scratch stores a killed drive
// of dir left beside it (<dir>.events-<random>). The caller holds dir's
// lock, which a running drive of dir would hold: every such store is
// stale. removed (if not nil) is told each path.
func removeStaleEventStores(fs vfs.FS, dir string, removed func(string)) error {
	clean := filepath.Clean(dir)
	parent, prefix := fs.PathDir(clean), fs.PathBase(clean)+scratchSuffix+"-"
	names, err := fs.List(parent)
	if err != nil {
		return nil // nothing to list, nothing stale
	}
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || len(rest) < 12 || strings.Trim(rest, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			continue // randomSuffix makes 16 hex digits (or 12-13 in base 36)
		}
		path := fs.PathJoin(parent, name)
		if fi, err := fs.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		if err := fs.RemoveAll(path); err != nil {
			return fmt.Errorf("removing the event scratch store %s that a killed drive left: %w; remove it by hand", path, err)
		}
		if removed != nil {
			removed(path)
		}
	}
	return nil
}
