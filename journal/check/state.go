package check

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/meta"
)

// State is what the checks work on: a directory's recovered shards, what
// its fusee.meta says, and what recovery reported.
type State struct {
	Dir        string // for messages; "" when built in memory
	Format     string // fusee.meta format= (meta.FormatLocal)
	LogFormat  int    // fusee.meta log= (meta.LogShared)
	ShardCount int    // fusee.meta shards=

	Shards   []*journal.Shard        // slot i holds shard i
	Recovery *journal.RecoveryReport // nil when not known
}

// FromShards wraps shards built in memory as a State whose meta agrees
// with them: the current format and len(shards) shards.
func FromShards(shards []*journal.Shard) *State {
	return &State{Format: meta.FormatLocal, LogFormat: meta.LogShared, ShardCount: len(shards), Shards: shards}
}

// Runs counts the runs of every shard (tombstones included).
func (st *State) Runs() int {
	n := 0
	for _, s := range st.Shards {
		if s != nil {
			n += len(s.Runs)
		}
	}
	return n
}

// Load opens the data directory at dir read-only through the engine's own
// recovery, reads its fusee.meta, and closes it again: the lock is held
// only while Load runs. The directory's bytes do not change; nothing is
// ticked. Errors from meta (in use, switching, old log) come back wrapped
// so that errors.Is still matches them.
func Load(fs vfs.FS, dir string) (*State, error) {
	db, rep, err := journal.Open(fs, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("opening %s read-only: %w", dir, err)
	}
	st := &State{Dir: dir, Shards: db.Shards, Recovery: rep}
	// The lock is ours while db is open, so reading the meta file now
	// sees what recovery saw.
	m, merr := meta.ReadAny(dir)
	cerr := db.Close()
	if merr != nil {
		return nil, merr
	}
	if cerr != nil {
		return nil, fmt.Errorf("closing %s: %w", dir, cerr)
	}
	st.Format, st.LogFormat, st.ShardCount = m.Format, m.Log, m.Shards
	if st.Shards == nil {
		return nil, errors.New("recovery returned no shards")
	}
	return st, nil
}
