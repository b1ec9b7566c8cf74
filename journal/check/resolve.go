package check

import (
	"sort"

	"github.com/fusee-dev/fusee/journal"
)

// universe looks runs up across every shard of a state.
type universe struct {
	count   int
	byIndex map[int]*journal.Shard
	// byKey finds runs by (workflow ID, run number), for Ctx::key values,
	// which name no shard.
	byKey map[idNo][]located
}

type idNo struct {
	id string
	no journal.RunNo
}

// located is a run and the shard that holds it.
type located struct {
	s *journal.Shard
	r *journal.Run
}

func newUniverse(shards []*journal.Shard) *universe {
	u := &universe{count: len(shards), byIndex: map[int]*journal.Shard{}, byKey: map[idNo][]located{}}
	for _, s := range shards {
		if s == nil {
			continue
		}
		if _, dup := u.byIndex[s.Index]; !dup {
			u.byIndex[s.Index] = s
		}
		for _, r := range s.Runs {
			k := idNo{r.WorkflowID, r.No}
			u.byKey[k] = append(u.byKey[k], located{s, r})
		}
	}
	return u
}

// resolution is what looking a reference up found.
type resolution uint8

const (
	resolved  resolution = iota
	badShard             // no such shard
	unissued             // the shard never handed that number out
	dangling             // handed out, no longer held
	noSuchRun            // journal.NoSuchRun: a reshard found the run gone
)

// run looks up run no on shard. NoSuchRun is never looked up: it names no
// run on any shard, whatever shard the reference says.
func (u *universe) run(shard int, no journal.RunNo) (*journal.Shard, *journal.Run, resolution) {
	if no == journal.NoSuchRun {
		return nil, nil, noSuchRun
	}
	s, ok := u.byIndex[shard]
	if !ok {
		return nil, nil, badShard
	}
	if r, ok := s.Runs[no]; ok {
		return s, r, resolved
	}
	if no == 0 || no >= s.NextRun {
		return s, nil, unissued
	}
	return s, nil, dangling
}

// keyRun finds the run a Ctx::key value names: the one run with that
// workflow ID and number. Ambiguity (a damaged state) resolves to nothing.
func (u *universe) keyRun(k journal.CtxKey) *journal.Run {
	if l := u.byKey[idNo{k.WorkflowID, k.Run}]; len(l) == 1 {
		return l[0].r
	}
	return nil
}

// history is a run's records: its journal, or its archive once it is a
// tombstone.
func history(s *journal.Shard, r *journal.Run) []journal.Record {
	if r.State == journal.StateTombstone {
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
