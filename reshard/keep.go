package reshard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

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

// Names of a kept layout.
const (
	KeptDirName = "reshard.kept" // an old layout kept by --keep-old, until undone or removed
	keptRecord  = "kept.json"    // in reshard.new, then reshard.old, then reshard.kept
	undoMarker  = "UNDO"         // in reshard.kept: an undo began (undo.go)
)

// keptVersion is the version of kept.json.
const keptVersion = 1

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

// layoutFiles lists the files of the layout (wal/ and shards/) in root.
func layoutFiles(fs vfs.FS, root string) ([]KeptFile, error) {
	var out []KeptFile
	for _, top := range []string{"wal", "shards"} {
		if err := walkFiles(fs, root, top, func(rel string, size int64) error {
			out = append(out, KeptFile{Path: rel, Size: size})
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkKeptWhole compares the kept layout's files with its record, before
// an undo changes anything.
func checkKeptWhole(fs vfs.FS, dir, kept string, rec *KeptRecord) error {
	have, err := layoutFiles(fs, kept)
	if err != nil {
		return &UndoError{Dir: dir, Reason: fmt.Sprintf("the kept layout cannot be read (%v)", err)}
	}
	want := make(map[string]int64, len(rec.Files))
	for _, f := range rec.Files {
		want[f.Path] = f.Size
	}
	var diffs []string
	for _, f := range have {
		size, ok := want[f.Path]
		switch {
		case !ok:
			diffs = append(diffs, KeptDirName+"/"+f.Path+" was not kept by the reshard")
		case size != f.Size:
			diffs = append(diffs, fmt.Sprintf("%s/%s has %d bytes, not %d", KeptDirName, f.Path, f.Size, size))
		}
		delete(want, f.Path)
	}
	for _, f := range rec.Files {
		if _, missing := want[f.Path]; missing {
			diffs = append(diffs, KeptDirName+"/"+f.Path+" is missing")
		}
	}
	if len(rec.Files) == 0 {
		diffs = append(diffs, "its record lists no files")
	}
	if len(diffs) == 0 {
		return nil
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("%d more", len(diffs)-3))
	}
	return &UndoError{Dir: dir, Reason: "the kept layout is not whole (" + strings.Join(diffs, "; ") +
		"): part of it was removed or changed since the reshard kept it, and restoring it would not give the old directory back. The directory in place is the resharded one and opens as it is; remove the kept layout with `fusee reshard " +
		meta.ShellQuote(dir) + " --discard-kept`"}
}

// recordKept writes reshard.new/kept.json: the new layout's fingerprint
// (read from reshard.new with the fusee.meta it will get) and the old
// fusee.meta.
func (r *resharder) recordKept(ctx context.Context, newDir string) error {
	final, err := meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: r.newN}.Marshal()
	if err != nil {
		return err
	}
	fp, _, err := readFingerprint(ctx, r.fs, newDir, r.newN, final)
	if err != nil {
		return fmt.Errorf("reading back the new layout: %w", err)
	}
	old, err := readMetaBytes(r.fs, r.dir)
	if err != nil {
		return err
	}
	files, err := layoutFiles(r.fs, r.dir)
	if err != nil {
		return err
	}
	rec := KeptRecord{Version: keptVersion, OldShards: r.oldN, NewShards: r.newN, OldMeta: string(old), New: fp, Files: files,
		Report: r.fs.PathBase(r.rep.ReportFile)}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return meta.ReplaceFile(r.fs, r.fs.PathJoin(newDir, keptRecord), append(data, '\n'))
}

// keepOld runs after the new log and shards moved in: if the reshard
// keeps its old layout, the record moves from reshard.new to reshard.old,
// and reshard.old becomes reshard.kept. Either rename may already be done.
func (r *resharder) keepOld(src, oldDir string) error {
	fs, dir := r.fs, r.dir
	if src != fs.PathJoin(dir, NewDirName) {
		return nil // an undo keeps nothing
	}
	rec, aside := fs.PathJoin(src, keptRecord), fs.PathJoin(oldDir, keptRecord)
	if ok, err := exists(fs, rec); err != nil || ok {
		if err != nil {
			return err
		}
		if err := fs.MkdirAll(oldDir, 0o755); err != nil {
			return fmt.Errorf("keeping the old layout: %w", err)
		}
		if err := fs.Rename(rec, aside); err != nil {
			return fmt.Errorf("keeping the old layout: %w", err)
		}
		if err := meta.SyncDir(fs, oldDir); err != nil {
			return err
		}
		if err := meta.SyncDir(fs, src); err != nil {
			return err
		}
	}
	if ok, err := exists(fs, aside); err != nil || !ok {
		return err
	}
	kept := fs.PathJoin(dir, KeptDirName)
	if err := fs.Rename(oldDir, kept); err != nil {
		return fmt.Errorf("keeping the old layout as %s: %w", kept, err)
	}
	if err := hook("old-kept"); err != nil {
		return err
	}
	r.rep.Kept = kept
	return meta.SyncDir(fs, dir)
}

// switchSource is where the switch takes the layout it moves in from:
// reshard.kept during an undo (its marker says so), reshard.new otherwise.
func switchSource(fs vfs.FS, dir string) string {
	kept := fs.PathJoin(dir, KeptDirName)
	if ok, _ := exists(fs, fs.PathJoin(kept, undoMarker)); ok {
		return kept
	}
	return fs.PathJoin(dir, NewDirName)
}

// writeFinalMeta writes the fusee.meta that ends a switch: for an undo,
// the old file byte for byte; otherwise local with the new count.
func (r *resharder) writeFinalMeta(d *metaDir, src string, newN int) error {
	if src != r.fs.PathJoin(r.dir, KeptDirName) {
		return r.writeMeta(d, meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: newN})
	}
	rec, err := readKeptRecord(r.fs, src)
	if err != nil {
		return err
	}
	if err := d.WriteBytes([]byte(rec.OldMeta)); err != nil {
		return err
	}
	return r.owner.apply(r.fs.PathJoin(r.dir, meta.FileName))
}

// readKeptRecord reads and checks kept.json in the kept layout at path.
func readKeptRecord(fs vfs.FS, path string) (*KeptRecord, error) {
	name := fs.PathJoin(path, keptRecord)
	f, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the kept layout's record: %w", err)
	}
	defer f.Close()
	var rec KeptRecord
	if err := json.NewDecoder(f).Decode(&rec); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if rec.Version != keptVersion {
		return nil, fmt.Errorf("%s: version %d, this fusee reads version %d", name, rec.Version, keptVersion)
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

// keptLayoutDone reports whether reshard.kept is what an undo leaves when
// it finished but was stopped before removing it: no log and no shards
// left in it (with fusee.meta format=local, a kept layout has both, or
// neither).
func keptLayoutDone(fs vfs.FS, kept string) (bool, error) {
	for _, name := range []string{"wal", "shards"} {
		ok, err := exists(fs, fs.PathJoin(kept, name))
		if err != nil || ok {
			return false, err
		}
	}
	return true, nil
}

// leftovers are the paths a reshard (or undo) removes before it starts,
// with fusee.meta format=local: reshard.new of an attempt that never
// reached its switch, reshard.old of one that finished, and reshard.kept
// emptied by an undo that finished.
func leftovers(fs vfs.FS, dir string) []string {
	var out []string
	for _, name := range []string{NewDirName, OldDirName} {
		if ok, _ := exists(fs, fs.PathJoin(dir, name)); ok {
			out = append(out, fs.PathJoin(dir, name))
		}
	}
	kept := fs.PathJoin(dir, KeptDirName)
	if ok, _ := exists(fs, kept); ok {
		if done, _ := keptLayoutDone(fs, kept); done {
			out = append(out, kept)
		}
	}
	return out
}

// KeptError is a reshard refused because an old layout is kept: a second
// reshard would make it impossible to undo, so the operator chooses.
type KeptError struct{ Dir string }

func (e *KeptError) Error() string {
	return fmt.Sprintf("%s holds the layout kept by an earlier reshard (%s); undo that reshard with `fusee reshard %s --undo`, or remove the kept layout with `fusee reshard %s --discard-kept` once you no longer need it, then run this reshard again; nothing was changed",
		e.Dir, KeptDirName, meta.ShellQuote(e.Dir), meta.ShellQuote(e.Dir))
}

// refuseOverKept refuses a reshard while a kept layout exists.
func refuseOverKept(fs vfs.FS, dir string) error {
	kept := fs.PathJoin(dir, KeptDirName)
	ok, err := exists(fs, kept)
	if err != nil || !ok {
		return err
	}
	return &KeptError{Dir: dir}
}

func exists(fs vfs.FS, path string) (bool, error) {
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

// readKeptLayout describes dir's kept layout (nil if none, or if it is
// only the leftover of a finished undo).
func readKeptLayout(fs vfs.FS, dir string) (*KeptLayout, error) {
	kept := fs.PathJoin(dir, KeptDirName)
	if ok, err := exists(fs, kept); err != nil || !ok {
		return nil, err
	}
	if done, err := keptLayoutDone(fs, kept); err != nil || done {
		return nil, err
	}
	size, err := treeSize(fs, kept)
	if err != nil {
		return nil, err
	}
	rec, err := readKeptRecord(fs, kept)
	if err != nil {
		return &KeptLayout{Path: kept, Bytes: size, Damaged: err.Error()}, nil
	}
	undoing, err := exists(fs, fs.PathJoin(kept, undoMarker))
	if err != nil {
		return nil, err
	}
	return &KeptLayout{Path: kept, OldShards: rec.OldShards, NewShards: rec.NewShards, Bytes: size, Undoing: undoing}, nil
}
