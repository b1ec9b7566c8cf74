package ringfile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusee-dev/fusee/internal/txtarfiles"
)

// The fuzz targets of this file read what an operator or another system
// hands fusee: ring files, plan files, census files and the reference
// coordinator's stored JSON. Run one with
//
//	go test -run XXX -fuzz '^FuzzParse$' -fuzztime 60s ./ringfile/
//
// (FuzzParse, FuzzParsePlan, FuzzParseCensus, FuzzImportWiggle; the
// anchors matter, as -fuzz must match one target). Under a plain go test
// their seeds run as ordinary tests.

// FuzzParse: Parse never panics and always returns a policy; its errors are
// *SyntaxError values naming the file. A policy it accepts formats to text
// that parses back to the same policy (source lines aside, cells in sorted
// order) and formats to the same bytes: Format is canonical. The round trip
// keeps Validate's verdict: errors stay errors, and a policy with no
// findings still has none.
func FuzzParse(f *testing.F) {
	for _, path := range []string{goldenRing, goldenWiggleRing} {
		f.Add(readSeed(f, path))
	}
	for _, suffix := range []string{".ring", ".orig"} {
		for _, data := range txtarfiles.Files(f, "../cmd/internal/cli/testdata/script", suffix) {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"fusee-ring 2\nnamespace ns\nrevision 3\ncurrent-epoch 1\ncell a\ncell b fingerprint=db-b\nepoch 0 draining shards=0-3\n  0-3 a\nepoch 1 open shards=0-2,8-9\n  0-2 a\n  8-9 b\n",
		"fusee-ring 2\nnamespace ns\nrevision 1\ncurrent-epoch 0\ncell a\nepoch 0 open shards=0-3,2\n  0-3 a\n",
		"fusee-ring 1\n# a comment\nnamespace   ns\ncurrent-epoch 0\nrevision 1\nshards 4\ncell b\ncell a\nepoch 0 open\n    0 a\n    1 a\n\t2-3 b\n",
		"fusee-ring 1\nnamespace ns\nshards 4\nrevision 1\ncurrent-epoch 0\ncell a\ncell b\nepoch 0 open\n  3 a\n  0-1 b\n  2 a\n",
		"fusee-ring 1\nnamespace ns\nshards 2\nrevision 0\ncurrent-epoch none\n",
		"fusee-ring 1\nnamespace ns\nshards 2\nrevision 3\ncurrent-epoch 1\ncell a fingerprint=x\ncell a fingerprint=y\nepoch 0 retired\n  0-1 a@eu-west\nepoch 1 open\n",
		"fusee-ring 1\nnamespace ns\nshards 4\nrevision 0\ncurrent-epoch 0\ncell a\nepoch 0 open\n  0-2 a\n  2-5 a@r@s\n",
		"fusee-ring 1\nnamespace ns\nshards x\nrevision -1\ncurrent-epoch 0\nwhat\n",
		"fusee-ring 1\nepoch 1 draining\nepoch 0 open\n  0 a\n",
		"fusee-ring 1\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "fuzz.ring"
		p, err := Parse(file, data)
		if p == nil {
			t.Fatalf("Parse returned no policy (err %v)", err)
		}
		if err != nil {
			checkSyntaxErrors(t, file, data, err)
			return
		}
		canon := Format(p)
		q, err := Parse(file, canon)
		if err != nil {
			t.Fatalf("Parse(Format(p)): %v\n%s", err, canon)
		}
		if again := Format(q); !bytes.Equal(again, canon) {
			t.Fatalf("Format is not canonical:\n%s\nthen\n%s", canon, again)
		}
		if d := diffPolicies(p, q); d != "" {
			t.Fatalf("the round trip changed the policy: %s\n%s", d, canon)
		}
		fp, fq := Validate(p), Validate(q)
		if HasErrors(fp) != HasErrors(fq) || (len(fp) == 0) != (len(fq) == 0) {
			t.Fatalf("the round trip changed Validate's verdict:\nbefore %v\nafter  %v", fp, fq)
		}
	})
}

// FuzzParsePlan: ParsePlan never panics; it returns a plan or errors that
// are *SyntaxError values, never both. An accepted plan formats to text
// that parses back to the same plan and formats to the same bytes.
func FuzzParsePlan(f *testing.F) {
	for _, data := range txtarfiles.Files(f, "../cmd/internal/cli/testdata/script", ".plan") {
		f.Add(data)
	}
	// Plans the planner makes from the golden rings.
	plans := 0
	for _, path := range []string{goldenRing, goldenWiggleRing} {
		p, err := Parse(path, readSeed(f, path))
		if err != nil {
			f.Fatal(err)
		}
		for _, g := range []Goal{
			{Kind: GoalRebalance},
			{Kind: GoalAddCell, Cell: "new-cell", Fingerprint: "db-n", Region: "ap-south"},
			{Kind: GoalSplit, Cell: p.Epochs[len(p.Epochs)-1].Ring[0].Cell, To: "half"},
			{Kind: GoalRebalance, Weights: map[string]int{p.Epochs[len(p.Epochs)-1].Ring[0].Cell: 3}},
		} {
			res, err := MakePlan(p, g)
			if err != nil {
				continue // the ring already meets the goal
			}
			f.Add(FormatPlan(res.Plan))
			plans++
		}
	}
	if plans < 4 {
		f.Fatalf("the planner made only %d plans from the golden rings", plans)
	}
	for _, s := range []string{
		"fusee-ring-plan 1\nnamespace orders\nshards 4\nbase-revision 3\nbase-epoch 0\ngoal split cellA:cellB\ncell cellB\nring\n  0-1 cellA\n  2-3 cellB\n",
		"base-epoch 2\nfusee-ring-plan 1\nshards 2\nnamespace n\n  # indented comment\nbase-revision 0\ngoal   a   b\ncell x fingerprint=f\ncell x\nring\n\t1 x@r\n  0 x\n",
		"fusee-ring-plan 1\nnamespace orders\nshards 4\nbase-revision 3\nbase-epoch 0\ngoal\nring\n",
		"fusee-ring-plan 2\nring 1\n  0 a\ngoal x\n",
		"  0 a\nring\nring\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "fuzz.plan"
		pl, err := ParsePlan(file, data)
		if err != nil {
			if pl != nil {
				t.Fatalf("ParsePlan returned a plan and an error: %v", err)
			}
			checkSyntaxErrors(t, file, data, err)
			return
		}
		canon := FormatPlan(pl)
		again, err := ParsePlan(file, canon)
		if err != nil {
			t.Fatalf("ParsePlan(FormatPlan(pl)): %v\n%s", err, canon)
		}
		if twice := FormatPlan(again); !bytes.Equal(twice, canon) {
			t.Fatalf("FormatPlan is not canonical:\n%s\nthen\n%s", canon, twice)
		}
		if !reflect.DeepEqual(canonicalPlan(pl), canonicalPlan(again)) {
			t.Fatalf("the round trip changed the plan:\n%+v\n%+v", canonicalPlan(pl), canonicalPlan(again))
		}
	})
}

// FuzzParseCensus: ParseCensus never panics and always returns a census;
// its errors are *SyntaxError values. An accepted census has its header and
// only well-formed reports (a cell and a node, one report per pair,
// non-negative epochs and counts). There is no census writer in the
// package, so the round trip goes through writeCensus below: what the
// parser read, written out again, reads back the same.
func FuzzParseCensus(f *testing.F) {
	for _, data := range txtarfiles.Files(f, "../cmd/internal/cli/testdata/script", ".census") {
		f.Add(data)
	}
	for _, s := range []string{
		"fusee-census 1\nnamespace orders\nreport cell=cellA node=a-1 at=2026-03-01T12:00:00Z live=0:0,1:42\nreport cell=cellA node=a-2 at=2026-03-01T12:00:03Z live=0:0,1:40\nreport cell=cellB node=b-1 at=2026-03-01T12:00:01Z live=1:7\n",
		"  namespace  n \n\n# comment\nfusee-census   1\nreport at=2026-03-01T12:00:00.123456789+05:30 node=x cell=c=d live=\n",
		"fusee-census 2\nnamespace\nreport cell=a node=a at=yesterday live=0:1,0:2\nreport cell=a\nreport cell=a node=a at=2026-03-01T12:00:00Z colour=red\nfleet 3\n",
		"fusee-census 1\nnamespace n\nreport cell=a node=b at=2026-03-01T12:00:00Z\nreport cell=a node=b at=2026-03-01T12:00:01Z\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "fuzz.census"
		c, err := ParseCensus(file, data)
		if c == nil || c.File != file {
			t.Fatalf("ParseCensus returned census %+v (err %v)", c, err)
		}
		if err != nil {
			checkSyntaxErrors(t, file, data, err)
			return
		}
		checkCensus(t, c, data)
		text := writeCensus(c)
		again, err := ParseCensus(file, text)
		if err != nil {
			t.Fatalf("the census written out again does not parse: %v\n%s", err, text)
		}
		if d := diffCensus(c, again); d != "" {
			t.Fatalf("the census written out again reads differently: %s\n%s", d, text)
		}
	})
}

// FuzzImportWiggle: ImportWiggle never panics; it returns a policy or an
// error naming the input, never both. An imported policy exports (both the
// etcd value and the bare epochs object) to JSON that imports back to the
// same policy and exports to the same bytes. If Validate finds no error in
// it, the ring file `fusee ring import` would write parses back to the
// same policy.
func FuzzImportWiggle(f *testing.F) {
	f.Add(readSeed(f, goldenWiggle), uint16(8))
	for _, data := range txtarfiles.Files(f, "../cmd/internal/cli/testdata/script", ".json") {
		if bytes.Contains(data, []byte(`"epochs"`)) {
			f.Add(data, uint16(8))
		}
	}
	golden, err := Parse(goldenRing, readSeed(f, goldenRing))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ExportWiggle(golden, false), uint16(8))
	f.Add(ExportWiggle(golden, true), uint16(8))
	for _, s := range []string{
		`{"currentEpoch":0,"revision":1,"epochs":"{}"}`,
		`{"currentEpoch":0,"revision":3,"epochs":{"0":{"status":"OPEN","ring":[{"shard":0,"cellId":"a","region":null},{"shard":0,"cellId":"b"}]}}}`,
		`{"0":{"status":"RETIRED","ring":[{"shard":0,"cellId":"a"},{"shard":1,"cellId":"a"}]},"1":{"status":"OPEN","ring":[{"region":"r\u2028","cellId":"b\"<&>\u0001","shard":1},{"shard":0,"cellId":"a"}]}}`,
		`{"0":{"status":"DRAINING","ring":[]},"2":{"status":"DRAINING"}}`,
		`{"currentEpoch":0,"revision":1,"epochs":""}`,
		`{"currentEpoch":0,"revision":1,"epochs":"{}","extra":1}`,
		`{"currentEpoch":0,"revision":1,"revision":2,"epochs":"{}"}`,
		`{"currentEpoch":1.5,"revision":1,"epochs":"{}"}`,
		`{"0":{"status":"open","ring":[]}}`,
		`{"01":{"status":"OPEN","ring":[]}}`,
		`{"currentEpoch":0,"revision":1,"epochs":"{}"} {}`,
		`{}`,
		`[1]`,
	} {
		f.Add([]byte(s), uint16(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, _ uint16) {
		opt := ImportOptions{File: "in.json", Namespace: "payments",
			Cells: []CellDecl{{ID: "pay-a", Fingerprint: "db-a"}}}
		p, err := ImportWiggle(data, opt)
		if err != nil {
			if p != nil {
				t.Fatalf("ImportWiggle returned a policy and an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), opt.File+": ") {
				t.Fatalf("the error does not name the input: %v", err)
			}
			return
		}
		if p.Namespace != opt.Namespace {
			t.Fatalf("import changed what the options give: %+v", p)
		}
		for _, epochsOnly := range []bool{false, true} {
			js := ExportWiggle(p, epochsOnly)
			q, err := ImportWiggle(js, opt)
			if err != nil {
				t.Fatalf("ImportWiggle(ExportWiggle(p, %v)): %v\n%s", epochsOnly, err, js)
			}
			if again := ExportWiggle(q, epochsOnly); !bytes.Equal(again, js) {
				t.Fatalf("ExportWiggle(.., %v) is not canonical:\n%s\nthen\n%s", epochsOnly, js, again)
			}
			want := p
			if epochsOnly {
				// The bare epochs object carries no revision and no
				// current epoch: they come back as its rules say.
				want = p.Clone()
				want.Revision, want.Current = 0, impliedCurrent(p.Epochs)
			}
			if d := diffPolicies(want, q); d != "" {
				t.Fatalf("ImportWiggle(ExportWiggle(p, %v)) changed the policy: %s\n%s", epochsOnly, d, js)
			}
		}
		if HasErrors(Validate(p)) {
			return
		}
		text := Format(p)
		q, err := Parse("in.ring", text)
		if err != nil {
			t.Fatalf("a valid import formats to a ring file that does not parse: %v\n%s", err, text)
		}
		if d := diffPolicies(p, q); d != "" {
			t.Fatalf("a valid import changed on its way through the ring file: %s\n%s", d, text)
		}
	})
}

// checkSyntaxErrors checks that err joins *SyntaxError values, each naming
// file and a line of data (0 for the file as a whole).
func checkSyntaxErrors(t *testing.T, file string, data []byte, err error) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	lines := strings.Count(string(data), "\n") + 1
	for _, e := range errs {
		var se *SyntaxError
		if !errors.As(e, &se) || se.File != file || se.Line < 0 || se.Line > lines {
			t.Fatalf("error %q (%T) is not a *SyntaxError on a line of %s (%d lines)", e, e, file, lines)
		}
	}
}

// canonicalPolicy is p as its text would carry it: without the file name
// and source lines, with cells in the order Format writes them and empty
// lists as nil.
func canonicalPolicy(p *Policy) *Policy {
	q := p.Clone()
	q.File, q.Lines = "", Lines{}
	for i := range q.Cells {
		q.Cells[i].Line = 0
	}
	slices.SortFunc(q.Cells, func(a, b CellDecl) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Fingerprint, b.Fingerprint))
	})
	q.Cells = slices.Clip(q.Cells)
	if len(q.Cells) == 0 {
		q.Cells = nil
	}
	if len(q.Epochs) == 0 {
		q.Epochs = nil
	}
	for i := range q.Epochs {
		e := &q.Epochs[i]
		e.Line = 0
		e.Ring = canonicalRing(e.Ring)
	}
	return q
}

func canonicalRing(r Ring) Ring {
	if len(r) == 0 {
		return nil
	}
	for i := range r {
		r[i].Line = 0
	}
	return r
}

// diffPolicies describes how two policies differ, source lines aside, or
// says nothing.
func diffPolicies(a, b *Policy) string {
	ca, cb := canonicalPolicy(a), canonicalPolicy(b)
	if reflect.DeepEqual(ca, cb) {
		return ""
	}
	if !reflect.DeepEqual(ca.Cells, cb.Cells) {
		return fmt.Sprintf("cells %+v, then %+v", ca.Cells, cb.Cells)
	}
	ca.Cells, cb.Cells = nil, nil
	if !reflect.DeepEqual(ca.Epochs, cb.Epochs) {
		return fmt.Sprintf("epochs %+v, then %+v", ca.Epochs, cb.Epochs)
	}
	ca.Epochs, cb.Epochs = nil, nil
	return fmt.Sprintf("%+v, then %+v", ca, cb)
}

// canonicalPlan is pl without source lines, its declarations sorted.
func canonicalPlan(pl *Plan) Plan {
	q := *pl
	q.Declare = canonicalPolicy(&Policy{Cells: pl.Declare}).Cells
	q.Ring = canonicalRing(slices.Clone(pl.Ring))
	return q
}

// checkCensus checks what a census ParseCensus accepted may hold.
func checkCensus(t *testing.T, c *Census, data []byte) {
	t.Helper()
	if c.Namespace == "" {
		t.Fatal("an accepted census without a namespace")
	}
	lines := strings.Count(string(data), "\n") + 1
	seen := map[[2]string]bool{}
	for _, r := range c.Reports {
		key := [2]string{r.Cell, r.Node}
		if r.Cell == "" || r.Node == "" || seen[key] || r.Line < 1 || r.Line > lines || r.Live == nil {
			t.Fatalf("an accepted census has a bad report: %+v", r)
		}
		seen[key] = true
		for e, k := range r.Live {
			if e < 0 || k < 0 {
				t.Fatalf("report %+v lists epoch %d with count %d", r, e, k)
			}
		}
	}
}

// writeCensus writes a census in the file's syntax, as a node would.
func writeCensus(c *Census) []byte {
	var b strings.Builder
	b.WriteString(censusMagic + " 1\nnamespace " + c.Namespace + "\n")
	for _, r := range c.Reports {
		b.WriteString("report cell=" + r.Cell + " node=" + r.Node + " at=" + r.At.Format(time.RFC3339Nano))
		if len(r.Live) > 0 {
			var pairs []string
			for _, e := range slices.Sorted(maps.Keys(r.Live)) {
				pairs = append(pairs, strconv.FormatInt(e, 10)+":"+strconv.FormatInt(r.Live[e], 10))
			}
			b.WriteString(" live=" + strings.Join(pairs, ","))
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// diffCensus describes how two censuses differ, source lines aside.
func diffCensus(a, b *Census) string {
	if a.Namespace != b.Namespace || len(a.Reports) != len(b.Reports) {
		return "namespace or report count"
	}
	for i, ra := range a.Reports {
		rb := b.Reports[i]
		if ra.Cell != rb.Cell || ra.Node != rb.Node || !ra.At.Equal(rb.At) || !maps.Equal(ra.Live, rb.Live) {
			return "report " + strconv.Itoa(i)
		}
	}
	return ""
}

func readSeed(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
