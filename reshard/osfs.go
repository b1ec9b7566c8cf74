package reshard

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"golang.org/x/sys/unix"
)

// metaDir is the locked data directory.
type metaDir = meta.Dir

// lockDir takes dir's lock and reads its fusee.meta, accepting an
// interrupted reshard (which this package finishes) and refusing log
// format 2 (meta.ErrOldLog: Upgrade converts it) and an interrupted
// upgrade (meta.UpgradingError: Upgrade finishes it).
func lockDir(fs vfs.FS, dir string) (*metaDir, error) {
	return meta.Open(fs, dir, meta.Options{Log: meta.LogShared, AllowSwitching: true})
}

// freeSpace is the space available to us on dir's filesystem (ok=false
// when it cannot be known, as on an in-memory filesystem).
func freeSpace(fs vfs.FS, dir string) (int64, bool) {
	if vfs.Root(fs) != vfs.Default {
		return 0, false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
