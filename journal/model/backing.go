package model

import "fmt"

// Eviction, the model's side: a shard whose directory evicts (the
// journal package's DB.SetEvict) has a Backing, and after a checkpoint it
// drops what its store holds (Evict). The accessors below read a dropped
// run, ID index entry or dedup entry back through the Backing the first
// time it is needed. The model does no I/O itself: the Backing, which the
// directory layer implements over the shard's store, does.

// Backing is where an evicting shard reads back what it dropped. Each
// read returns what the store holds, or an error naming the store and
// key; absent is not an error.
type Backing interface {
	// ReadRun reads run no with its journal (nil: no such run).
	ReadRun(no RunNo) (*Run, error)
	// ReadEntry reads run no's entry alone, without its journal.
	ReadEntry(no RunNo) (RunEntry, bool, error)
	// ReadIndex reads the ID index entry of workflowID.
	ReadIndex(workflowID string) (RunNo, bool, error)
	// ReadSeen reads the receiver dedup entry of msgID: the workflow ID
	// the message was delivered to.
	ReadSeen(msgID string) (string, bool, error)
	// AddID and AddSeen note a workflow ID put in the ID index and a
	// message ID put in the dedup set in memory (the key filters of
	// reads that would miss).
	AddID(workflowID string)
	AddSeen(msgID string)
}

// SetBacking gives the shard the store it reads evicted state back from.
func (s *Shard) SetBacking(b Backing) { s.back = b }

// Backing is the shard's Backing (nil: everything is in memory).
func (s *Shard) Backing() Backing { return s.back }

func (s *Shard) fail(err error) {
	if s.backErr == nil {
		s.backErr = err
	}
}

// Run returns run no (nil: no such run), reading it back from the store
// if it was evicted.
func (s *Shard) Run(no RunNo) *Run {
	if r, ok := s.Runs[no]; ok || s.back == nil {
		return r
	}
	if s.Unread(no) {
		s.readUnread(no)
		return s.Runs[no]
	}
	r, err := s.back.ReadRun(no)
	if err != nil {
		s.fail(err)
		return nil
	}
	if r != nil {
		s.Runs[no] = r
		s.noteEnded(r.No, r.State)
	}
	return r
}

// Ended reports whether run no is known to have finished (tombstoned or
// not) without reading it back: a run never runs again once it is done,
// so the shard notes each run it sees end (Apply, or a read-back of an
// ended run) in a bit set by run number, which eviction keeps. An
// engine then finds an event of an evicted run that ended stale with no
// store read. false: the run has not ended, or the shard does not know
// (it was evicted before this shard saw it end, or there is no such
// run). The bits are one per run number below NextRun: 125 KB for a
// million runs (with tombed's, 250 KB).
func (s *Shard) Ended(no RunNo) bool {
	if s.ended.has(no) {
		return true
	}
	r, ok := s.Runs[no]
	return ok && (r.State == StateFinished || r.State == StateTombstone)
}

// FinishedEvicted reports whether run no is evicted and known to be
// finished and not tombstoned: the shard saw it finish or read it back
// finished, and every tombstone since went through Apply, which notes it.
// A tombstone of such a run needs no store read (tombstoneStored).
func (s *Shard) FinishedEvicted(no RunNo) bool {
	if s.back == nil || !s.ended.has(no) || s.tombed.has(no) {
		return false
	}
	_, resident := s.Runs[no]
	return !resident
}

// noteEnded notes run no in the ended set (and the tombed set) if state
// is an ended one (a tombstone).
func (s *Shard) noteEnded(no RunNo, state RunState) {
	if (state != StateFinished && state != StateTombstone) || no >= s.NextRun {
		return
	}
	s.ended.set(no)
	if state == StateTombstone {
		s.tombed.set(no)
	}
}

// runBits is a bit set of run numbers.
type runBits []uint64

func (b runBits) has(no RunNo) bool {
	i := uint64(no) / 64
	return i < uint64(len(b)) && b[i]&(1<<(uint64(no)%64)) != 0
}

func (b *runBits) set(no RunNo) {
	i := uint64(no) / 64
	if i >= uint64(len(*b)) {
		*b = append(*b, make([]uint64, int(i)+1-len(*b))...)
	}
	(*b)[i] |= 1 << (uint64(no) % 64)
}

// Unread reports whether run no was tombstoned while evicted and its
// entry is not read yet: the checkpoint reads it from the store
// (ResolveTombstone), where it also reads the journal to archive.
func (s *Shard) Unread(no RunNo) bool {
	_, ok := s.unread[no]
	return ok
}

// ResolveTombstone completes the tombstone of run no, which is Unread,
// with e, its entry as the store holds it: the run is then in memory,
// tombstoned, as if its entry had been read when it was tombstoned.
func (s *Shard) ResolveTombstone(no RunNo, e *RunEntry) (*Run, error) {
	if !s.Unread(no) {
		return nil, fmt.Errorf("run %d has no tombstone waiting for its entry", no)
	}
	if err := s.tombstoneEntry(no, e); err != nil {
		return nil, err
	}
	return s.Runs[no], nil
}

// readUnread reads the entry of Unread run no and resolves its
// tombstone: for a reader that needs the run before the checkpoint does.
func (s *Shard) readUnread(no RunNo) {
	e, ok, err := s.back.ReadEntry(no)
	if err == nil && !ok {
		err = fmt.Errorf("tombstone of run %d: no such run on shard %d", no, s.Index)
	}
	if err == nil {
		_, err = s.ResolveTombstone(no, &e)
	}
	if err != nil {
		s.fail(err)
	}
}

// Head is run no's entry (identity, state, times, journal length): the
// resident run's, or else the store's entry read alone, without the
// journal (Run would read it all). ok is false for no such run.
func (s *Shard) Head(no RunNo) (_ RunEntry, ok bool) {
	if r, ok := s.Runs[no]; ok || s.back == nil {
		if !ok {
			return RunEntry{}, false
		}
		return EntryOf(r), true
	}
	if e, ok := s.heads[no]; ok {
		return e, true
	}
	if s.Unread(no) {
		s.readUnread(no)
		if r, ok := s.Runs[no]; ok {
			return EntryOf(r), true
		}
		return RunEntry{}, false
	}
	e, ok, err := s.back.ReadEntry(no)
	if err != nil {
		s.fail(err)
		return RunEntry{}, false
	}
	if ok {
		if s.heads == nil {
			s.heads = map[RunNo]RunEntry{}
		}
		// A cache entry: a run that changes is resident first (Run reads
		// it back), and Head looks there before here.
		s.heads[no] = e
		s.noteEnded(no, e.State)
	}
	return e, ok
}

// LatestNo is the ID index entry of a workflow ID: its newest run.
func (s *Shard) LatestNo(workflowID string) (RunNo, bool) {
	if no, ok := s.ByID[workflowID]; ok || s.back == nil {
		return no, ok
	}
	no, ok, err := s.back.ReadIndex(workflowID)
	if err != nil {
		s.fail(err)
		return 0, false
	}
	if ok {
		s.ByID[workflowID] = no // a cache entry, not a change
	}
	return no, ok
}

// SeenBy reports whether message msgID was received here and, if so, the
// workflow ID it was delivered to.
func (s *Shard) SeenBy(msgID string) (string, bool) {
	if wf, ok := s.Seen[msgID]; ok || s.back == nil {
		return wf, ok
	}
	wf, ok, err := s.back.ReadSeen(msgID)
	if err != nil {
		s.fail(err)
		return "", false
	}
	return wf, ok
}

// LoadErr is the first error reading evicted state back from the store
// (nil: none). A shard that failed to read treats what it could not read
// as missing, so the DB refuses every Commit and Checkpoint after it.
func (s *Shard) LoadErr() error { return s.backErr }

// Resident is how many runs the shard holds in memory.
func (s *Shard) Resident() int { return len(s.Runs) }

// Evict drops what the store holds from memory. The shard must have no
// pending changes (its store reflects all of it).
func (s *Shard) Evict(keep int) {
	// Running runs were touched since the last checkpoint and wait for
	// something due within minutes: keeping up to keep of them (and
	// their index entries) saves reading them straight back. Which ones
	// are kept changes only what is read from the store, never a result.
	kept := 0
	for no, r := range s.Runs {
		if r.State == StateRunning && kept < keep {
			kept++
			continue
		}
		delete(s.Runs, no)
	}
	if kept == 0 {
		clear(s.ByID)
	}
	for id, no := range s.ByID {
		if _, ok := s.Runs[no]; !ok {
			delete(s.ByID, id)
		}
	}
	clear(s.Seen)
	clear(s.heads)
	clear(s.unread)
	clear(s.Archive)
	clear(s.Timers)
}
