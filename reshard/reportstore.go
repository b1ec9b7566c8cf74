package reshard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
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

// reportWhat is the part of a report's name that says what it is.
func (r *resharder) reportWhat() string {
	if r.upgrade {
		return fmt.Sprintf("upgrade-%d-shards", r.newN)
	}
	return fmt.Sprintf("%d-to-%d", r.oldN, r.newN)
}

// writeSourceReport writes r.rep, whole and synced, as src/report.json:
// the report as the switch will carry it into reshard-reports (outcome
// done or undone, no switch phase yet). The report printed after the
// switch copies its lists from this file (keepLists).
func (r *resharder) writeSourceReport(src string) error {
	if err := r.rep.writeKept(r.fs, r.fs.PathJoin(src, switchdir.ReportInSource)); err != nil {
		return fmt.Errorf("keeping the report before the switch: %w", err)
	}
	return nil
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
	names, err := switchdir.ReportNames(fs, dir)
	if err != nil {
		return nil, err
	}
	if switchdir.FileExists(fs, fs.PathJoin(dir, ReportsDirName, switchdir.PendingReportName)) {
		names = append(names, switchdir.PendingReportName)
	}
	out := make([]KeptReport, 0, len(names))
	for _, n := range names {
		p := fs.PathJoin(dir, ReportsDirName, n)
		st, err := fs.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		out = append(out, KeptReport{Path: p, Bytes: st.Size(), Pending: n == switchdir.PendingReportName})
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
		if p := switchdir.InFlightReport(fs, dir); p != "" {
			path = p
			break
		}
		names, err := switchdir.ReportNames(fs, dir)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, &ReportNotFoundError{Dir: dir}
		}
		path = fs.PathJoin(dir, ReportsDirName, names[len(names)-1])
	default:
		path = fs.PathJoin(dir, ReportsDirName, fs.PathBase(name))
		if !switchdir.FileExists(fs, path) {
			return nil, &ReportNotFoundError{Dir: dir, Name: fs.PathBase(name)}
		}
	}
	return readReport(fs, path, scratch, budget, true)
}

// readReport reads a report that WriteJSON wrote, its lists an element at
// a time into lists spilling under scratch past their share of budget;
// without lists, it passes over them an element at a time and keeps none
// (the report's lists are then empty).
func readReport(fs vfs.FS, path, scratch string, budget int64, lists bool) (_ *Report, err error) {
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
		case !lists && (key == "renumbered_unfinished" || key == "token_changes"):
			err = skipArray(dec)
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
	return readReport(fs, path, "", 0, false)
}

// skipArray passes over the JSON array (or null) next in dec, an element
// at a time.
func skipArray(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("a list is %v, not an array", t)
	}
	for dec.More() {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// loadSwitchReport replaces r.rep's content by the report the switch
// being finished carried (from src or pending): a finishing run reports
// what the interrupted one would have. Without one (a switch begun by a
// fusee that kept no reports), r.rep stays as it is and its ListsUnknown
// says so.
func (r *resharder) loadSwitchReport(src string) error {
	path := switchdir.ReportPath(r.fs, r.dir, src)
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
	got, err := readReport(r.fs, path, r.opts.Scratch, r.budget, true)
	if err != nil {
		return err
	}
	_ = r.rep.Close()
	got.Dir, got.DryRun, got.CleanedUp = r.rep.Dir, r.rep.DryRun, r.rep.CleanedUp
	*r.rep = *got
	return nil
}
