package model

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// RunNo numbers a run within its shard, in start order, from 1. It fits in
// 48 bits (the run table packs it beside state and flags). 0 means "no run";
// NoSuchRun, the largest 48-bit number, names a run known not to exist. A
// shard hands out 1..MaxRunNo-1.
type RunNo uint64

// MaxRunNo is the largest number that fits in a run number's 48 bits. It is
// NoSuchRun, which no run is given: the last number a shard hands out is
// MaxRunNo-1.
const MaxRunNo RunNo = 1<<48 - 1

// NoSuchRun is the reserved run number of a reference whose run is known
// not to exist: a reshard that cannot resolve a reference (the run it named
// was dropped) rewrites the reference's run number to NoSuchRun rather than
// let it name whatever run later gets the old number. No run is ever given
// it: Apply refuses to start a run numbered NoSuchRun or above, and the
// store loader refuses a run keyed NoSuchRun. A reference to NoSuchRun is a
// dangling reference that nothing resolves.
const NoSuchRun RunNo = MaxRunNo

// RunRef names a run: its shard and its number there. The zero value names
// no run. A reference whose run no longer exists (retention ended and the
// run was dropped), or whose number is NoSuchRun (a reshard found it gone),
// matches nothing; that is a dangling reference, not an error.
type RunRef struct {
	Shard int
	Run   RunNo
}

// IsZero reports whether r names no run.
func (r RunRef) IsZero() bool { return r.Run == 0 }

func (r RunRef) String() string {
	if r.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%d:%d", r.Shard, r.Run)
}

// ParentRef points at a journal position of a run that waits for a result:
// a child's parent (the position of the Child record), an update's caller.
type ParentRef struct {
	Shard int
	Run   RunNo
	Pos   uint32
}

// IsZero reports whether p names no run.
func (p ParentRef) IsZero() bool { return p.Run == 0 }

// RunRef drops the position.
func (p ParentRef) RunRef() RunRef { return RunRef{Shard: p.Shard, Run: p.Run} }

func (p ParentRef) String() string {
	if p.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%d:%d@%d", p.Shard, p.Run, p.Pos)
}

// CtxKey is the value workflow code gets from Ctx::key:
// "<workflow ID>/<run>/<position>". It changes when a run is renumbered.
type CtxKey struct {
	WorkflowID string
	Run        RunNo
	Pos        uint32
}

func (k CtxKey) String() string { return fmt.Sprintf("%s/%d/%d", k.WorkflowID, k.Run, k.Pos) }

// Token answers a pending async completion from outside the engine. It
// packs the store generation of the shard that minted it (6 bits: the
// generation mod 64), the shard (10 bits), the run (48 bits) and the
// journal position (32 bits) into 96 bits,
//
//	[gen:6][shard:10][run:48][pos:32]   big endian
//
// written as 24 hex digits after "tk". It changes when a run is renumbered
// or moves shard, and when its shard's store is rebuilt whole (a reshard
// or upgrade adds one to the store generation): a token handed out before
// a reshard names a generation that is gone, so it is refused rather than
// taken for whatever run now has the same shard, number and position.
type Token struct {
	Shard int // 0..1023
	Run   RunNo
	Pos   uint32
	Gen   uint8 // the minting shard's store generation mod 64 (TokenGen); 0..63; last, to pack beside Pos
}

// TokenGen is the Token.Gen of tokens minted by a shard of store
// generation storeGen (Shard.StoreGen): the generation mod 64.
func TokenGen(storeGen uint64) uint8 { return uint8(storeGen % 64) }

// String encodes the token.
func (t Token) String() string {
	var b [12]byte
	hi := uint64(t.Gen&0x3f)<<58 | uint64(t.Shard&0x3ff)<<48 | uint64(t.Run)&uint64(MaxRunNo)
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint32(b[8:], t.Pos)
	return "tk" + hex.EncodeToString(b[:])
}

// ParseToken decodes a token written by Token.String. Every 24-digit
// value decodes; whether it names a pending completion is for its shard
// to say.
func ParseToken(s string) (Token, error) {
	if !strings.HasPrefix(s, "tk") || len(s) != 26 {
		return Token{}, fmt.Errorf("completion token %q: want \"tk\" and 24 hex digits", s)
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return Token{}, fmt.Errorf("completion token %q: %v", s, err)
	}
	hi := binary.BigEndian.Uint64(b[:8])
	return Token{Gen: uint8(hi >> 58), Shard: int(hi >> 48 & 0x3ff), Run: RunNo(hi & uint64(MaxRunNo)),
		Pos: binary.BigEndian.Uint32(b[8:])}, nil
}

// Kind says what fact a journal record holds.
type Kind uint8

// Journal record kinds. Each record is one fact about one run; the order of
// a run's records is its journal, and a record's Pos is its index there.
const (
	KindStart      Kind = 1  // the run began: ID, type, input, parent, predecessor, origin
	KindStep       Kind = 2  // a step finished an attempt for good (ok or failed)
	KindAttempt    Kind = 3  // a step attempt failed; retry at Time (a timer)
	KindTimer      Kind = 4  // a durable timer was set to fire at Time
	KindFired      Kind = 5  // the timer at Ref position fired
	KindSignal     Kind = 6  // a signal arrived and is buffered until a wait consumes it
	KindWait       Kind = 7  // the run waits for signal Name until Deadline (0: forever)
	KindWaited     Kind = 8  // the wait at Ref position ended: ok (consumed MsgID) or timed out
	KindValue      Kind = 9  // a recorded nondeterministic value (time, random)
	KindChild      Kind = 10 // a child run was requested: ID, type, input (a message)
	KindChildDone  Kind = 11 // the child requested at Ref position finished
	KindSend       Kind = 12 // a signal or cancel was sent to another workflow (a message)
	KindCancel     Kind = 13 // the run was asked to cancel: reason, by whom
	KindUpdate     Kind = 14 // an update was accepted: name, id, payload, caller
	KindUpdateDone Kind = 15 // the update at Ref position finished: status, result
	KindSearchAttr Kind = 16 // a search attribute was upserted
	KindAsync      Kind = 17 // an async completion is pending; Token answers it
	KindAsyncDone  Kind = 18 // the async completion at Ref position was answered
	KindDone       Kind = 19 // the run finished: status, finish time, result, next run
	kindMax        Kind = 19
)

var kindNames = [...]string{"", "start", "step", "attempt", "timer", "fired", "signal", "wait", "waited",
	"value", "child", "child-done", "send", "cancel", "update", "update-done", "search-attr",
	"async", "async-done", "done"}

func (k Kind) String() string {
	if k >= 1 && k <= kindMax {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Status is how a step, wait, child, update or run ended.
type Status uint8

// Statuses.
const (
	StatusNone Status = iota
	StatusOK
	StatusFailed
	StatusCancelled
	StatusTimedOut
	StatusTerminated
	StatusContinuedAsNew // the run ended by starting a new run of its workflow ID
	StatusReset          // the run was replaced by a reset
	statusMax            = StatusReset
)

var statusNames = [...]string{"none", "ok", "failed", "cancelled", "timed-out", "terminated", "continued-as-new", "reset"}

func (s Status) String() string {
	if s <= statusMax {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Origin says where a run came from.
type Origin uint8

// Origins.
const (
	OriginFresh     Origin = iota // started from outside
	OriginChild                   // started by a parent run (Parent is set)
	OriginContinued               // continue-as-new of Pred
	OriginReset                   // a reset of Pred
	OriginRestart                 // a new run of an ID whose previous run (Pred) had finished
)

var originNames = [...]string{"fresh", "child", "continued", "reset", "restart"}

func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return "origin(" + strconv.Itoa(int(o)) + ")"
}

// Send flags.
const (
	SendSignal = 0 // KindSend delivers a signal named Name
	SendCancel = 1 // KindSend asks the target's latest run to cancel
)

// Record is one journal record. Which fields are meaningful depends on Kind;
// unused fields are zero and cost nothing when encoded. Run numbers appear
// only in the typed reference fields (Parent, Pred, Next, Key, Token, By):
// payloads are opaque and never embed one, so a reshard can rewrite every
// run-derived value it must.
//
// The small fields come first, packed together: a record is 272 bytes,
// where in meaning order it was 288. Records are most of an engine's
// memory (the journals of its resident runs) and are copied whole into
// ops and journals, so the padding was paid on every one.
type Record struct {
	Kind    Kind
	Status  Status
	Origin  Origin // Start
	Pos     uint32 // index of this record in its run's journal
	Ref     uint32 // the journal position this record completes (Fired, Waited, ChildDone, UpdateDone, AsyncDone)
	Attempt uint32 // Step/Attempt: attempt number; Start: version; Send: flags; UpdateDone: ordinal
	Gen     uint32 // Start: this run's generation among its workflow ID's runs (1, 2, …)

	Time     int64 // virtual time: start, set, retry-at, fire-at, finish (ms)
	Deadline int64 // wait/child/run deadline (ms); 0 none

	WorkflowID string // Start: own ID; Child: child's ID; Send: target ID
	Type       string // Start/Child: workflow type
	Name       string // step, timer, signal, wait, value, update or attribute name
	MsgID      string // Signal: dedup id; Waited: consumed signal; Update: update id; Child/Send: message id

	Parent   ParentRef // Start: parent waiting for the result; Update: the caller
	ParentID string    // Start/Update: the workflow ID of the run Parent names
	Pred     RunRef    // Start: predecessor run (continue-as-new, reset, restart)
	Next     RunRef    // Done: the run a continue-as-new or reset started
	By       RunRef    // Cancel: the run that asked; Signal: the sender
	Key      CtxKey    // Step: the Ctx::key the step ran with (empty WorkflowID: none)
	Token    Token     // Async: the completion token

	Payload []byte
}
