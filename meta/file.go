package meta

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// FileName is the identity file of a data directory.
const FileName = "fusee.meta"

// maxFileSize bounds what ReadAny reads: a real fusee.meta is well under
// a hundred bytes, so anything this large is some other file.
const maxFileSize = 64 << 10

// ReadAny reads and parses dir's fusee.meta in any valid state, including
// a switch in progress. It does not take the lock; reshard, which finishes
// a switch, reads through Open with AllowSwitching instead.
func ReadAny(dir string) (Meta, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(dir); derr != nil {
			return Meta{}, fmt.Errorf("data directory %s: %w", dir, derr)
		}
		return Meta{}, fmt.Errorf("%s is not a fusee data directory: it has no %s: %w", dir, FileName, err)
	}
	if err != nil {
		return Meta{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return Meta{}, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return Meta{}, &FileError{Path: path, Msg: fmt.Sprintf("the file is over %d bytes, far larger than any fusee.meta; is this the right directory?", maxFileSize)}
	}
	return Parse(path, data)
}

// Read reads dir's fusee.meta for opening it: a directory whose reshard
// was interrupted is refused with a *SwitchingError (ErrSwitching).
func Read(dir string) (Meta, error) {
	m, err := ReadAny(dir)
	if err != nil {
		return Meta{}, err
	}
	if err := Check(dir, m, Options{}); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// Options say what an opener can handle.
type Options struct {
	// Log, when not zero, is the only log format the caller reads; any
	// other is a *LogError (ErrOldLog when the directory's is older).
	Log int
	// AllowSwitching accepts a directory whose reshard was interrupted.
	// Only reshard sets it, to finish the switch.
	AllowSwitching bool
}

// Check applies opts to m, the meta of dir: the refusals every opener
// makes.
func Check(dir string, m Meta, opts Options) error {
	if m.Switching() && !opts.AllowSwitching {
		return &SwitchingError{Dir: dir, OldShards: m.OldShards, NewShards: m.NewShards}
	}
	if opts.Log != 0 && m.Log != opts.Log {
		return &LogError{Dir: dir, Have: m.Log, Want: opts.Log}
	}
	return nil
}

// testHookBeforeRename, when set, runs after the temporary file is written
// and before it replaces fusee.meta; an error aborts the write. Tests use
// it to stop a write at that point.
var testHookBeforeRename func(tmpPath string) error

// writeFile replaces dir's fusee.meta with m, atomically and durably:
// readers see the old file or the new one, never a mix, and once it
// returns nil the new file survives a crash. The caller holds the lock.
func writeFile(dir string, m Meta) error {
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	removeLeftovers(dir)
	path := filepath.Join(dir, FileName)
	// The temporary file goes in dir itself, not $TMPDIR, so the rename
	// stays within one directory and one fsync of it covers both names.
	pf, err := renameio.NewPendingFile(path, renameio.WithTempDir(dir), renameio.WithPermissions(0o644), renameio.WithExistingPermissions())
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if testHookBeforeRename != nil {
		if err := testHookBeforeRename(pf.Name()); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	// CloseAtomicallyReplace fsyncs the file and renames it, but does not
	// fsync the directory: without that the rename may not survive a
	// crash, and the old file would come back.
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// removeLeftovers deletes temporary files an earlier writer left when it
// crashed between creating and renaming one. The caller holds the lock, so
// no writer is using them. Failures only leave litter, so they are ignored.
func removeLeftovers(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, "."+FileName) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}

// syncDir fsyncs a directory so the entries just created or renamed in it
// are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return d.Close()
}
