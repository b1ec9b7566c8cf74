package reshard

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

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

// ownership is what the files a reshard creates must get: the data
// directory's owner; for directories its mode, for files the mode of its
// fusee.meta. Only known on the real disk (nil otherwise).
type ownership struct {
	uid, gid          int
	dirMode, fileMode os.FileMode
}

func ownershipOf(fs vfs.FS, dir string) (*ownership, error) {
	if vfs.Root(fs) != vfs.Default {
		return nil, nil
	}
	dst, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	fst, err := os.Stat(filepath.Join(dir, meta.FileName))
	if err != nil {
		return nil, err
	}
	o := &ownership{uid: -1, gid: -1, dirMode: dst.Mode().Perm(), fileMode: fst.Mode().Perm()}
	if s, ok := dst.Sys().(*syscall.Stat_t); ok {
		o.uid, o.gid = int(s.Uid), int(s.Gid)
	}
	return o, nil
}

// apply gives path (and, for a directory, everything under it) the owner
// and modes.
func (o *ownership) apply(path string) error {
	if o == nil {
		return nil
	}
	uid, gid := o.uid, o.gid
	return filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := o.fileMode
		if info.IsDir() {
			mode = o.dirMode
		}
		if info.Mode().Perm() != mode {
			if err := os.Chmod(p, mode); err != nil {
				return fmt.Errorf("giving %s the data directory's mode: %w", p, err)
			}
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok && uid >= 0 && (int(s.Uid) != uid || int(s.Gid) != gid) {
			if err := os.Lchown(p, uid, gid); err != nil {
				return fmt.Errorf("giving %s the data directory's owner: %w", p, err)
			}
		}
		return nil
	})
}
