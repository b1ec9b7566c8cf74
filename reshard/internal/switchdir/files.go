package switchdir

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Owner is what the files a reshard creates must get: the data
// directory's owner; for directories its mode, for files the mode of its
// fusee.meta. Only known on the real disk (nil otherwise).
type Owner struct {
	uid, gid          int
	dirMode, fileMode os.FileMode
}

// OwnerOf is what new files in dir get.
func OwnerOf(fs vfs.FS, dir string) (*Owner, error) {
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
	o := &Owner{uid: -1, gid: -1, dirMode: dst.Mode().Perm(), fileMode: fst.Mode().Perm()}
	if s, ok := dst.Sys().(*syscall.Stat_t); ok {
		o.uid, o.gid = int(s.Uid), int(s.Gid)
	}
	return o, nil
}

// Apply gives path (and, for a directory, everything under it) the owner
// and modes.
func (o *Owner) Apply(path string) error {
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

// TreeSize is the total size of the files under dir, skipping the named
// top-level entries.
func TreeSize(fs vfs.FS, dir string, skip ...string) (int64, error) {
	var total int64
	names, err := fs.List(dir)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, n := range names {
		if slices.Contains(skip, n) {
			continue
		}
		if err := WalkFiles(fs, dir, n, func(_ string, size int64) error {
			total += size
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// WalkFiles calls fn with every file at or under root/rel (rel: names
// joined by '/'), by its path relative to root and its size, in name
// order. A missing root/rel has no files.
func WalkFiles(fs vfs.FS, root, rel string, fn func(rel string, size int64) error) error {
	p := fs.PathJoin(root, rel)
	st, err := fs.Stat(p)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if !st.IsDir() {
		return fn(rel, st.Size())
	}
	names, err := fs.List(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := WalkFiles(fs, root, rel+"/"+n, fn); err != nil {
			return err
		}
	}
	return nil
}
