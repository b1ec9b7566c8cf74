package sim

import (
	"container/heap"
	"strings"

	"github.com/fusee-dev/fusee/journal/model"
)

// evKind says what a scheduled event does. Its numeric order breaks ties
// between events with the same time, workflow ID, generation and position.
type evKind uint8

const (
	evFresh     evKind = iota + 1 // gen's workload starts a new workflow ID
	evTimer                       // a timer, a retry or a wait's deadline at pos is due
	evDeadline                    // the run's own deadline passed: it times out
	evExtSignal                   // the outside world signals the run (pos: the wait it answers, 0: early)
	evExtUpdate                   // the outside world sends an update (pos: its ordinal)
	evAsync                       // the outside world answers the async completion at pos by its token
	evCancel                      // an operator cancels the run
	evTerminate                   // an operator terminates the run
	evReset                       // an operator resets the run
	evRestart                     // a finished run's workflow ID is started again
	evTombstone                   // a finished run's retention ended
	evMsg                         // an outbox message is delivered (never in the heap)
)

var evNames = [...]string{"", "fresh", "timer", "deadline", "ext-signal", "ext-update", "async",
	"cancel", "terminate", "reset", "restart", "tombstone", "message"}

func (k evKind) String() string { return evNames[k] }

// event is something due at a virtual time. Its key — (at, wf, gen, pos,
// kind, msg) — is logical: the engine processes due events in key order,
// so that the same workload runs the same way on any shard count. The
// locator (shard, run) only finds the run during this engine session; it
// never orders or decides anything.
type event struct {
	at   int64
	wf   string
	gen  uint32
	pos  uint32
	kind evKind
	msg  string // message ID (evMsg)

	shard int
	run   model.RunNo
	fresh int // evFresh: index in the workload
}

func (a *event) less(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if c := strings.Compare(a.wf, b.wf); c != 0 {
		return c < 0
	}
	if a.gen != b.gen {
		return a.gen < b.gen
	}
	if a.pos != b.pos {
		return a.pos < b.pos
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.msg < b.msg
}

// evHeap is a min-heap of events by key.
type evHeap []event

func (h evHeap) Len() int           { return len(h) }
func (h evHeap) Less(i, j int) bool { return h[i].less(&h[j]) }
func (h evHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *evHeap) Pop() any {
	old := *h
	n := len(old) - 1
	ev := old[n]
	old[n] = event{}
	*h = old[:n]
	return ev
}

func (h *evHeap) push(ev event) { heap.Push(h, ev) }
func (h *evHeap) init()         { heap.Init(h) }
func (h *evHeap) pop() event    { return heap.Pop(h).(event) }
func (h evHeap) top() *event {
	if len(h) == 0 {
		return nil
	}
	return &h[0]
}
