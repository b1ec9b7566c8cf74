package switchdir

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/meta"
)

// A Switch moves a built layout in place of a directory's own (docs/reshard.md §7):
// the steps after fusee.meta says the switch began, each one repeatable,
// so that a rerun after a crash anywhere finishes it.
type Switch struct {
	Dir
	// Meta is the directory's fusee.meta, locked.
	Meta *meta.Dir
	// Owner is what the files the switch writes get (nil: not on the disk).
	Owner *Owner
	// Upgrade says the switch is an upgrade's (its new shards must be
	// rebuilt ones, with the same count).
	Upgrade bool
	// ReportFile is the report's path in reshard-reports: the pending
	// report is given its base name at the end.
	ReportFile string
	// Kept is set, once the old layout is kept, to its path.
	Kept string
}

// WriteMeta replaces fusee.meta and gives the new file the old one's
// owner and mode.
func (s *Switch) WriteMeta(m meta.Meta) error {
	if err := s.Meta.Write(m); err != nil {
		return err
	}
	return s.Owner.Apply(s.FS.PathJoin(s.Path, meta.FileName))
}

// Finish does the steps after fusee.meta says format=reshard (or,
// for an upgrade, format=upgrade). Every step can be repeated, so a rerun
// after a crash anywhere here finishes the job: the old log and shards
// (where still in place) move to reshard.old, then the new ones (where
// still in reshard.new) move in; the report moves into reshard-reports
// (pending); then the final fusee.meta; then reshard.old and reshard.new
// are deleted and the report gets its name (reshard/reportstore.go).
//
// An undo (reshard/undo.go) goes through the same steps with reshard.kept in
// place of reshard.new; a reshard with KeepOld moves reshard.old to
// reshard.kept before the final fusee.meta (keep.go).
func (s *Switch) Finish(newN int) error {
	fs, dir := s.FS, s.Path
	src, oldDir := Source(fs, dir), fs.PathJoin(dir, OldDirName)
	if err := checkNewShards(fs, dir, src, newN, s.Upgrade); err != nil {
		return err
	}
	// As seed 004 orders it: every old component aside, then every new
	// one in. Per component the state stays unambiguous: while src/X
	// exists the new X is not in, and X in place is the old one unless
	// reshard.old/X exists too (then it is a second copy: moveAside).
	for _, name := range LayoutNames {
		if err := s.moveAside(src, oldDir, name); err != nil {
			return err
		}
	}
	for _, name := range LayoutNames {
		if err := s.moveIn(src, name); err != nil {
			return err
		}
	}
	if err := s.keepOld(src, oldDir); err != nil {
		return err
	}
	if err := s.carryReport(src); err != nil {
		return err
	}
	// reshard-reports gets the data directory's owner and mode, as every
	// file a switch moves in.
	if err := s.Owner.Apply(s.FS.PathJoin(s.Path, ReportsDirName)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	if err := s.writeFinalMeta(src, newN); err != nil {
		return err
	}
	if err := s.Hook("meta-final"); err != nil {
		return err
	}
	for _, left := range []string{oldDir, src} {
		if err := fs.RemoveAll(left); err != nil {
			return fmt.Errorf("removing %s: %w", left, err)
		}
	}
	meta.RemoveTempFiles(fs, dir, meta.FileName)
	if err := meta.SyncDir(fs, dir); err != nil {
		return err
	}
	return s.FinishReport(fs.PathBase(s.ReportFile), nil)
}

// LayoutNames are the components of the engine's layout a switch moves,
// in the order it moves them.
var LayoutNames = []string{"wal", "shards"}

// moveAside moves the old component name to reshard.old, unless the new
// one is in already (src/name is gone) or the old one is aside already.
func (s *Switch) moveAside(src, oldDir, name string) error {
	fs, dir := s.FS, s.Path
	if _, err := fs.Stat(fs.PathJoin(src, name)); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil // already moved in
		}
		return fmt.Errorf("switching: %w", err)
	}
	cur, aside := fs.PathJoin(dir, name), fs.PathJoin(oldDir, name)
	if _, err := fs.Stat(cur); err != nil {
		return nil // aside already
	}
	if FileExists(fs, aside) {
		// The old X is aside already (reshard.old was synced right
		// after it moved). X is a second copy that a power cut left
		// where each directory keeps only what was synced in it: of
		// the old X (its removal here not yet synced) or of the new
		// one (its removal from the source not yet synced). Either
		// way it goes; moving it aside would replace the old X, which
		// a kept layout needs.
		if err := fs.RemoveAll(cur); err != nil {
			return fmt.Errorf("switching: removing a second copy of %s: %w", name, err)
		}
		return meta.SyncDir(fs, dir)
	}
	if err := fs.MkdirAll(oldDir, 0o755); err != nil {
		return fmt.Errorf("switching: %w", err)
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return err
	}
	if err := fs.Rename(cur, aside); err != nil {
		return fmt.Errorf("switching: moving the old %s aside: %w", name, err)
	}
	if err := s.Hook("old-" + name + "-aside"); err != nil {
		return err
	}
	if err := meta.SyncDir(fs, oldDir); err != nil {
		return err
	}
	return meta.SyncDir(fs, dir)
}

// moveIn moves the new component name from src into place, unless it is
// in already.
func (s *Switch) moveIn(src, name string) error {
	fs, dir := s.FS, s.Path
	from := fs.PathJoin(src, name)
	if _, err := fs.Stat(from); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil // already moved in
		}
		return fmt.Errorf("switching: %w", err)
	}
	if err := fs.Rename(from, fs.PathJoin(dir, name)); err != nil {
		return fmt.Errorf("switching: moving the new %s in: %w", name, err)
	}
	if err := s.Hook("new-" + name + "-in"); err != nil {
		return err
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return err
	}
	return meta.SyncDir(fs, src)
}

// SwitchStateError is an interrupted switch whose new shards are not the
// ones fusee.meta names: finishing it would give the directory the wrong
// shards, so nothing is done.
type SwitchStateError struct {
	Dir     string
	Shards  int    // new_shards in fusee.meta (an upgrade's: shards)
	Where   string // where the new shards should be
	Err     error
	Upgrade bool // the interrupted switch is an upgrade's
}

func (e *SwitchStateError) Error() string {
	what := fmt.Sprintf("a reshard to %d shards", e.Shards)
	if e.Upgrade {
		what = fmt.Sprintf("an upgrade of %d shards to log format %d", e.Shards, meta.LogShared)
	}
	return fmt.Sprintf("%s: fusee.meta says %s was interrupted, but %s does not hold %d new shards (%v); refusing to finish it, nothing was changed: was fusee.meta or reshard.new changed by hand? Restore the directory from a backup",
		e.Dir, what, e.Where, e.Shards, e.Err)
}

func (e *SwitchStateError) Unwrap() error { return e.Err }

// checkNewShards makes sure that the shards the switch moves in (still in
// reshard.new, or already moved in) are newN shards of a newN-shard
// directory, before anything is moved. For an upgrade, whose old shards
// have the same count, they must also be rebuilt ones: no per-shard log
// beside a store, and a checkpoint at LSN 0 of a shared log.
func checkNewShards(fs vfs.FS, dir, newDir string, newN int, upgrade bool) error {
	base := newDir
	if _, err := fs.Stat(fs.PathJoin(base, "shards")); err != nil {
		base = dir
	}
	where := fs.PathJoin(base, "shards")
	fail := func(err error) error {
		return &SwitchStateError{Dir: dir, Shards: newN, Where: where, Err: err, Upgrade: upgrade}
	}
	// The switch must not stop half way: no context to cancel it.
	headers, err := store.ReadHeaders(context.Background(), fs, base, newN)
	if err != nil {
		return fail(err)
	}
	for j, h := range headers {
		if !upgrade {
			break // a reshard's new shards need only a header each
		}
		if old := wal.ShardLogDir(fs, base, j); FileExists(fs, old) {
			return fail(fmt.Errorf("%s is a log format 2 shard's log", old))
		}
		if h.LSN != 0 || h.Log.Segment == 0 {
			return fail(fmt.Errorf("shard %d's checkpoint is at LSN %d, log position %v: not a store rebuilt for a new shared log", j, h.LSN, h.Log))
		}
	}
	if extra := store.ShardDir(fs, base, newN); FileExists(fs, extra) {
		return fail(fmt.Errorf("it has a shard %d as well", newN))
	}
	return nil
}

// FileExists says whether path can be stat'ed.
func FileExists(fs vfs.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil
}

// keepOld runs after the new log and shards moved in: if the reshard
// keeps its old layout, the record moves from reshard.new to reshard.old,
// and reshard.old becomes reshard.kept. Either rename may already be done.
func (s *Switch) keepOld(src, oldDir string) error {
	fs, dir := s.FS, s.Path
	if src != fs.PathJoin(dir, NewDirName) {
		return nil // an undo keeps nothing
	}
	rec, aside := fs.PathJoin(src, KeptRecordName), fs.PathJoin(oldDir, KeptRecordName)
	if ok, err := Exists(fs, rec); err != nil || ok {
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
	if ok, err := Exists(fs, aside); err != nil || !ok {
		return err
	}
	kept := fs.PathJoin(dir, KeptDirName)
	if err := fs.Rename(oldDir, kept); err != nil {
		return fmt.Errorf("keeping the old layout as %s: %w", kept, err)
	}
	if err := s.Hook("old-kept"); err != nil {
		return err
	}
	s.Kept = kept
	return meta.SyncDir(fs, dir)
}

// writeFinalMeta writes the fusee.meta that ends a switch: for an undo,
// the old file byte for byte; otherwise local with the new count.
func (s *Switch) writeFinalMeta(src string, newN int) error {
	if src != s.FS.PathJoin(s.Path, KeptDirName) {
		return s.WriteMeta(meta.Meta{Format: meta.FormatLocal, Log: meta.LogShared, Shards: newN})
	}
	rec, err := ReadKeptRecord(s.FS, src)
	if err != nil {
		return err
	}
	if err := s.Meta.WriteBytes([]byte(rec.OldMeta)); err != nil {
		return err
	}
	return s.Owner.Apply(s.FS.PathJoin(s.Path, meta.FileName))
}
