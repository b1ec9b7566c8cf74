package store

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/fusee-dev/fusee/journal/model"
)

// Store keys. Every key of a shard store starts with one ASCII letter that
// says what it holds; the rest is fixed-width big-endian numbers or a raw
// string, so that pebble's byte order is the order the engine wants
// (runs by number, timers by fire time). docs/format.md is the reference.
//
//	"A" run:8                      archived history of a tombstoned run
//	"H"                            the checkpoint header
//	"I" workflowID                 ID index: the ID's highest-generation run (value: run:8)
//	"O" seq:8                      outbox message
//	"R" run:8                      run entry (state, flags, identity, times)
//	"R" run:8 pos:4                journal record pos of the run
//	"S" messageID                  receiver dedup: a message this shard received
//	"T" at:8 run:8 pos:4           pending timer (at with its sign bit flipped)
//
// The I and T keys are derived from the run entries and journals; recovery
// rebuilds them and refuses a store whose copy differs.
const (
	KeyArchive byte = 'A'
	KeyHeader  byte = 'H'
	KeyIndex   byte = 'I'
	KeyOutbox  byte = 'O'
	KeyRun     byte = 'R'
	KeySeen    byte = 'S'
	KeyTimer   byte = 'T'
)

// StoreKey is a parsed store key. Which fields are set depends on Kind.
type StoreKey struct {
	Kind     byte
	Run      model.RunNo // A, R, T
	Pos      uint32      // R (with IsRecord), T
	IsRecord bool        // R: a journal record, not the run entry
	Seq      uint64      // O
	At       int64       // T
	ID       string      // I: workflow ID; S: message ID
}

func (k StoreKey) String() string {
	switch k.Kind {
	case KeyArchive:
		return fmt.Sprintf("archive/%d", k.Run)
	case KeyHeader:
		return "header"
	case KeyIndex:
		return fmt.Sprintf("index/%q", k.ID)
	case KeyOutbox:
		return fmt.Sprintf("outbox/%d", k.Seq)
	case KeyRun:
		if k.IsRecord {
			return fmt.Sprintf("run/%d/record/%d", k.Run, k.Pos)
		}
		return fmt.Sprintf("run/%d", k.Run)
	case KeySeen:
		return fmt.Sprintf("seen/%q", k.ID)
	case KeyTimer:
		return fmt.Sprintf("timer/%d/%d/%d", k.At, k.Run, k.Pos)
	}
	return fmt.Sprintf("key(%q)", k.Kind)
}

// headerKey is the one key of the checkpoint header.
var headerKey = []byte{KeyHeader}

// ArchiveKey is the key of run no's archived history.
func ArchiveKey(no model.RunNo) []byte { return be64Key(KeyArchive, uint64(no)) }

// IndexKey is the ID-index key of a workflow ID.
func IndexKey(workflowID string) []byte { return AppendIndexKey(nil, workflowID) }

// AppendIndexKey appends IndexKey(workflowID) to dst.
func AppendIndexKey(dst []byte, workflowID string) []byte {
	return append(append(dst, KeyIndex), workflowID...)
}

// OutboxKey is the key of the outbox message with sequence number seq.
func OutboxKey(seq uint64) []byte { return be64Key(KeyOutbox, seq) }

// AppendOutboxKey appends OutboxKey(seq) to dst.
func AppendOutboxKey(dst []byte, seq uint64) []byte { return appendBE64Key(dst, KeyOutbox, seq) }

// RunKey is the key of run no's entry.
func RunKey(no model.RunNo) []byte { return be64Key(KeyRun, uint64(no)) }

// RecordKey is the key of journal record pos of run no.
func RecordKey(no model.RunNo, pos uint32) []byte {
	return binary.BigEndian.AppendUint32(RunKey(no), pos)
}

// SeenKey is the receiver-dedup key of a message ID.
func SeenKey(msgID string) []byte { return AppendSeenKey(nil, msgID) }

// AppendSeenKey appends SeenKey(msgID) to dst.
func AppendSeenKey(dst []byte, msgID string) []byte { return append(append(dst, KeySeen), msgID...) }

// TimerKeyBytes is the store key of a pending timer. The fire time's sign
// bit is flipped so that negative times sort before positive ones.
func TimerKeyBytes(k model.TimerKey) []byte { return AppendTimerKey(make([]byte, 0, 21), k) }

func be64Key(kind byte, v uint64) []byte { return appendBE64Key(make([]byte, 0, 21), kind, v) }

func appendBE64Key(dst []byte, kind byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, kind), v)
}

// AppendTimerKey appends TimerKeyBytes(k) to dst.
func AppendTimerKey(dst []byte, k model.TimerKey) []byte {
	dst = appendBE64Key(dst, KeyTimer, uint64(k.At)^1<<63)
	dst = binary.BigEndian.AppendUint64(dst, uint64(k.Run))
	return binary.BigEndian.AppendUint32(dst, k.Pos)
}

// ParseStoreKey parses a store key; it fails on a key no layout allows.
func ParseStoreKey(key []byte) (StoreKey, error) { return parseStoreKey(key, false) }

// ViewStoreKey is ParseStoreKey with the ID of an index or dedup key
// aliasing key instead of copied from it: nothing is allocated, and the
// StoreKey is valid only while key is unchanged.
func ViewStoreKey(key []byte) (StoreKey, error) { return parseStoreKey(key, true) }

func parseStoreKey(key []byte, view bool) (StoreKey, error) {
	if len(key) == 0 {
		return StoreKey{}, fmt.Errorf("empty store key")
	}
	k := StoreKey{Kind: key[0]}
	rest := key[1:]
	bad := func() (StoreKey, error) {
		return StoreKey{}, fmt.Errorf("store key %q: not a valid %q key", key, k.Kind)
	}
	switch k.Kind {
	case KeyHeader:
		if len(rest) != 0 {
			return bad()
		}
	case KeyIndex, KeySeen:
		if len(rest) == 0 && k.Kind == KeyIndex { // a message ID may be empty; a workflow ID may not
			return bad()
		}
		if view {
			k.ID = unsafe.String(unsafe.SliceData(rest), len(rest))
		} else {
			k.ID = string(rest)
		}
	case KeyArchive, KeyOutbox:
		if len(rest) != 8 {
			return bad()
		}
		v := binary.BigEndian.Uint64(rest)
		if k.Kind == KeyOutbox {
			k.Seq = v
		} else {
			k.Run = model.RunNo(v)
		}
	case KeyRun:
		if len(rest) != 8 && len(rest) != 12 {
			return bad()
		}
		k.Run = model.RunNo(binary.BigEndian.Uint64(rest))
		if len(rest) == 12 {
			k.IsRecord = true
			k.Pos = binary.BigEndian.Uint32(rest[8:])
		}
	case KeyTimer:
		if len(rest) != 20 {
			return bad()
		}
		k.At = int64(binary.BigEndian.Uint64(rest) ^ 1<<63)
		k.Run = model.RunNo(binary.BigEndian.Uint64(rest[8:]))
		k.Pos = binary.BigEndian.Uint32(rest[16:])
	default:
		return StoreKey{}, fmt.Errorf("store key %q: unknown kind %q", key, k.Kind)
	}
	if (k.Kind == KeyArchive || k.Kind == KeyRun || k.Kind == KeyTimer) && (k.Run == 0 || k.Run > model.MaxRunNo) {
		return StoreKey{}, fmt.Errorf("store key %q: run number %d out of range 1..%d", key, k.Run, model.MaxRunNo)
	}
	return k, nil
}
