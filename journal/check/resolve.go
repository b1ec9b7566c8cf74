package check

import (
	"sort"

	"github.com/fusee-dev/fusee/journal/model"
)

// resolution is what looking a reference up found (view.lookup).
type resolution uint8

const (
	resolved  resolution = iota
	badShard             // no such shard
	unissued             // the shard never handed that number out
	dangling             // handed out, no longer held
	noSuchRun            // model.NoSuchRun: a reshard found the run gone
)

// history is a run's records: its journal, or its archive once it is a
// tombstone.
func history(s *model.Shard, r *model.Run) []model.Record {
	if r.State == model.StateTombstone {
		return s.Archive[r.No]
	}
	return r.Journal
}

// sortedIDs returns the keys of m in order.
func sortedIDs[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
