package wal

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// RemoveBefore deletes the whole segments of the log in dir that come before
// pos's segment, oldest first, and syncs dir. It is how the log is truncated
// once every shard's checkpoint needs nothing before pos; deciding that is
// the caller's job. pos's segment must exist: its header lets a later Read
// start there without the segments removed.
func RemoveBefore(fs vfs.FS, dir string, pos Position) error {
	segs, err := listSegments(fs, dir)
	if err != nil {
		return err
	}
	found := false
	for _, seg := range segs {
		if seg == pos.Segment {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("wal: not removing anything before %s: %s holds no such segment", pos, dir)
	}
	removed := false
	for _, seg := range segs {
		if seg >= pos.Segment {
			break
		}
		if err := fs.Remove(fs.PathJoin(dir, segmentName(seg))); err != nil {
			return fmt.Errorf("wal: removing %s: %w", segmentName(seg), err)
		}
		removed = true
	}
	if removed {
		return meta.SyncDir(fs, dir)
	}
	return nil
}
