package reshard

import (
	"bufio"
	"encoding/json"
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

// The kept reports (docs/reshard.md §9).
//
// A report is data: once the old layout is gone, its token changes and
// renumbered runs cannot be computed again. So a reshard (upgrade, undo)
// writes its whole report, synced, into the layout it switches to before
// its point of no return (reshard.new/report.json; an undo's
// reshard.kept/report.json), and the switch carries it, like the log and
// the shards, into the directory's history:
//
//	src/report.json -> reshard-reports/pending.json   before the final fusee.meta
//	reshard-reports/pending.json -> reshard-reports/<name>  after the leftovers are gone
//
// A finishing run reads the report from wherever the crash left it, so it
// prints and keeps the report the interrupted run would have. A pending
// report with fusee.meta format=local says that a switch finished and its
// cleanup did not. The folder is not part of the engine's layout:
// verify, dump and the engine ignore it; undo leaves it as it is.

// Names of the kept reports.
const (
	ReportsDirName = "reshard-reports" // in the data directory
	reportInSource = "report.json"     // in reshard.new (or reshard.kept, for an undo) until the switch
	pendingReport  = "pending.json"    // in reshard-reports: carried in, not yet given its name
)

// KeepReports is how many reports reshard-reports keeps: the oldest go
// when a new one is added (never one that a kept layout's undo needs).
const KeepReports = 10

// reportNamePattern matches the names reports are kept under.
var reportNamePattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[a-z0-9-]+\.json$`)

// reportStamp is the time part of a report's name: UTC to the
// millisecond, so that names sort by time.
const reportStamp = "20060102T150405.000Z"

// newReportName is the name the report of an operation (what: e.g.
// "3-to-5", "undo-5-to-3", "upgrade-4-shards") gets in dir's
// reshard-reports: its time, made later than every kept report's (a clock
// set back, or two in one millisecond, must not make "the latest" an
// older one), and what it is.
func newReportName(fs vfs.FS, dir, what string, now time.Time) string {
	at := now.UTC()
	if names, err := reportNames(fs, dir); err == nil && len(names) > 0 {
		last, err := time.Parse(reportStamp, strings.SplitN(names[len(names)-1], "-", 2)[0])
		if err == nil && !at.After(last) {
			at = last.Add(time.Millisecond)
		}
	}
	return at.Format(reportStamp) + "-" + what + ".json"
}

// reportWhat is the part of a report's name that says what it is.
func (r *resharder) reportWhat() string {
	if r.upgrade {
		return fmt.Sprintf("upgrade-%d-shards", r.newN)
	}
	return fmt.Sprintf("%d-to-%d", r.oldN, r.newN)
}

// writeSourceReport writes r.rep, whole and synced, as src/report.json:
// the report as the switch will carry it into reshard-reports (outcome
// done or undone, no switch phase yet).
func (r *resharder) writeSourceReport(src string) error {
	if err := meta.ReplaceFileWith(r.fs, r.fs.PathJoin(src, reportInSource), r.rep.WriteJSON); err != nil {
		return fmt.Errorf("keeping the report before the switch: %w", err)
	}
	return nil
}

// carryReport moves the report from the switch's source (src/report.json)
// into reshard-reports/pending.json, if it is still in src. It runs once
// the new layout is in place and before the final fusee.meta.
func carryReport(fs vfs.FS, dir, src string) error {
	from := fs.PathJoin(src, reportInSource)
	if ok, err := exists(fs, from); err != nil || !ok {
		return err
	}
	reports := fs.PathJoin(dir, ReportsDirName)
	if err := fs.MkdirAll(reports, 0o755); err != nil {
		return fmt.Errorf("switching: %w", err)
	}
	if err := meta.SyncDir(fs, dir); err != nil {
		return err
	}
	if err := fs.Rename(from, fs.PathJoin(reports, pendingReport)); err != nil {
		return fmt.Errorf("switching: moving the report into %s: %w", reports, err)
	}
	if err := hook("report-carried"); err != nil {
		return err
	}
	if err := meta.SyncDir(fs, reports); err != nil {
		return err
	}
	return meta.SyncDir(fs, src)
}

// switchReportPath is where the report of the switch being finished is:
// still in its source, or carried in and pending ("" if neither: a switch
// begun by a fusee that kept no reports).
func switchReportPath(fs vfs.FS, dir, src string) string {
	for _, p := range []string{fs.PathJoin(src, reportInSource), fs.PathJoin(dir, ReportsDirName, pendingReport)} {
		if fileExists(fs, p) {
			return p
		}
	}
	return ""
}

// pendingReportPath is reshard-reports/pending.json if it is there: a
// switch finished and its cleanup did not ("" otherwise).
func pendingReportPath(fs vfs.FS, dir string) string {
	p := fs.PathJoin(dir, ReportsDirName, pendingReport)
	if fileExists(fs, p) {
		return p
	}
	return ""
}

// finishReport gives the pending report its name (the one in its
// report_file), then drops the oldest reports beyond KeepReports, and
// removes report temporary files that a crash left. It runs after the
// switch's leftovers are gone; name is the report's name when the caller
// knows it ("": read it from the pending report).
func finishReport(fs vfs.FS, dir, name string) error {
	reports := fs.PathJoin(dir, ReportsDirName)
	pending := fs.PathJoin(reports, pendingReport)
	if ok, err := exists(fs, pending); err != nil || !ok {
		return err
	}
	if name == "" {
		h, err := readReportHead(fs, pending)
		if err != nil {
			return err
		}
		name = fs.PathBase(h.ReportFile)
	}
	if !reportNamePattern.MatchString(name) {
		return fmt.Errorf("%s: its report_file names %q, not a report's name; was it edited?", pending, name)
	}
	if err := fs.Rename(pending, fs.PathJoin(reports, name)); err != nil {
		return fmt.Errorf("naming the report %s: %w", fs.PathJoin(reports, name), err)
	}
	if err := hook("report-named"); err != nil {
		return err
	}
	if err := pruneReports(fs, dir); err != nil {
		return err
	}
	return meta.SyncDir(fs, reports)
}

// pruneReports removes the oldest kept reports beyond KeepReports, never
// the one a kept layout's undo needs, and stray temporary files. The
// caller syncs the folder.
func pruneReports(fs vfs.FS, dir string) error {
	reports := fs.PathJoin(dir, ReportsDirName)
	names, err := reportNames(fs, dir)
	if err != nil {
		return err
	}
	protect := ""
	if rec, err := readKeptRecord(fs, fs.PathJoin(dir, KeptDirName)); err == nil {
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

// reportNames lists the kept reports' names, oldest first.
func reportNames(fs vfs.FS, dir string) ([]string, error) {
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

// KeptReport is one report in a data directory's reshard-reports, as
// inspect lists it.
type KeptReport struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	// Pending: carried in by a switch whose cleanup has not finished
	// (the next `fusee reshard <dir>` names it).
	Pending bool `json:"pending,omitempty"`
}

// ListReports lists dir's kept reports, oldest first (a pending one
// last). It reads only names and sizes.
func ListReports(fs vfs.FS, dir string) ([]KeptReport, error) {
	names, err := reportNames(fs, dir)
	if err != nil {
		return nil, err
	}
	if fileExists(fs, fs.PathJoin(dir, ReportsDirName, pendingReport)) {
		names = append(names, pendingReport)
	}
	out := make([]KeptReport, 0, len(names))
	for _, n := range names {
		p := fs.PathJoin(dir, ReportsDirName, n)
		st, err := fs.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		out = append(out, KeptReport{Path: p, Bytes: st.Size(), Pending: n == pendingReport})
	}
	return out, nil
}

// ReportNotFoundError is a kept report asked for that is not there.
type ReportNotFoundError struct {
	Dir, Name string
}

func (e *ReportNotFoundError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("%s keeps no reshard report (%s is empty or missing): no reshard, upgrade or undo has finished here since fusee began keeping them", e.Dir, ReportsDirName)
	}
	return fmt.Sprintf("%s keeps no report %q in %s", e.Dir, e.Name, ReportsDirName)
}

// OpenReport reads a kept report of dir: name is its file name in
// reshard-reports (or a path to it), "" for the latest (the report of a
// switch that has not finished, or whose cleanup has not, first). Its lists spill under scratch past their share of budget, as a
// reshard's do; Close it when done.
func OpenReport(fs vfs.FS, dir, name, scratch string, budget int64) (*Report, error) {
	path := ""
	switch {
	case name == "":
		if p := inFlightReport(fs, dir); p != "" {
			path = p
			break
		}
		names, err := reportNames(fs, dir)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, &ReportNotFoundError{Dir: dir}
		}
		path = fs.PathJoin(dir, ReportsDirName, names[len(names)-1])
	default:
		path = fs.PathJoin(dir, ReportsDirName, fs.PathBase(name))
		if !fileExists(fs, path) {
			return nil, &ReportNotFoundError{Dir: dir, Name: fs.PathBase(name)}
		}
	}
	return readReport(fs, path, scratch, budget)
}

// readReport reads a report that WriteJSON wrote, its lists an element at
// a time into lists spilling under scratch past their share of budget.
func readReport(fs vfs.FS, path, scratch string, budget int64) (_ *Report, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the report: %w", err)
	}
	defer f.Close()
	fail := func(err error) error {
		return fmt.Errorf("reading the report %s: %w (it was written whole and synced before the switch: was it changed by hand?)", path, err)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("it starts with %v, not an object", t)
		}
		return nil, fail(err)
	}
	rep := &Report{}
	defer closeOnError(rep, &err)
	stem, share := listStem(fs, scratch)+"-kept", budget/mapShare/listShare
	rest := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		key, _ := t.(string)
		switch {
		case key == "renumbered_unfinished" && rep.Renumbered == nil:
			rep.Renumbered, err = decodeList[RenumberedRun](dec, fs, stem+"-renumbered", share)
		case key == "token_changes" && rep.Tokens == nil:
			rep.Tokens, err = decodeList[TokenChange](dec, fs, stem+"-tokens", share)
		default:
			var raw json.RawMessage
			if err = dec.Decode(&raw); err == nil {
				rest[key] = raw
			}
		}
		if err != nil {
			return nil, fail(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(err)
	}
	shell, err := json.Marshal(rest)
	if err != nil {
		return nil, fail(err)
	}
	if err := json.Unmarshal(shell, rep); err != nil { // leaves the lists as they are
		return nil, fail(err)
	}
	if rep.Version != ReportVersion {
		return nil, fail(fmt.Errorf("report version %d, this fusee reads version %d", rep.Version, ReportVersion))
	}
	if rep.Renumbered == nil {
		rep.Renumbered = &List[RenumberedRun]{}
	}
	if rep.Tokens == nil {
		rep.Tokens = &List[TokenChange]{}
	}
	if rep.Counts.Runs == nil {
		rep.Counts.Runs = map[string]int64{}
	}
	for i := range rep.Phases {
		rep.Phases[i].elapsed = time.Duration(rep.Phases[i].Seconds * float64(time.Second))
	}
	return rep, nil
}

// readReportHead reads a report's fields but its lists (which it skips).
func readReportHead(fs vfs.FS, path string) (*Report, error) {
	rep, err := readReport(fs, path, "", 1)
	if err != nil {
		return nil, err
	}
	_ = rep.Close()
	return rep, nil
}

// loadSwitchReport replaces r.rep's content by the report the switch
// being finished carried (from src or pending): a finishing run reports
// what the interrupted one would have. Without one (a switch begun by a
// fusee that kept no reports), r.rep stays as it is and its ListsUnknown
// says so.
func (r *resharder) loadSwitchReport(src string) error {
	path := switchReportPath(r.fs, r.dir, src)
	if path == "" {
		r.rep.ListsUnknown = true
		return nil
	}
	return r.loadReport(path)
}

// loadReport replaces r.rep's content by the report at path, keeping
// what this run itself did (its dir as given, leftovers it removed, a dry
// run's flag).
func (r *resharder) loadReport(path string) error {
	got, err := readReport(r.fs, path, r.opts.Scratch, r.budget)
	if err != nil {
		return err
	}
	_ = r.rep.Close()
	got.Dir, got.DryRun, got.CleanedUp = r.rep.Dir, r.rep.DryRun, r.rep.CleanedUp
	*r.rep = *got
	return nil
}

// inFlightReport is the report of a switch that began and whose cleanup
// has not finished: pending in reshard-reports, or, while fusee.meta says
// the switch is under way, still in the switch's source ("" if none).
func inFlightReport(fs vfs.FS, dir string) string {
	if p := pendingReportPath(fs, dir); p != "" {
		return p
	}
	if m, err := meta.ReadAny(fs, dir); err == nil && (m.Switching() || m.Upgrading()) {
		return switchReportPath(fs, dir, switchSource(fs, dir))
	}
	return ""
}
