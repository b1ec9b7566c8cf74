package check

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
)

// State is what the checks work on: a directory's recovered shards, what
// its fusee.meta says, and what recovery reported.
type State struct {
	Dir        string // for messages; "" when built in memory
	Format     string // fusee.meta format= (meta.FormatLocal)
	LogFormat  int    // fusee.meta log= (meta.LogShared)
	ShardCount int    // fusee.meta shards=

	Shards   []*model.Shard          // slot i holds shard i
	Recovery *journal.RecoveryReport // nil when not known
	// Stats holds each shard's checkpoint header, log tail and store
	// size, and the log's size; nil when the state was not read from a
	// directory.
	Stats *journal.Stats
}

// FromShards wraps shards built in memory as a State whose meta agrees
// with them: the current format and len(shards) shards.
func FromShards(shards []*model.Shard) *State {
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
// recovery and closes it again: the lock is held only while Load runs.
// The state holds the whole directory in memory: it is for tests and
// small directories; the commands stream a directory through OpenDir.
// The directory's bytes do not change; nothing is ticked. Errors from
// opening (in use, interrupted reshard, old log format, damage) come back
// wrapped, so errors.Is and errors.As still match them.
func Load(fs vfs.FS, dir string) (*State, error) {
	return LoadContext(context.Background(), fs, dir)
}

// LoadContext is Load that gives up when ctx is done (between shards and
// log batches of recovery), returning ctx.Err() with the directory closed.
func LoadContext(ctx context.Context, fs vfs.FS, dir string) (*State, error) {
	db, rep, err := journal.OpenContext(ctx, fs, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	m := db.Meta()
	st := &State{Dir: dir, Format: m.Format, LogFormat: m.Log, ShardCount: m.Shards, Shards: db.Shards, Recovery: rep}
	stats, serr := db.Stats()
	if cerr := db.Close(); serr == nil && cerr != nil {
		serr = fmt.Errorf("closing %s: %w", dir, cerr)
	}
	if serr != nil {
		return nil, serr
	}
	st.Stats = &stats
	return st, nil
}
