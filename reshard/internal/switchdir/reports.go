package switchdir

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// Names of the kept reports.
const (
	ReportsDirName    = "reshard-reports" // in the data directory
	ReportInSource    = "report.json"     // in reshard.new (or reshard.kept, for an undo) until the switch
	PendingReportName = "pending.json"    // in reshard-reports: carried in, not yet given its name
)

// KeepReports is how many reports reshard-reports keeps: the oldest go
// when a new one is added (never one that a kept layout's undo needs).
const KeepReports = 10

// reportNamePattern matches the names reports are kept under.
var reportNamePattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[a-z0-9-]+\.json$`)

// reportStamp is the time part of a report's name: UTC to the
// millisecond, so that names sort by time.
const reportStamp = "20060102T150405.000Z"

// NewReportName is the name the report of an operation (what: e.g.
// "3-to-5", "undo-5-to-3", "upgrade-4-shards") gets in dir's
// reshard-reports: its time, made later than every kept report's (a clock
// set back, or two in one millisecond, must not make "the latest" an
// older one), and what it is.
func NewReportName(fs vfs.FS, dir, what string, now time.Time) string {
	at := now.UTC()
	if names, err := ReportNames(fs, dir); err == nil && len(names) > 0 {
		last, err := time.Parse(reportStamp, strings.SplitN(names[len(names)-1], "-", 2)[0])
		if err == nil && !at.After(last) {
			at = last.Add(time.Millisecond)
		}
	}
	return at.Format(reportStamp) + "-" + what + ".json"
}

// carryReport moves the report from the switch's source (src/report.json)
// into reshard-reports/pending.json, if it is still in src. It runs once
// the new layout is in place and before the final fusee.meta.
func (d Dir) carryReport(src string) error {
	fs, dir := d.FS, d.Path
	from := fs.PathJoin(src, ReportInSource)
	if ok, err := Exists(fs, from); err != nil || !ok {
		return err
	}
	reports := fs.PathJoin(dir, ReportsDirName)
	if err := fs.MkdirAll(reports, 0o755); err != nil {
		return fmt.Errorf("switching: %w", err)
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return err
	}
	if err := fs.Rename(from, fs.PathJoin(reports, PendingReportName)); err != nil {
		return fmt.Errorf("switching: moving the report into %s: %w", reports, err)
	}
	if err := d.Hook("report-carried"); err != nil {
		return err
	}
	if err := meta.SyncDir(fs, reports); err != nil {
		return err
	}
	return meta.SyncDir(fs, src)
}

// ReportPath is where the report of the switch being finished is:
// still in its source, or carried in and pending ("" if neither: a switch
// begun by a fusee that kept no reports).
func ReportPath(fs vfs.FS, dir, src string) string {
	for _, p := range []string{fs.PathJoin(src, ReportInSource), fs.PathJoin(dir, ReportsDirName, PendingReportName)} {
		if FileExists(fs, p) {
			return p
		}
	}
	return ""
}

// PendingReport is reshard-reports/pending.json if it is there: a
// switch finished and its cleanup did not ("" otherwise).
func PendingReport(fs vfs.FS, dir string) string {
	p := fs.PathJoin(dir, ReportsDirName, PendingReportName)
	if FileExists(fs, p) {
		return p
	}
	return ""
}

// FinishReport gives the pending report its name (the one in its
// report_file), then drops the oldest reports beyond KeepReports, and
// removes report temporary files that a crash left. It runs after the
// switch's leftovers are gone; name is the report's name when the caller
// knows it ("": readName reads it from the pending report).
func (d Dir) FinishReport(name string, readName func(pending string) (string, error)) error {
	fs, dir := d.FS, d.Path
	reports := fs.PathJoin(dir, ReportsDirName)
	pending := fs.PathJoin(reports, PendingReportName)
	if ok, err := Exists(fs, pending); err != nil || !ok {
		return err
	}
	if name == "" {
		var err error
		if name, err = readName(pending); err != nil {
			return err
		}
	}
	if !reportNamePattern.MatchString(name) {
		return fmt.Errorf("%s: its report_file names %q, not a report's name; was it edited?", pending, name)
	}
	if err := fs.Rename(pending, fs.PathJoin(reports, name)); err != nil {
		return fmt.Errorf("naming the report %s: %w", fs.PathJoin(reports, name), err)
	}
	if err := d.Hook("report-named"); err != nil {
		return err
	}
	if err := PruneReports(fs, dir); err != nil {
		return err
	}
	return meta.SyncDir(fs, reports)
}

// PruneReports removes the oldest kept reports beyond KeepReports, never
// the one a kept layout's undo needs, and stray temporary files. The
// caller syncs the folder.
func PruneReports(fs vfs.FS, dir string) error {
	reports := fs.PathJoin(dir, ReportsDirName)
	names, err := ReportNames(fs, dir)
	if err != nil {
		return err
	}
	protect := ""
	if rec, err := ReadKeptRecord(fs, fs.PathJoin(dir, KeptDirName)); err == nil {
		protect = rec.Report
	}
	for len(names) > KeepReports {
		if names[0] != protect {
			if err := fs.Remove(fs.PathJoin(reports, names[0])); err != nil {
				return fmt.Errorf("removing the old report %s: %w", fs.PathJoin(reports, names[0]), err)
			}
		}
		names = names[1:]
	}
	meta.RemoveTempFiles(fs, reports, "")
	return nil
}

// ReportNames lists the kept reports' names, oldest first.
func ReportNames(fs vfs.FS, dir string) ([]string, error) {
	all, err := fs.List(fs.PathJoin(dir, ReportsDirName))
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fs.PathJoin(dir, ReportsDirName), err)
	}
	var names []string
	for _, n := range all {
		if reportNamePattern.MatchString(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// InFlightReport is the report of a switch that began and whose cleanup
// has not finished: pending in reshard-reports, or, while fusee.meta says
// the switch is under way, still in the switch's source ("" if none).
func InFlightReport(fs vfs.FS, dir string) string {
	if p := PendingReport(fs, dir); p != "" {
		return p
	}
	if m, err := meta.ReadAny(fs, dir); err == nil && (m.Switching() || m.Upgrading()) {
		return ReportPath(fs, dir, Source(fs, dir))
	}
	return ""
}
