package reshard_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/reshard"
)

// TestSameBytesWhateverTheCores: pass 2 rewrites old shards on one worker
// per core, yet a directory resharded with GOMAXPROCS 1, 2 and 8 has the
// same physical dump (shards, run numbers, outbox sequence numbers: the
// layout, not only the content) and the same report, but for its phase
// times and its file's name. The cases take every sink: the sort in
// memory (3->5), the sort through scratch chunks and the spilled run map
// (8->3 with a small budget), and the direct write of a grow to a
// multiple (4->8). One more runs the sort with more workers than cores
// (8 on GOMAXPROCS 2), so that workers interleave on a core.
func TestSameBytesWhateverTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cases := []struct {
		oldN, newN int
		memory     int64
		seed       uint64
	}{
		{3, 5, 0, 31},
		{8, 3, 1, 32}, // a one-byte budget: every map spills, the sort chunks are 64 KiB
		{4, 8, 0, 33},
	}
	type setting struct{ procs, rewriters int }
	settings := []setting{{1, 0}, {2, 0}, {8, 0}, {2, 8}}
	// The quick tier compares one core with one other setting a day.
	settings = append(settings[:1], testtier.Subset(t, settings[1:], 3)...)
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d->%d", c.oldN, c.newN), func(t *testing.T) {
			src := genDir(t, c.oldN, scaled(600), c.seed)
			var wantDump, wantReport string
			var wantFrom setting
			for k, s := range settings {
				dir := filepath.Join(t.TempDir(), "d")
				if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
					t.Fatal(err)
				}
				runtime.GOMAXPROCS(s.procs)
				old := reshard.SetRewriters(s.rewriters)
				rep := doReshard(t, dir, c.newN, reshard.Options{Memory: c.memory})
				reshard.SetRewriters(old)
				dump, report := physicalDump(t, dir), comparableReport(t, rep)
				if k == 0 {
					wantDump, wantReport, wantFrom = dump, report, s
					if c.memory > 0 && !rep.Spilled {
						t.Fatalf("a budget of %d bytes did not spill: the case does not test the spilled maps", c.memory)
					}
					continue
				}
				if dump != wantDump {
					sameDump(t, fmt.Sprintf("GOMAXPROCS %d (%d workers) against %d", s.procs, s.rewriters, wantFrom.procs), wantDump, dump)
				}
				if report != wantReport {
					t.Fatalf("GOMAXPROCS %d (%d workers): the report differs from GOMAXPROCS %d's:\n%s\nwant\n%s", s.procs, s.rewriters, wantFrom.procs, report, wantReport)
				}
			}
		})
	}
}

// comparableReport is rep's JSON without what differs from one run to
// the next by nature: its phases' times, its directory and its file's name.
func comparableReport(t *testing.T, rep *reshard.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"phases", "report_file", "dir"} {
		if _, ok := m[k]; !ok && k != "report_file" {
			t.Fatalf("the report has no %q: the test's list of fields is stale", k)
		}
		delete(m, k)
	}
	out, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
