package switchdir

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Keeping the old layout (docs/reshard.md §11).
//
// With KeepOld, a reshard writes a record of the layout it built
// (reshard.new/kept.json: the old fusee.meta's bytes and the new layout's
// fingerprint) before its point of no return. The switch moves the old
// log and shards into reshard.old as always; then, if the record is
// there, it joins them and reshard.old is renamed reshard.kept, before the
// final fusee.meta. So once fusee.meta is format=local again, the old
// layout is either kept whole or (without KeepOld) in reshard.old, which
// is deleted; each step is a rename that a rerun repeats or skips.

// Names inside a data directory while a switch is under way, and of a
// kept layout.
const (
	NewDirName     = "reshard.new"  // the new shards and log, built before the switch
	OldDirName     = "reshard.old"  // the old shards and log, moved aside during the switch
	KeptDirName    = "reshard.kept" // an old layout kept by --keep-old, until undone or removed
	KeptRecordName = "kept.json"    // in reshard.new, then reshard.old, then reshard.kept
	UndoMarker     = "UNDO"         // in reshard.kept: an undo began (reshard/undo.go)
)

// KeptVersion is the version of kept.json.
const KeptVersion = 1

// KeptRecord is reshard.kept/kept.json: what Undo needs to restore the
// kept layout and to know that nothing changed since.
type KeptRecord struct {
	Version   int `json:"kept_version"`
	OldShards int `json:"old_shards"`
	NewShards int `json:"new_shards"`
	// OldMeta is the old fusee.meta, byte for byte.
	OldMeta string `json:"old_meta"`
	// New is the fingerprint of the layout the reshard wrote.
	New Fingerprint `json:"new"`
	// Files are the kept layout's files (under wal/ and shards/), with
	// their sizes, as the reshard moved them aside. Undo refuses a kept
	// layout that lacks one, has another or one of another size (part of
	// it removed by hand, or by a removal a crash cut short): restoring it
	// would not give the old directory back.
	Files []KeptFile `json:"files"`
	// Report is the name of the reshard's report in reshard-reports: an
	// undo's report is it reversed ("" in a layout kept by a fusee that
	// kept no reports).
	Report string `json:"report,omitempty"`
}

// KeptFile is one file of a kept layout: its path under the layout, with
// '/' between names, and its size.
type KeptFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// LayoutFiles lists the files of the layout (wal/ and shards/) in root.
func LayoutFiles(fs vfs.FS, root string) ([]KeptFile, error) {
	var out []KeptFile
	for _, top := range []string{"wal", "shards"} {
		if err := WalkFiles(fs, root, top, func(rel string, size int64) error {
			out = append(out, KeptFile{Path: rel, Size: size})
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Source is where the switch takes the layout it moves in from:
// reshard.kept during an undo (its marker says so), reshard.new otherwise.
func Source(fs vfs.FS, dir string) string {
	kept := fs.PathJoin(dir, KeptDirName)
	if ok, _ := Exists(fs, fs.PathJoin(kept, UndoMarker)); ok {
		return kept
	}
	return fs.PathJoin(dir, NewDirName)
}

// ReadKeptRecord reads and checks kept.json in the kept layout at path.
func ReadKeptRecord(fs vfs.FS, path string) (*KeptRecord, error) {
	name := fs.PathJoin(path, KeptRecordName)
	f, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the kept layout's record: %w", err)
	}
	defer f.Close()
	var rec KeptRecord
	if err := json.NewDecoder(f).Decode(&rec); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if rec.Version != KeptVersion {
		return nil, fmt.Errorf("%s: version %d, this fusee reads version %d", name, rec.Version, KeptVersion)
	}
	m, err := meta.Parse(name+" (old_meta)", []byte(rec.OldMeta))
	if err != nil {
		return nil, err
	}
	if m.Switching() || m.Shards != rec.OldShards || rec.New.Shards != rec.NewShards {
		return nil, fmt.Errorf("%s: inconsistent record (%d to %d shards)", name, rec.OldShards, rec.NewShards)
	}
	return &rec, nil
}

// KeptLayoutDone reports whether reshard.kept is what an undo leaves when
// it finished but was stopped before removing it: no log and no shards
// left in it (with fusee.meta format=local, a kept layout has both, or
// neither).
func KeptLayoutDone(fs vfs.FS, kept string) (bool, error) {
	for _, name := range []string{"wal", "shards"} {
		ok, err := Exists(fs, fs.PathJoin(kept, name))
		if err != nil || ok {
			return false, err
		}
	}
	return true, nil
}

// Leftovers are the paths a reshard (or undo) removes before it starts,
// with fusee.meta format=local: reshard.new of an attempt that never
// reached its switch, reshard.old of one that finished, and reshard.kept
// emptied by an undo that finished.
func Leftovers(fs vfs.FS, dir string) []string {
	var out []string
	for _, name := range []string{NewDirName, OldDirName} {
		if ok, _ := Exists(fs, fs.PathJoin(dir, name)); ok {
			out = append(out, fs.PathJoin(dir, name))
		}
	}
	kept := fs.PathJoin(dir, KeptDirName)
	if ok, _ := Exists(fs, kept); ok {
		if done, _ := KeptLayoutDone(fs, kept); done {
			out = append(out, kept)
		}
	}
	return out
}

// Exists says whether path exists; an error other than its absence is
// returned.
func Exists(fs vfs.FS, path string) (bool, error) {
	_, err := fs.Stat(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	return true, nil
}

// KeptLayout is a kept old layout, as inspect shows it.
type KeptLayout struct {
	Path      string `json:"path"`
	OldShards int    `json:"old_shards"` // its count, which undo restores
	NewShards int    `json:"new_shards"` // the count that replaced it
	Bytes     int64  `json:"bytes"`
	// Undoing says an undo began and stopped before its switch (the
	// layout in place is unchanged; run the undo again).
	Undoing bool `json:"undoing,omitempty"`
	// Damaged says why the kept layout cannot be undone (its record
	// unreadable: part of it removed by hand, say); "" when it can be.
	Damaged string `json:"damaged,omitempty"`
	// UndoBlocked, when set (by a caller that ran CheckUndo), says why
	// an undo would be refused now; "" when it would go ahead or was not
	// checked.
	UndoBlocked string `json:"undo_blocked,omitempty"`
}

// ReadKeptLayout describes dir's kept layout (nil if none, or if it is
// only the leftover of a finished undo).
func ReadKeptLayout(fs vfs.FS, dir string) (*KeptLayout, error) {
	kept := fs.PathJoin(dir, KeptDirName)
	if ok, err := Exists(fs, kept); err != nil || !ok {
		return nil, err
	}
	if done, err := KeptLayoutDone(fs, kept); err != nil || done {
		return nil, err
	}
	size, err := TreeSize(fs, kept)
	if err != nil {
		return nil, err
	}
	rec, err := ReadKeptRecord(fs, kept)
	if err != nil {
		return &KeptLayout{Path: kept, Bytes: size, Damaged: err.Error()}, nil
	}
	undoing, err := Exists(fs, fs.PathJoin(kept, UndoMarker))
	if err != nil {
		return nil, err
	}
	return &KeptLayout{Path: kept, OldShards: rec.OldShards, NewShards: rec.NewShards, Bytes: size, Undoing: undoing}, nil
}

// Keeps says whether the switch being finished in dir keeps its old
// layout (its record is in reshard.new or reshard.old, or the layout is
// kept already).
func Keeps(fs vfs.FS, dir string) bool {
	for _, p := range []string{fs.PathJoin(dir, NewDirName, KeptRecordName), fs.PathJoin(dir, OldDirName, KeptRecordName), fs.PathJoin(dir, KeptDirName, KeptRecordName)} {
		if FileExists(fs, p) {
			return true
		}
	}
	return false
}
