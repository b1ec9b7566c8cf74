package reshard

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
)

// SetTestHook sets the switch-step hook for a test.
func SetTestHook(f func(step string) error) { Testing.Step = f }

// SetDirectWrite turns the unsorted write of a grow to a multiple on or
// off, returning the previous setting.
func SetDirectWrite(on bool) bool {
	old := !Testing.sortGrows
	Testing.sortGrows = !on
	return old
}

// SetReadBackCheck makes every reshard also read its new shards back and
// compare their digest with the one computed as they were written,
// returning the previous setting.
func SetReadBackCheck(on bool) bool {
	old := Testing.readBackCheck
	Testing.readBackCheck = on
	return old
}

// SetCorruptWrite sets a function that may change or drop each value the
// rewrite hands to a new store (before the check and the writer), as a
// bug in the rewrite would: the check must catch it.
func SetCorruptWrite(f func(shard int, key, value []byte) ([]byte, bool)) { Testing.corruptWrite = f }

// memLists gives rep two lists that never spill (tests).
func memLists(rep *Report) *Report {
	rep.Renumbered = newList[RenumberedRun](vfs.NewMem(), "/renumbered", 1<<40)
	rep.Tokens = newList[TokenChange](vfs.NewMem(), "/tokens", 1<<40)
	return rep
}

// listToken is a rawRewriter's token: the change added to rep's list.
func listToken(rep *Report) func(int, model.RunNo, TokenChange) error {
	return func(_ int, _ model.RunNo, t TokenChange) error { return rep.Tokens.add(nil, t) }
}

// NewTestList is a list of items in the given order, spilling into a
// scratch store under dir past budget bytes.
func NewTestList[T any](dir string, budget int64, items ...T) *List[T] {
	l := newList[T](vfs.Default, dir, budget)
	for _, it := range items {
		if err := l.Add(it); err != nil {
			panic(err)
		}
	}
	return l
}

// Add appends item at the list's end.
func (l *List[T]) Add(item T) error { return l.add(nil, item) }

// All returns every entry of l, in order.
func (l *List[T]) All() []T {
	out, err := l.all()
	if err != nil {
		panic(err)
	}
	return out
}

// SpaceMargin is the fixed part of Report.SpaceNeeded.
const SpaceMargin = spaceMargin

// StoreFiles is what Report.SpaceNeeded allows for each new store's own
// small files: fixed per store, whatever the directory's size.
const StoreFiles = storeFiles

// SetRewriters sets how many old shards pass 2 rewrites at once (0: one
// per core), returning the previous setting.
func SetRewriters(n int) int {
	old := Testing.rewriters
	Testing.rewriters = n
	return old
}

// SetMergedHook sets the function called once each new shard's sorted
// keys are merged, before the sort's scratch files for it are removed.
func SetMergedHook(f func(j int)) { Testing.merged = f }

// StoresBeingWritten is what Report.SpaceNeeded allows for the new stores
// being written while the sort's scratch files are all there.
func StoresBeingWritten(oldBytes, memory int64, newN int) int64 {
	return storesBeingWritten(oldBytes, memory, newN)
}

// SetPhaseClock sets a function called where the report's clock of a
// phase starts (stop false) and where it stops.
func SetPhaseClock(f func(name string, stop bool)) { Testing.phaseClock = f }

// SetListBatch sets how many list elements a report's JSON encoder takes
// at a time (0: listBatch) and returns the previous setting.
func SetListBatch(n int) int {
	prev := Testing.listBatch
	Testing.listBatch = n
	return prev
}

// WriteKept writes rep whole to path, as the report is kept before a
// switch, and has later WriteJSONs copy its lists from that file.
func (rep *Report) WriteKept(fs vfs.FS, path string) error { return rep.writeKept(fs, path) }
