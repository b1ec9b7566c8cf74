package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/meta"
)

// GenTemp reports whether path names one of Generate's temporary
// directories (<dir>.gen-tmp-<16 hex digits>) and, if so, the directory it
// was building. Such a directory is never a data directory: it exists only
// while a gen runs, or after a gen was killed (SIGKILL, a crash) before it
// could remove it.
func GenTemp(path string) (target string, ok bool) {
	base := filepath.Base(filepath.Clean(path))
	i := strings.LastIndex(base, genTmpInfix)
	if i <= 0 {
		return "", false
	}
	suffix := base[i+len(genTmpInfix):]
	if len(suffix) != 16 || strings.Trim(suffix, "0123456789abcdef") != "" {
		return "", false
	}
	return filepath.Join(filepath.Dir(filepath.Clean(path)), base[:i]), true
}

// RemoveStaleGenTemps removes the temporary directories that earlier gens
// of dir left behind when they were killed, and returns their paths. A
// temporary directory whose lock is held belongs to a gen still running
// and is left alone; one that cannot be locked or removed is an error
// naming it. Generate never leaves one behind on an error or an interrupt
// it sees; only a process killed outright does.
func RemoveStaleGenTemps(fs vfs.FS, dir string) ([]string, error) {
	clean := filepath.Clean(dir)
	parent, base := fs.PathDir(clean), fs.PathBase(clean)
	names, err := fs.List(parent)
	if err != nil {
		return nil, nil // no parent yet: nothing can be stale
	}
	var removed []string
	for _, name := range names {
		path := fs.PathJoin(parent, name)
		if tmp, ok := strings.CutSuffix(path, scratchSuffix); ok {
			// A scratch store whose gen directory is gone (the gen was
			// killed while its directory was being removed, or by an
			// older build that left it): a running gen always has its
			// directory, and one with its directory is removed with it.
			if target, ok := GenTemp(tmp); !ok || fs.PathBase(target) != base {
				continue
			}
			if _, err := fs.Stat(tmp); err == nil {
				continue
			}
			if _, err := fs.Stat(path); err != nil {
				continue // removed with its directory above
			}
			if err := fs.RemoveAll(path); err != nil {
				return removed, fmt.Errorf("removing stale gen scratch store %s: %w; remove it by hand", path, err)
			}
			removed = append(removed, path)
			continue
		}
		if target, ok := GenTemp(path); !ok || fs.PathBase(target) != base {
			continue
		}
		if fi, err := fs.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		lock, err := meta.Lock(fs, path)
		if errors.Is(err, meta.ErrInUse) {
			continue // a gen of the same directory is running now
		}
		if err != nil {
			return removed, fmt.Errorf("stale gen directory %s: %w; remove it by hand", path, err)
		}
		// Under the lock, so no gen starts writing either meanwhile: the
		// directory and its scratch store (<path>.events), if any.
		rmErr := fs.RemoveAll(path + scratchSuffix)
		if rmErr == nil {
			rmErr = fs.RemoveAll(path)
		}
		_ = lock.Unlock() // its file is gone with the directory; this only closes it
		if rmErr != nil {
			return removed, fmt.Errorf("removing stale gen directory %s: %w; remove it by hand", path, rmErr)
		}
		removed = append(removed, path)
	}
	if len(removed) > 0 {
		if err := meta.SyncDir(fs, parent); err != nil {
			return removed, err
		}
	}
	return removed, nil
}
