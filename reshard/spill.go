package reshard

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
)

// spillMap is store.SpillMap: the renumbering plan, the run map and the
// external sort of new store keys live in one, so reshard's memory is
// bounded by its budget, never by the number of runs.
type spillMap = store.SpillMap

func newSpillMap(fs vfs.FS, dir string, budget int64) *spillMap {
	return store.NewSpillMap(fs, dir, budget)
}
