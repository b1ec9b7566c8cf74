package wal

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Position names where a batch starts: a segment and the byte offset of the
// batch's first chunk in that segment file. A checkpoint stores one to say
// where reading must resume. The offset just past a segment's last batch is
// also a valid Position: the next batch of the log starts there or, if the
// log moved on to a new segment, at the start of that one.
type Position struct {
	Segment uint64
	Offset  int64
}

func (p Position) String() string {
	return fmt.Sprintf("%s at offset %d", segmentName(p.Segment), p.Offset)
}

// Dir is where a data directory keeps its shared (format 3) log.
func Dir(fs vfs.FS, datadir string) string { return fs.PathJoin(datadir, "wal") }

// ShardLogDir is where a data directory in log format 2 keeps a shard's own
// log: shards/NNNN/log, beside the shard's store in shards/NNNN/store.
func ShardLogDir(fs vfs.FS, datadir string, shard int) string {
	return fs.PathJoin(datadir, "shards", fmt.Sprintf("%04d", shard), "log")
}

const (
	segmentSuffix = ".log"
	tempSuffix    = ".tmp"
	segmentDigits = 16
)

// segmentName is a segment's file name: 16 decimal digits, zero padded.
func segmentName(seg uint64) string {
	return fmt.Sprintf("%0*d%s", segmentDigits, seg, segmentSuffix)
}

// parseSegmentName is segmentName's inverse; any other name is not a segment.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != segmentDigits {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seg, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || seg == 0 {
		return 0, false
	}
	return seg, true
}

// listSegments returns the numbers of the segment files in dir, ascending.
func listSegments(fs vfs.FS, dir string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: listing %s: %w", dir, err)
	}
	var segs []uint64
	for _, name := range names {
		if seg, ok := parseSegmentName(name); ok {
			segs = append(segs, seg)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// removeTemps deletes segment files that were being created when a writer
// stopped. A segment gets its final name only after its header is synced, so
// a temporary file never holds an acknowledged batch.
func removeTemps(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("wal: listing %s: %w", dir, err)
	}
	removed := false
	for _, name := range names {
		base, ok := strings.CutSuffix(name, tempSuffix)
		if !ok {
			continue
		}
		if _, ok := parseSegmentName(base); !ok {
			continue
		}
		if err := fs.Remove(fs.PathJoin(dir, name)); err != nil {
			return fmt.Errorf("wal: removing leftover %s: %w", name, err)
		}
		removed = true
	}
	if removed {
		return meta.SyncDir(fs, dir)
	}
	return nil
}
