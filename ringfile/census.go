package ringfile

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A census says how many instances are still live per epoch, as each node
// of each cell last reported it. Retiring an epoch needs a census that
// shows zero for it from every cell of its ring, with every report fresh:
// one silent or stale cell could be holding live work. The file:
//
//	fusee-census 1
//	namespace orders
//	report cell=cellA node=a-1 at=2026-03-01T12:00:00Z live=0:0,1:42
//	report cell=cellA node=a-2 at=2026-03-01T12:00:03Z live=0:0,1:40
//	report cell=cellB node=b-1 at=2026-03-01T12:00:01Z live=1:7
//
// live lists epoch:count pairs; an epoch a node does not list counts zero
// for it (that is how the reference's nodes report). Per cell the count is
// the maximum over its nodes (replicas see the same database), and the
// epoch's count is the sum over cells.

const censusMagic = "fusee-census"

// censusVersion is the census format's version, apart from the ring file's.
const censusVersion = 1

// Report is one node's census line.
type Report struct {
	Cell string
	Node string
	At   time.Time
	Live map[int64]int64
	Line int
}

// Census is a parsed census file.
type Census struct {
	File      string
	Namespace string
	Reports   []Report
}

// LoadCensus reads and parses a census file.
func LoadCensus(path string) (*Census, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading census: %w", err)
	}
	return ParseCensus(path, data)
}

// ParseCensus reads a census file strictly, reporting every bad line.
func ParseCensus(file string, data []byte) (*Census, error) {
	c := &Census{File: file}
	var errs []error
	fail := func(n int, format string, args ...any) {
		errs = append(errs, &SyntaxError{File: file, Line: n, Msg: fmt.Sprintf(format, args...)})
	}
	header := map[string]int{}  // censusMagic, namespace -> line
	reports := map[string]int{} // cell/node -> line
	for i, raw := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		n := i + 1
		fields := strings.Fields(raw)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		key := fields[0]
		switch key {
		case censusMagic, "namespace":
			if first, dup := header[key]; dup {
				fail(n, "duplicate %s (first on line %d)", key, first)
				continue
			}
			header[key] = n
			if msg := c.headerLine(fields); msg != "" {
				fail(n, "%s", msg)
			}
		case "report":
			r, err := parseReport(fields[1:])
			if err != nil {
				fail(n, "%v", err)
				continue
			}
			r.Line = n
			if first, dup := reports[r.Cell+"/"+r.Node]; dup {
				fail(n, "duplicate report for cell %s node %s (first on line %d)", r.Cell, r.Node, first)
				continue
			}
			reports[r.Cell+"/"+r.Node] = n
			c.Reports = append(c.Reports, r)
		default:
			fail(n, "unknown key %q (want %s, namespace or report)", key, censusMagic)
		}
	}
	if _, ok := header[censusMagic]; !ok {
		fail(0, "missing `%s %d` line", censusMagic, censusVersion)
	}
	if _, ok := header["namespace"]; !ok {
		fail(0, "missing `namespace` line")
	}
	return c, errors.Join(errs...)
}

// headerLine reads the version or namespace line; it returns what is
// wrong with it, if anything.
func (c *Census) headerLine(fields []string) string {
	switch {
	case len(fields) != 2:
		return fields[0] + " takes one value"
	case fields[0] == "namespace":
		c.Namespace = fields[1]
	case fields[1] != strconv.Itoa(censusVersion):
		return fmt.Sprintf("unsupported census format: this fusee reads `%s %d`", censusMagic, censusVersion)
	}
	return ""
}

// parseReport reads `cell=C node=N at=TIME [live=E:K,...]`.
func parseReport(attrs []string) (Report, error) {
	r := Report{Live: map[int64]int64{}}
	got := map[string]bool{}
	for _, a := range attrs {
		k, v, ok := strings.Cut(a, "=")
		if !ok || got[k] {
			return r, fmt.Errorf("report: %q is not a new key=value", a)
		}
		got[k] = true
		var err error
		switch k {
		case "cell":
			r.Cell = v
		case "node":
			r.Node = v
		case "at":
			r.At, err = time.Parse(time.RFC3339, v)
		case "live":
			err = parseLive(v, r.Live)
		default:
			err = fmt.Errorf("unknown key %q (want cell, node, at, live)", k)
		}
		if err != nil {
			return r, fmt.Errorf("report %s: %w", k, err)
		}
	}
	if r.Cell == "" || r.Node == "" || !got["at"] {
		return r, errors.New("report needs cell=, node= and at=")
	}
	return r, nil
}

func parseLive(v string, into map[int64]int64) error {
	if v == "" {
		return nil
	}
	for _, pair := range strings.Split(v, ",") {
		e, k, ok := strings.Cut(pair, ":")
		epoch, err1 := strconv.ParseInt(e, 10, 64)
		count, err2 := strconv.ParseInt(k, 10, 64)
		if !ok || err1 != nil || err2 != nil || epoch < 0 || count < 0 {
			return fmt.Errorf("%q is not epoch:count", pair)
		}
		if _, dup := into[epoch]; dup {
			return fmt.Errorf("epoch %d listed twice", epoch)
		}
		into[epoch] = count
	}
	return nil
}

// CellLive is one cell's share of an epoch's live count.
type CellLive struct {
	Cell    string    `json:"cell"`
	Live    int64     `json:"live"`
	Reports int       `json:"reports"`
	Oldest  time.Time `json:"oldest,omitzero"`
}

// CensusResult is what a census says about one epoch. Problems is empty
// when the census allows retiring it.
type CensusResult struct {
	Epoch    int64      `json:"epoch"`
	Live     int64      `json:"live"`
	Cells    []CellLive `json:"cells"`
	Problems []string   `json:"problems,omitempty"`
}

// CheckCensus reads what a census says about epoch: it needs a report from
// every cell of the epoch's ring, none older than maxAge at now (nor from
// more than a minute in the future), and a live count of zero.
func CheckCensus(p *Policy, c *Census, epoch int64, now time.Time, maxAge time.Duration) (*CensusResult, error) {
	e := p.Epoch(epoch)
	if e == nil {
		return nil, fmt.Errorf("epoch %d does not exist", epoch)
	}
	if c.Namespace != p.Namespace {
		return nil, fmt.Errorf("%s: the census is for namespace %s, the ring file for %s", c.File, c.Namespace, p.Namespace)
	}
	res := &CensusResult{Epoch: epoch}
	cells := e.Ring.Cells()
	sort.Strings(cells)
	for _, cell := range cells {
		cl := CellLive{Cell: cell}
		for _, r := range c.Reports {
			if r.Cell != cell {
				continue
			}
			cl.Reports++
			cl.Live = max(cl.Live, r.Live[epoch])
			if cl.Oldest.IsZero() || r.At.Before(cl.Oldest) {
				cl.Oldest = r.At
			}
			if age := now.Sub(r.At); age > maxAge {
				res.Problems = append(res.Problems, fmt.Sprintf("%sthe report of cell %s node %s is %s old, older than --max-age %s", position(c.File, r.Line), cell, r.Node, age.Round(time.Second), maxAge))
			} else if age < -time.Minute {
				res.Problems = append(res.Problems, fmt.Sprintf("%sthe report of cell %s node %s is dated %s in the future (clock skew?)", position(c.File, r.Line), cell, r.Node, (-age).Round(time.Second)))
			}
		}
		if cl.Reports == 0 {
			res.Problems = append(res.Problems, fmt.Sprintf("cell %s, in epoch %d's ring, sent no report: it may hold live instances", cell, epoch))
		}
		res.Live += cl.Live
		res.Cells = append(res.Cells, cl)
	}
	if res.Live > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("epoch %d still has %d live instance%s", epoch, res.Live, plural(int(res.Live))))
	}
	return res, nil
}
