package reshard

import (
	"context"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
)

// A shardSource streams one shard's recovered state: what the engine's own
// recovery (checkpoint, store, log tail and the outputs the tail
// regenerates) says the shard holds, read-only, without ticking anything.
type shardSource interface {
	Header() journal.CheckpointHeader
	// Runs calls fn for every run in ascending number; archive is the
	// history of a tombstoned run (nil otherwise).
	Runs(ctx context.Context, fn func(r *journal.Run, archive []journal.Record) error) error
	Outbox(fn func(m *journal.Message) error) error
	Seen(fn func(msgID, workflowID string) error) error
	Index(fn func(workflowID string, no journal.RunNo) error) error
	Close() error
}

// openSource recovers shard i of the count shards of the directory at dir,
// read-only.
func openSource(fs vfs.FS, dir string, i, count int) (shardSource, error) {
	s, hdr, _, err := journal.RecoverShard(fs, dir, i, count)
	if err != nil {
		return nil, err
	}
	hdr.LSN, hdr.NextRun, hdr.NextSeq = s.LSN, s.NextRun, s.NextSeq
	return &memSource{s: s, hdr: hdr}, nil
}

// memSource serves a shard recovered into memory.
type memSource struct {
	s   *journal.Shard
	hdr journal.CheckpointHeader
}

func (m *memSource) Header() journal.CheckpointHeader { return m.hdr }

func (m *memSource) Runs(ctx context.Context, fn func(*journal.Run, []journal.Record) error) error {
	for _, r := range m.s.SortedRuns() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r, m.s.Archive[r.No]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memSource) Outbox(fn func(*journal.Message) error) error {
	for _, msg := range m.s.SortedOutbox() {
		if err := fn(msg); err != nil {
			return err
		}
	}
	return nil
}

func (m *memSource) Seen(fn func(string, string) error) error {
	for _, id := range slices.Sorted(mapKeys(m.s.Seen)) {
		if err := fn(id, m.s.Seen[id]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memSource) Index(fn func(string, journal.RunNo) error) error {
	for _, id := range slices.Sorted(mapKeys(m.s.ByID)) {
		if err := fn(id, m.s.ByID[id]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memSource) Close() error { m.s = nil; return nil }

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
