package model

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DiffShards compares the logical state of two shards (everything but
// change tracking) and describes the first differences, or returns "" when
// they are equal. Records compare by their encoding, so a nil and an empty
// payload are equal, as they are on disk. Tests of recovery, reshard and
// the simulator use it; reflect.DeepEqual would also compare bookkeeping.
func DiffShards(a, b *Shard) string {
	var d differ
	d.shard(a, b)
	return d.String()
}

type differ struct {
	lines []string
}

const maxDiffLines = 10

func (d *differ) add(format string, args ...any) {
	if len(d.lines) < maxDiffLines {
		d.lines = append(d.lines, fmt.Sprintf(format, args...))
	} else if len(d.lines) == maxDiffLines {
		d.lines = append(d.lines, "…")
	}
}

func (d *differ) String() string { return strings.Join(d.lines, "\n") }

func (d *differ) shard(a, b *Shard) {
	if a.Index != b.Index || a.Count != b.Count {
		d.add("shard %d of %d vs shard %d of %d", a.Index, a.Count, b.Index, b.Count)
	}
	if a.LSN != b.LSN || a.NextRun != b.NextRun || a.NextSeq != b.NextSeq {
		d.add("LSN/next run/next seq %d/%d/%d vs %d/%d/%d", a.LSN, a.NextRun, a.NextSeq, b.LSN, b.NextRun, b.NextSeq)
	}
	if a.StoreGen != b.StoreGen {
		d.add("store generation %d vs %d", a.StoreGen, b.StoreGen)
	}
	for _, no := range unionKeys(a.Runs, b.Runs) {
		ra, rb := a.Runs[no], b.Runs[no]
		switch {
		case ra == nil:
			d.add("run %d: missing vs %s", no, rb.State)
		case rb == nil:
			d.add("run %d: %s vs missing", no, ra.State)
		default:
			d.run(ra, rb)
		}
	}
	for _, id := range unionKeys(a.ByID, b.ByID) {
		na, oka := a.ByID[id]
		nb, okb := b.ByID[id]
		if na != nb || oka != okb {
			d.add("ID index %q: run %d vs %d", id, na, nb)
		}
	}
	for _, id := range unionKeys(a.Outbox, b.Outbox) {
		d.message(id, a.Outbox[id], b.Outbox[id])
	}
	for _, id := range unionKeys(a.Seen, b.Seen) {
		wa, oka := a.Seen[id]
		wb, okb := b.Seen[id]
		if oka != okb || wa != wb {
			d.add("seen %q: %v %q vs %v %q", id, oka, wa, okb, wb)
		}
	}
	for _, no := range unionKeys(a.Archive, b.Archive) {
		ha, oka := a.Archive[no]
		hb, okb := b.Archive[no]
		if oka != okb {
			d.add("archive of run %d: %v vs %v", no, oka, okb)
			continue
		}
		d.journal(fmt.Sprintf("archive of run %d", no), ha, hb)
	}
	for _, k := range unionKeys(a.Timers, b.Timers) {
		_, oka := a.Timers[k]
		_, okb := b.Timers[k]
		if oka != okb {
			d.add("timer %+v: %v vs %v", k, oka, okb)
		}
	}
}

func (d *differ) run(a, b *Run) {
	if EntryOf(a) != EntryOf(b) || a.No != b.No {
		d.add("run %d: %+v vs %+v", a.No, EntryOf(a), EntryOf(b))
	}
	if (a.Journal == nil) != (b.Journal == nil) {
		d.add("run %d: journal nil %v vs %v", a.No, a.Journal == nil, b.Journal == nil)
	}
	d.journal(fmt.Sprintf("run %d", a.No), a.Journal, b.Journal)
}

func (d *differ) journal(what string, a, b []Record) {
	if len(a) != len(b) {
		d.add("%s: %d records vs %d", what, len(a), len(b))
		return
	}
	var ea, eb []byte
	for i := range a {
		ea, eb = EncodeRecord(ea[:0], &a[i]), EncodeRecord(eb[:0], &b[i])
		if !bytes.Equal(ea, eb) {
			d.add("%s: record %d: %+v vs %+v", what, i, a[i], b[i])
		}
	}
}

func (d *differ) message(id string, a, b *Message) {
	switch {
	case a == nil:
		d.add("outbox %q: missing vs seq %d", id, b.Seq)
		return
	case b == nil:
		d.add("outbox %q: seq %d vs missing", id, a.Seq)
		return
	}
	if !bytes.Equal(EncodeMessage(nil, a), EncodeMessage(nil, b)) || a.Seq != b.Seq {
		d.add("outbox %q: %+v vs %+v", id, *a, *b)
	}
}

// unionKeys returns the keys of both maps, sorted.
func unionKeys[K comparable, V1, V2 any](a map[K]V1, b map[K]V2) []K {
	set := make(map[K]struct{}, len(a))
	for k := range a {
		set[k] = struct{}{}
	}
	for k := range b {
		set[k] = struct{}{}
	}
	return slices.SortedFunc(maps.Keys(set), compareKeys[K])
}

func compareKeys[K comparable](x, y K) int {
	switch xv := any(x).(type) {
	case TimerKey:
		yv := any(y).(TimerKey)
		return CompareTimers(xv, yv)
	case string:
		return strings.Compare(xv, any(y).(string))
	}
	return strings.Compare(fmt.Sprintf("%020v", x), fmt.Sprintf("%020v", y))
}

func CompareTimers(a, b TimerKey) int {
	switch {
	case a.At != b.At:
		return cmpInt(a.At, b.At)
	case a.Run != b.Run:
		return cmpInt(a.Run, b.Run)
	}
	return cmpInt(a.Pos, b.Pos)
}

func cmpInt[T ~int64 | ~uint64 | ~uint32](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
