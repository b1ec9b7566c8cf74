package reshard

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// The switch, its folders, the kept layout and the kept reports are
// package switchdir's; these are its names as reshard's callers see them.
const (
	KeptDirName    = switchdir.KeptDirName    // an old layout kept by --keep-old, until undone or removed
	ReportsDirName = switchdir.ReportsDirName // the kept reports, in the data directory
	KeepReports    = switchdir.KeepReports    // how many reports reshard-reports keeps
)

type (
	// Fingerprint identifies a layout (switchdir.Fingerprint).
	Fingerprint = switchdir.Fingerprint
	// LogPosition is a position in a shared log.
	LogPosition = switchdir.LogPosition
	// StoreFingerprint is one store's part of a Fingerprint.
	StoreFingerprint = switchdir.StoreFingerprint
	// KeptRecord is reshard.kept/kept.json.
	KeptRecord = switchdir.KeptRecord
	// KeptFile is one file of a kept layout.
	KeptFile = switchdir.KeptFile
	// KeptLayout is a kept old layout, as inspect shows it.
	KeptLayout = switchdir.KeptLayout
	// SwitchStateError is an interrupted switch whose new shards are not
	// the ones fusee.meta names.
	SwitchStateError = switchdir.SwitchStateError
)

// switchDir is r's directory as the switch sees it, with Testing.Step.
func (r *resharder) switchDir() switchdir.Dir {
	return switchdir.Dir{FS: r.fs, Path: r.dir, Step: hook}
}

// switcher is the switch of r's directory, locked as d.
func (r *resharder) switcher(d *metaDir) *switchdir.Switch {
	return &switchdir.Switch{Dir: r.switchDir(), Meta: d, Owner: r.owner, Upgrade: r.upgrade, ReportFile: r.rep.ReportFile}
}

// finishSwitch does the steps after fusee.meta says format=reshard (or,
// for an upgrade, format=upgrade; for an undo, the same steps from
// reshard.kept): switchdir.Switch.Finish, and the kept layout, if any,
// goes into the report.
func (r *resharder) finishSwitch(d *metaDir, newN int) error {
	s := r.switcher(d)
	err := s.Finish(newN)
	if s.Kept != "" {
		r.rep.Kept = s.Kept
	}
	return err
}

// writeMeta replaces fusee.meta and gives the new file the old one's owner
// and mode.
func (r *resharder) writeMeta(d *metaDir, m meta.Meta) error {
	return (&switchdir.Switch{Dir: r.switchDir(), Meta: d, Owner: r.owner}).WriteMeta(m)
}

// readReportName is the name a pending report was given (its report_file).
func readReportName(fs vfs.FS) func(string) (string, error) {
	return func(path string) (string, error) {
		h, err := readReportHead(fs, path)
		if err != nil {
			return "", err
		}
		return fs.PathBase(h.ReportFile), nil
	}
}
