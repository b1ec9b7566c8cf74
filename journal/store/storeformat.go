package store

import (
	"errors"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
)

// formatMarker is the name of pebble's marker of a store's format major
// version (formatVersionMarkerName in pebble's format_major_version.go,
// unexported): a file marker.format-version.<iteration>.<version> in the
// store's directory. TestNewStoreStartsAtItsFormat fails if pebble stops
// finding it.
const formatMarker = "format-version"

// openPebble is pebble.Open, with the directory of a store that o creates
// preset to the format it is created at (presetFormat). Every store fusee
// opens is opened here.
func openPebble(path string, o *pebble.Options) (*pebble.DB, error) {
	if err := presetFormat(o, path); err != nil {
		return nil, err
	}
	return pebble.Open(path, o)
}

// presetFormat readies the directory of a store that o may create
// (o.FormatMajorVersion set, neither read-only nor ErrorIfNotExists) so
// that pebble creates it at that version directly. Left to itself,
// pebble.Open creates a store at its oldest supported version and ratchets
// it up a version at a time (eleven steps to FormatNewest in pebble
// v2.1.7), each step a new marker file, the old one removed and the
// directory synced; on a store with no tables no step does anything else
// (each migration only moves the marker). With the marker already at the
// version wanted, pebble opens the directory as a store of that version
// with no manifest yet, creates the manifest and ratchets nothing: one
// marker file and one directory sync instead of eleven. A reshard creates
// a store per new shard, and on a file system where creating a file costs
// (ext4 without a journal looks for an inode not recently deleted, and
// every step deletes one) the ratchets were about 6% of a 100k-run 8->16
// reshard's CPU.
//
// Only a directory that does not exist yet, or is empty, is preset, and
// only when its parent exists: anything else (a store, a creation that
// failed half way, missing parents, which pebble makes and syncs) is left
// to pebble as before. pebble syncs the parent of the store's directory
// whether it made the directory or not.
func presetFormat(o *pebble.Options, path string) error {
	if o.ReadOnly || o.ErrorIfNotExists || o.FormatMajorVersion == pebble.FormatDefault {
		return nil
	}
	if _, err := o.FS.Stat(o.FS.PathDir(path)); err != nil {
		return nil
	}
	ls, err := o.FS.List(path)
	switch {
	case err == nil && len(ls) > 0:
		return nil
	case err != nil && !errors.Is(err, iofs.ErrNotExist):
		return err
	}
	if err := o.FS.MkdirAll(path, 0o755); err != nil {
		return err
	}
	m, _, err := atomicfs.LocateMarker(o.FS, path, formatMarker)
	if err != nil {
		return err
	}
	err = m.Move(o.FormatMajorVersion.String())
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	return err
}
