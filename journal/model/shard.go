package model

import (
	"fmt"
	"sort"

	"github.com/fusee-dev/fusee/idcodec"
)

// ShardOf is the shard a workflow ID belongs to among n shards:
// FloorMod(idcodec.Hash64(id), n), 0 when n <= 1. It is idcodec.ShardFor,
// the one place the formula is written, under the name this package's
// callers look for. Because FloorMod with a positive divisor is a true
// modulo, ShardOf(id, k*n) mod n == ShardOf(id, n): growing to a multiple
// of the shard count keeps every ID on a shard congruent to its old one.
// Golden vectors in tests pin this function; changing it strands every
// directory ever written.
func ShardOf(workflowID string, n int) int { return idcodec.ShardFor(workflowID, n) }

// RunState is where a run is in its life.
type RunState uint8

// Run states.
const (
	StateRunning   RunState = 1 // loaded in memory at the last checkpoint; code resumes at the next open
	StateParked    RunState = 2 // suspended: journal and timers in the run store, not in memory
	StateFinished  RunState = 3 // done, kept until its retention ends
	StateTombstone RunState = 4 // retention ended: history archived, only this entry remains
)

var stateNames = [...]string{"", "running", "parked", "finished", "tombstone"}

func (s RunState) String() string {
	if s >= 1 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Run is one execution of a workflow ID on a shard.
type Run struct {
	No         RunNo
	WorkflowID string
	Gen        uint32 // which run of its workflow ID this is: 1, 2, …
	Type       string
	State      RunState
	Status     Status // when finished
	Started    int64
	Finished   int64
	Renumbered bool     // a reshard gave it a new number (it counts as newer than it is)
	Journal    []Record // nil for a tombstone
}

// Start returns the run's Start record (the first in its journal).
func (r *Run) Start() *Record {
	if len(r.Journal) == 0 {
		return nil
	}
	return &r.Journal[0]
}

// ExtendJournal serves an engine that appends records to a view of the
// run before Apply appends the same records to the run: j is such a view
// (r.Journal's records, then the view's own, in r.Journal's array or in
// one this method returned before). It returns j with room for n more
// records, in an array that r.Journal then shares, so that Apply appends
// the view's records in place instead of copying the journal once more.
// r.Journal's records and length do not change; only its capacity does.
func (r *Run) ExtendJournal(j []Record, n int) []Record {
	if cap(j)-len(j) >= n {
		return j
	}
	grown := make([]Record, len(j), len(j)+max(n, len(j)))
	copy(grown, j)
	r.Journal = grown[:len(r.Journal)]
	return grown
}

// NewerThan reports whether r counts as a newer run of its workflow ID
// than o: it has the higher generation or, in a damaged state where both
// have the same generation (verify's gen-duplicate), the higher number.
// Run numbers alone do not order the runs of an ID: a reshard can
// renumber an older run above a newer one that kept its number.
func (r *Run) NewerThan(o *Run) bool {
	if r.Gen != o.Gen {
		return r.Gen > o.Gen
	}
	return r.No > o.No
}

// Key is the Ctx::key value for a position of this run.
func (r *Run) Key(pos uint32) CtxKey { return CtxKey{WorkflowID: r.WorkflowID, Run: r.No, Pos: pos} }

// MsgKind says what an outbox message carries.
type MsgKind uint8

// Message kinds.
const (
	MsgStartChild   MsgKind = 1 // start a child run of Target
	MsgChildResult  MsgKind = 2 // a child's result for the parent position Parent
	MsgSignal       MsgKind = 3 // a signal for Target's latest run
	MsgCancel       MsgKind = 4 // a cancel request for Target's latest run
	MsgUpdateResult MsgKind = 5 // an update's result for the caller position Parent
)

var msgNames = [...]string{"", "start-child", "child-result", "signal", "cancel", "update-result"}

func (k MsgKind) String() string {
	if k >= 1 && int(k) < len(msgNames) {
		return msgNames[k]
	}
	return fmt.Sprintf("msg(%d)", uint8(k))
}

// Message is an outbox entry: sent by a run of this shard, kept until the
// receiving shard acknowledges it, sent again after a restart or reshard.
// Receivers drop repeats by ID, so an ID never contains a run number: it is
// built from the sender's workflow ID, run generation and journal position.
type Message struct {
	ID     string
	Kind   MsgKind
	Seq    uint64 // order in this shard's outbox
	From   RunRef // the sending run
	Target string // the receiving workflow ID (routes the message)
	// Parent: for start-child, the parent reference the child's Start gets;
	// for child-result and update-result, the position that waits.
	Parent ParentRef
	// ParentID is the workflow ID of the run Parent names, set exactly when
	// Parent is: for start-child the sender's own workflow ID (the child's
	// Start records it, and the child's result is routed by it); for
	// results the waiting run's, which is also Target.
	ParentID string
	Type     string // start-child: workflow type
	Name     string // signal name
	Status   Status // results
	Deadline int64
	// Sent is the virtual time (ms) of the record that produced the
	// message (its Time): a resent message's delivery is counted from it.
	Sent    int64
	Payload []byte
}

// Dest is the shard the message goes to among n shards.
func (m *Message) Dest(n int) int { return ShardOf(m.Target, n) }

// Shard is the whole logical state of one shard: what its checkpoint plus
// its log tail describe. The engine changes it only through Apply, so that
// recovery, which replays the log with Apply, rebuilds exactly what the
// engine had. Timers, buffered signals, pending work and outbox messages
// are outputs of the journal records, regenerated by Apply.
type Shard struct {
	Index   int // this shard's number
	Count   int // shard count of the directory
	LSN     uint64
	NextRun RunNo // the number the next run started here gets
	// StoreGen is the store generation (the checkpoint header's gen): 1
	// for a new directory, one more each time a reshard or upgrade builds
	// the shard's store anew. A store written from the shard gets it as
	// its header's gen. Completion tokens carry it mod 64 (TokenGen), so
	// tokens minted before a rebuild no longer match.
	StoreGen uint64

	Runs    map[RunNo]*Run
	ByID    map[string]RunNo // workflow ID -> its newest run (highest generation: Run.NewerThan)
	Outbox  map[string]*Message
	NextSeq uint64 // next outbox sequence number
	// Seen is the receiver dedup set: the IDs of messages this shard has
	// received, each mapped to the workflow ID it was delivered to (the
	// message's Target), which says which shard the entry belongs on.
	Seen    map[string]string
	Archive map[RunNo][]Record // histories of runs whose retention ended
	Timers  map[TimerKey]struct{}

	// changed tracks what Apply changed since the store last reflected
	// this state (nil: not tracked). It is bookkeeping, not state: compare
	// shards with DiffShards, not reflect.DeepEqual.
	Changed *Changes
	// back is the store an evicting DB reads dropped state back from
	// (nil: everything is in memory). See backing.go.
	back    Backing
	backErr error // the first error reading from back (LoadErr)
	// heads caches the entries Head read from back (cleared by Evict).
	heads map[RunNo]RunEntry
	// ended and tombed have a bit set for each run known to have
	// finished (tombstoned or not) and known to have been tombstoned
	// (Ended, FinishedEvicted); Evict keeps them.
	ended, tombed runBits
	// unread holds the runs tombstoned while evicted whose entry is not
	// read yet (tombstoneStored); cleared by Evict.
	unread map[RunNo]struct{}
}

// TimerKey is one pending durable timer: a timer record, a retry of a
// failed attempt, or a wait's deadline.
type TimerKey struct {
	At  int64
	Run RunNo
	Pos uint32
}

// NewShard returns an empty shard of store generation 1.
func NewShard(index, count int) *Shard {
	return &Shard{
		Index: index, Count: count, NextRun: 1, NextSeq: 1, StoreGen: 1,
		Runs: map[RunNo]*Run{}, ByID: map[string]RunNo{}, Outbox: map[string]*Message{},
		Seen: map[string]string{}, Archive: map[RunNo][]Record{}, Timers: map[TimerKey]struct{}{},
	}
}

// Latest returns the latest run of a workflow ID (its highest generation,
// whatever its number), or nil.
func (s *Shard) Latest(workflowID string) *Run {
	if no, ok := s.LatestNo(workflowID); ok {
		return s.Run(no)
	}
	return nil
}

// DeriveIndex is the ID index that runs imply: each workflow ID mapped to
// its newest run (Run.NewerThan).
func DeriveIndex(runs map[RunNo]*Run) map[string]RunNo {
	ids := map[string]RunNo{}
	newest := map[string]*Run{}
	for no, r := range runs {
		if cur, ok := newest[r.WorkflowID]; !ok || r.NewerThan(cur) {
			newest[r.WorkflowID], ids[r.WorkflowID] = r, no
		}
	}
	return ids
}

// RebuildIndex recomputes the ID index from the runs: each workflow ID
// maps to its highest-generation run. A reshard that moves and renumbers
// runs builds the new shards' index with it.
func (s *Shard) RebuildIndex() {
	old := s.ByID
	s.ByID = DeriveIndex(s.Runs)
	if c := s.Changed; c != nil {
		for id := range old {
			c.IDs[id] = struct{}{}
		}
		for id := range s.ByID {
			c.IDs[id] = struct{}{}
		}
	}
}

// SortedRuns returns the runs in run-number order.
func (s *Shard) SortedRuns() []*Run {
	out := make([]*Run, 0, len(s.Runs))
	for _, r := range s.Runs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].No < out[j].No })
	return out
}

// SortedOutbox returns the outbox in send order.
func (s *Shard) SortedOutbox() []*Message {
	out := make([]*Message, 0, len(s.Outbox))
	for _, m := range s.Outbox {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
