package switchdir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/meta"
)

// A Fingerprint names the state of a closed data directory's layout by
// what a reshard reads of it first: the bytes of fusee.meta, where the
// shared log ends, and every store's checkpoint header. Anything the
// engine acknowledges moves the log's end (an entry is appended) or a
// header (a checkpoint), so two equal fingerprints mean nothing was
// written in between. A plan records the fingerprint of the directory it
// was made from; a kept layout records the fingerprint of the layout that
// replaced it.
type Fingerprint struct {
	// Meta is the SHA-256 of fusee.meta's bytes, hex.
	Meta   string `json:"meta_sha256"`
	Shards int    `json:"shards"`
	// LogEnd is the position just past the shared log's last good batch.
	LogEnd LogPosition `json:"log_end"`
	// Stores are the shards' checkpoint headers, in shard order.
	Stores []StoreFingerprint `json:"stores"`
}

// LogPosition is a position in the shared log: a segment number and a
// byte offset in it (docs/format.md §4).
type LogPosition struct {
	Segment uint64 `json:"segment"`
	Offset  int64  `json:"offset"`
}

// StoreFingerprint is one store's checkpoint header: the fields an operator
// can read, and the SHA-256 of the header's encoding, which covers the
// rest.
type StoreFingerprint struct {
	Shard         int    `json:"shard"`
	Generation    uint64 `json:"store_generation"`
	CheckpointSeq uint64 `json:"checkpoint_seq"`
	CheckpointLSN uint64 `json:"checkpoint_lsn"`
	NextRun       uint64 `json:"next_run"`
	Header        string `json:"header_sha256"`
}

// ReadFingerprint reads the fingerprint of the log format 3 layout of
// count shards in dir (a data directory, or reshard.new, which has the
// same wal/ and shards/), with metaBytes standing for its fusee.meta. It
// returns the log tails it read on the way, for the plan pass. Nothing is
// written; the caller holds the directory's lock.
func ReadFingerprint(ctx context.Context, fs vfs.FS, dir string, count int, metaBytes []byte) (Fingerprint, []store.ShardTail, error) {
	sum := sha256.Sum256(metaBytes)
	f := Fingerprint{Meta: hex.EncodeToString(sum[:]), Shards: count}
	headers, err := store.ReadHeaders(ctx, fs, dir, count)
	if err != nil {
		return Fingerprint{}, nil, err
	}
	for i := range headers {
		h := &headers[i]
		hs := sha256.Sum256(model.EncodeHeader(nil, h))
		f.Stores = append(f.Stores, StoreFingerprint{Shard: i, Generation: h.Gen, CheckpointSeq: h.Seq,
			CheckpointLSN: h.LSN, NextRun: uint64(h.NextRun), Header: hex.EncodeToString(hs[:])})
	}
	tails, rec, err := journal.ReadTails(ctx, fs, dir, headers)
	if err != nil {
		return Fingerprint{}, nil, fmt.Errorf("reading the log of %s: %w", dir, err)
	}
	f.LogEnd = LogPosition{Segment: rec.LogEnd.Segment, Offset: rec.LogEnd.Offset}
	return f, tails, nil
}

// ReadMetaBytes reads dir's fusee.meta as it is on disk.
func ReadMetaBytes(fs vfs.FS, dir string) ([]byte, error) {
	path := fs.PathJoin(dir, meta.FileName)
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

// Diff lists, in words, how b differs from f ("" when they are equal).
func (f Fingerprint) Diff(b Fingerprint) string {
	var d []string
	if f.Meta != b.Meta {
		d = append(d, "fusee.meta differs")
	}
	if f.Shards != b.Shards {
		d = append(d, fmt.Sprintf("%d shards, not %d", b.Shards, f.Shards))
	}
	if f.LogEnd != b.LogEnd {
		d = append(d, fmt.Sprintf("the log ends at segment %d offset %d, not segment %d offset %d",
			b.LogEnd.Segment, b.LogEnd.Offset, f.LogEnd.Segment, f.LogEnd.Offset))
	}
	for i := range min(len(f.Stores), len(b.Stores)) {
		x, y := f.Stores[i], b.Stores[i]
		if x == y {
			continue
		}
		switch {
		case x.Generation != y.Generation:
			d = append(d, fmt.Sprintf("shard %d's store is generation %d, not %d", i, y.Generation, x.Generation))
		case x.CheckpointSeq != y.CheckpointSeq || x.CheckpointLSN != y.CheckpointLSN:
			d = append(d, fmt.Sprintf("shard %d was checkpointed at LSN %d (checkpoint %d), not %d (checkpoint %d)", i, y.CheckpointLSN, y.CheckpointSeq, x.CheckpointLSN, x.CheckpointSeq))
		default:
			d = append(d, fmt.Sprintf("shard %d's checkpoint header differs", i))
		}
	}
	return strings.Join(d, "; ")
}
