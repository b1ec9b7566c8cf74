package meta

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FileName is the identity file of a data directory.
const FileName = "fusee.meta"

// maxFileSize bounds what ReadAny reads: a real fusee.meta is well under
// a hundred bytes, so anything this large is some other file.
const maxFileSize = 64 << 10

// ReadAny reads and parses dir's fusee.meta on fs in any valid state,
// including a switch in progress. It does not take the lock; reshard,
// which finishes a switch, reads through Open with AllowSwitching instead.
func ReadAny(fs vfs.FS, dir string) (Meta, error) {
	path := fs.PathJoin(dir, FileName)
	f, err := fs.Open(path)
	if errors.Is(err, iofs.ErrNotExist) {
		if _, derr := fs.Stat(dir); derr != nil {
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

// Read reads dir's fusee.meta on fs for opening it: a directory whose
// reshard was interrupted is refused with a *SwitchingError (ErrSwitching).
func Read(fs vfs.FS, dir string) (Meta, error) {
	m, err := ReadAny(fs, dir)
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
	// AllowUpgrading accepts a directory whose upgrade was interrupted.
	// Only upgrade sets it, to finish the switch.
	AllowUpgrading bool
}

// Check applies opts to m, the meta of dir: the refusals every opener
// makes.
func Check(dir string, m Meta, opts Options) error {
	if m.Switching() && !opts.AllowSwitching {
		return &SwitchingError{Dir: dir, OldShards: m.OldShards, NewShards: m.NewShards}
	}
	if m.Upgrading() && !opts.AllowUpgrading {
		return &UpgradingError{Dir: dir}
	}
	if opts.Log != 0 && m.Log != opts.Log {
		return &LogError{Dir: dir, Have: m.Log, Want: opts.Log}
	}
	return nil
}

// writeFile replaces dir's fusee.meta with m through ReplaceFile,
// atomically and durably: readers see the old file or the new one, never a
// mix, and once it returns nil the new file survives a crash. The caller
// holds the lock.
func writeFile(fs vfs.FS, dir string, m Meta) error {
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	removeLeftovers(fs, dir)
	return ReplaceFile(fs, fs.PathJoin(dir, FileName), data)
}

// removeLeftovers deletes temporary files an earlier writer of
// fusee.meta left when it crashed between creating and renaming one.
func removeLeftovers(fs vfs.FS, dir string) { RemoveTempFiles(fs, dir, FileName) }

// RemoveTempFiles deletes the temporary files ReplaceFile leaves in dir
// when a crash stops it between creating and renaming one:
// ".<base>*", or with base "" every ".*.tmp*". The caller holds the
// lock that covers the files, so no writer is using them. Failures only
// leave litter, so they are ignored.
func RemoveTempFiles(fs vfs.FS, dir, base string) {
	names, err := fs.List(dir)
	if err != nil {
		return
	}
	for _, name := range names {
		if !isTempOf(name, base) {
			continue
		}
		path := fs.PathJoin(dir, name)
		if fi, err := fs.Stat(path); err == nil && fi.Mode().IsRegular() {
			_ = fs.Remove(path)
		}
	}
}

// isTempOf says whether name is one of ReplaceFile's temporary files for
// base (any base when base is "").
func isTempOf(name, base string) bool {
	if base != "" {
		return strings.HasPrefix(name, "."+base) // older writers' names too
	}
	return strings.HasPrefix(name, ".") && strings.Contains(name[1:], tempInfix)
}
