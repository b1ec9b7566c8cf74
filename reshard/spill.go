package reshard

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
)

// spillMap is store.SpillMap: the report's lists (and a plan file's) live
// in one, so reshard's memory is bounded by its budget, never by their
// length.
type spillMap = store.SpillMap

func newSpillMap(fs vfs.FS, dir string, budget int64) *spillMap {
	return store.NewSpillMap(fs, dir, budget)
}
