package reshard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// checkKeptWhole compares the kept layout's files with its record, before
// an undo changes anything.
func checkKeptWhole(fs vfs.FS, dir, kept string, rec *KeptRecord) error {
	have, err := switchdir.LayoutFiles(fs, kept)
	if err != nil {
		return &UndoError{Dir: dir, Kind: UndoKeptUnreadable, Reason: fmt.Sprintf("the kept layout cannot be read (%v)", err)}
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
	return &UndoError{Dir: dir, Kind: UndoKeptDamaged, Reason: "the kept layout is not whole (" + strings.Join(diffs, "; ") +
		"): part of it was removed or changed since the reshard kept it, and restoring it would not give the old directory back. The directory in place is the resharded one and opens as it is"}
}

// recordKept writes reshard.new/kept.json: the new layout's fingerprint
// (read from reshard.new with the fusee.meta it will get) and the old
// fusee.meta.
func (r *resharder) recordKept(ctx context.Context, newDir string) error {
	final, err := meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: r.newN}.Marshal()
	if err != nil {
		return err
	}
	fp, _, err := switchdir.ReadFingerprint(ctx, r.fs, newDir, r.newN, final)
	if err != nil {
		return fmt.Errorf("reading back the new layout: %w", err)
	}
	old, err := switchdir.ReadMetaBytes(r.fs, r.dir)
	if err != nil {
		return err
	}
	files, err := switchdir.LayoutFiles(r.fs, r.dir)
	if err != nil {
		return err
	}
	rec := KeptRecord{Version: switchdir.KeptVersion, OldShards: r.oldN, NewShards: r.newN, OldMeta: string(old), New: fp, Files: files,
		Report: r.fs.PathBase(r.rep.ReportFile)}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return meta.ReplaceFile(r.fs, r.fs.PathJoin(newDir, switchdir.KeptRecordName), append(data, '\n'))
}

// KeptError is a reshard refused because an old layout is kept: a second
// reshard would make it impossible to undo, so the operator chooses.
type KeptError struct{ Dir string }

func (e *KeptError) Error() string {
	return fmt.Sprintf("%s holds the layout kept by an earlier reshard (%s); undo that reshard, or remove the kept layout once you no longer need it, then run this reshard again; nothing was changed",
		e.Dir, KeptDirName)
}

// refuseOverKept refuses a reshard while a kept layout exists.
func refuseOverKept(fs vfs.FS, dir string) error {
	kept := fs.PathJoin(dir, KeptDirName)
	ok, err := switchdir.Exists(fs, kept)
	if err != nil || !ok {
		return err
	}
	return &KeptError{Dir: dir}
}
