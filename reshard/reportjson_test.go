package reshard_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"pgregory.net/rapid"

	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/reshard"
)

// wholeJSON is the report rendered whole in memory, as the command did
// before WriteJSON: the reference WriteJSON must match byte for byte.
func wholeJSON(t interface{ Fatal(...any) }, rep *reshard.Report) []byte {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

func streamedJSON(t interface{ Fatal(...any) }, rep *reshard.Report) []byte {
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// anyText is any string, the awkward ones often: quotes, newlines, the
// HTML characters the encoder escapes, the keys WriteJSON looks for,
// invalid UTF-8.
func anyText() *rapid.Generator[string] {
	return rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"",
		"\n  \"renumbered_unfinished\": []", "\"token_changes\": [],", "<a&b>", "\xff\xfe", "\u2028", "x\ty\\z"}))
}

// TestWriteJSONMatchesWhole: on random reports (lists nil, empty or
// long, in memory or spilled, every string awkward), the lists give back
// their entries in order and render as the slices of them did, and
// WriteJSON writes exactly what MarshalIndent renders.
func TestWriteJSONMatchesWhole(t *testing.T) {
	scratch := t.TempDir()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		defer reshard.SetListBatch(reshard.SetListBatch(anyBatch(t)))
		rep, renumbered, tokens := anyReport(t, filepath.Join(scratch, strconv.Itoa(runs)))
		defer rep.Close()
		if rep.Renumbered != nil {
			sameList(t, "renumbered", rep.Renumbered, renumbered)
		}
		if rep.Tokens != nil {
			sameList(t, "tokens", rep.Tokens, tokens)
		}
		if got, want := streamedJSON(t, rep), wholeJSON(t, rep); !bytes.Equal(got, want) {
			t.Fatalf("streamed JSON differs from the whole rendering:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestWriteJSONCopiesKeptLists: a random report written whole to a file
// as before a switch (WriteKept), the file then renamed and the report's
// fields outside the lists changed (the switch's phase, a kept layout,
// the outcome), sometimes a list grown too, is written by WriteJSON
// exactly as MarshalIndent renders it: the lists copied from the file
// are the bytes encoding them would give.
func TestWriteJSONCopiesKeptLists(t *testing.T) {
	scratch := t.TempDir()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		dir := filepath.Join(scratch, strconv.Itoa(runs))
		defer reshard.SetListBatch(reshard.SetListBatch(anyBatch(t)))
		rep, _, _ := anyReport(t, dir)
		defer rep.Close()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "report.json")
		if err := rep.WriteKept(vfs.Default, path); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, wholeJSON(t, rep)) {
			t.Fatalf("the kept report differs from the whole rendering (%v)", err)
		}
		if err := os.Rename(path, filepath.Join(dir, "moved.json")); err != nil {
			t.Fatal(err)
		}
		rep.Phases = append(rep.Phases, reshard.Phase{Name: "switch", Seconds: rapid.Float64Range(0, 1e6).Draw(t, "switch")})
		rep.Kept = anyText().Draw(t, "kept after")
		rep.Outcome = reshard.Outcome(anyText().Draw(t, "outcome after"))
		if rep.Tokens != nil && rapid.Bool().Draw(t, "grow") {
			if err := rep.Tokens.Add(reshard.TokenChange{WorkflowID: anyText().Draw(t, "late")}); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := streamedJSON(t, rep), wholeJSON(t, rep); !bytes.Equal(got, want) {
			t.Fatalf("JSON with the kept lists differs from the whole rendering:\n%s\nwant:\n%s", got, want)
		}
	})
}

// anyBatch is how many list elements an encoder takes at a time: one to
// three, so that the lists span many batches, which the encoders finish
// in any order and WriteJSON writes in theirs.
func anyBatch(t *rapid.T) int { return rapid.IntRange(1, 3).Draw(t, "batch") }

// anyReport is a random report (lists nil, empty or long, in memory or
// spilling under dir, every string awkward) and its lists' entries.
func anyReport(t *rapid.T, dir string) (*reshard.Report, []reshard.RenumberedRun, []reshard.TokenChange) {
	// A one-byte budget spills a list at its first entry.
	budget := rapid.SampledFrom([]int64{1, 1 << 40}).Draw(t, "budget")
	rep := &reshard.Report{Version: reshard.ReportVersion, Dir: anyText().Draw(t, "dir"),
		Outcome: reshard.Outcome(anyText().Draw(t, "outcome")), DryRun: rapid.Bool().Draw(t, "dry"),
		OldShards: rapid.IntRange(0, 1024).Draw(t, "old"), NewShards: rapid.IntRange(0, 1024).Draw(t, "new"),
		CleanedUp:   rapid.SliceOfN(anyText(), 0, 2).Draw(t, "cleaned"),
		StoreGen:    rapid.Uint64().Draw(t, "gen"),
		Counts:      reshard.Counts{Runs: rapid.MapOfN(anyText(), rapid.Int64(), 0, 3).Draw(t, "runs"), Records: rapid.Int64().Draw(t, "records")},
		Spilled:     rapid.Bool().Draw(t, "spilled"),
		LogEnding:   anyText().Draw(t, "ending"),
		Kept:        anyText().Draw(t, "kept"),
		SpaceNeeded: rapid.Int64().Draw(t, "space"),
	}
	if rapid.Bool().Draw(t, "phases") {
		rep.Phases = []reshard.Phase{{Name: anyText().Draw(t, "phase"), Seconds: rapid.Float64Range(0, 1e6).Draw(t, "secs")}}
	}
	if rapid.Bool().Draw(t, "tail") {
		rep.DroppedTail = &reshard.DroppedTail{File: anyText().Draw(t, "file"), Offset: rapid.Int64().Draw(t, "off"),
			Shards: []reshard.DroppedShard{{Shard: 1, FirstLSN: 2, LastLSN: 3}}}
	}
	var renumbered []reshard.RenumberedRun
	var tokens []reshard.TokenChange
	rep.Renumbered, renumbered = anyList(t, "renumbered", dir+"-r", budget, rapid.Custom(func(t *rapid.T) reshard.RenumberedRun {
		return reshard.RenumberedRun{WorkflowID: anyText().Draw(t, "wf"), OldShard: rapid.Int().Draw(t, "os"),
			OldRun: rapid.Uint64().Draw(t, "or"), NewShard: rapid.Int().Draw(t, "ns"), NewRun: rapid.Uint64().Draw(t, "nr"),
			OldKey: anyText().Draw(t, "ok"), NewKey: anyText().Draw(t, "nk"),
			Tokens: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) reshard.RunToken {
				return reshard.RunToken{Position: rapid.Uint32().Draw(t, "tp"), Old: anyText().Draw(t, "to"), New: anyText().Draw(t, "tn")}
			}), 0, 3).Draw(t, "runtokens")}
	}))
	rep.Tokens, tokens = anyList(t, "tokens", dir+"-t", budget, rapid.Custom(func(t *rapid.T) reshard.TokenChange {
		return reshard.TokenChange{WorkflowID: anyText().Draw(t, "wf"), Position: rapid.Uint32().Draw(t, "pos"),
			Old: anyText().Draw(t, "old"), New: anyText().Draw(t, "new")}
	}))
	return rep, renumbered, tokens
}

// anyList is nil, an empty list or a list of 1 to 20 entries drawn from
// gen (and those entries), spilling under path past budget bytes.
func anyList[T any](t *rapid.T, label, path string, budget int64, gen *rapid.Generator[T]) (*reshard.List[T], []T) {
	switch rapid.IntRange(0, 2).Draw(t, label) {
	case 1:
		return reshard.NewTestList[T](path, budget), nil
	case 2:
		items := rapid.SliceOfN(gen, 1, 20).Draw(t, label+" list")
		return reshard.NewTestList(path, budget, items...), items
	}
	return nil, nil
}

// sameList fails unless l holds want, in order, and renders as want's
// slice does (an empty list as []).
func sameList[T any](t *rapid.T, what string, l *reshard.List[T], want []T) {
	got := l.All()
	if int64(len(got)) != l.Len() || !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
		t.Fatalf("%s: the list (%d entries) gives back %v, want %v", what, l.Len(), got, want)
	}
	if want == nil {
		want = []T{}
	}
	a, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("%s: the list renders as %s, its slice as %s", what, a, b)
	}
}

// TestWriteJSONRealReports: the reports of real reshards (a dry run and
// the real run, both with renumbered runs and token changes) stream to
// the same bytes as the whole rendering.
func TestWriteJSONRealReports(t *testing.T) {
	src := genDir(t, 4, scaled(400), 11)
	for _, dry := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		rep := doReshard(t, dir, 3, reshard.Options{DryRun: dry})
		if rep.Renumbered.Len() == 0 || rep.Tokens.Len() == 0 {
			t.Fatalf("dry run %v: %d renumbered, %d tokens: the workload tests nothing", dry, rep.Renumbered.Len(), rep.Tokens.Len())
		}
		if got, want := streamedJSON(t, rep), wholeJSON(t, rep); !bytes.Equal(got, want) {
			t.Fatalf("dry run %v: streamed JSON differs from the whole rendering", dry)
		}
	}
}

// bigReport is a report with n renumbered runs and n token changes, its
// lists spilling under dir past budget bytes each.
func bigReport(dir string, budget int64, n int) *reshard.Report {
	rep := &reshard.Report{Version: reshard.ReportVersion, Dir: "/d", Outcome: reshard.OutcomeDone,
		Counts:     reshard.Counts{Runs: map[string]int64{}},
		Renumbered: reshard.NewTestList[reshard.RenumberedRun](filepath.Join(dir, "r"), budget),
		Tokens:     reshard.NewTestList[reshard.TokenChange](filepath.Join(dir, "t"), budget)}
	for i := range n {
		id := "workflow-" + strconv.Itoa(i)
		err := rep.Renumbered.Add(reshard.RenumberedRun{WorkflowID: id, OldShard: i % 8, OldRun: uint64(i), NewShard: i % 3,
			NewRun: uint64(i) + 1<<20, OldKey: "k1." + strconv.Itoa(i) + ".", NewKey: "k2." + strconv.Itoa(i) + "."})
		if err == nil {
			err = rep.Tokens.Add(reshard.TokenChange{WorkflowID: id, Position: uint32(i), Old: "t-old-" + id, New: "t-new-" + id})
		}
		if err != nil {
			panic(err)
		}
	}
	return rep
}

// TestReportListsStayFlat: keeping the report's lists of 10,000 and of
// 100,000 renumbered runs and token changes, and writing them as the
// --json report, takes about the same heap, not ten times it: the lists
// spill past their share of the budget and are never rendered whole.
// Lists held as slices fail this (at 100,000 entries they alone are some
// 25 MB), and so does the whole rendering (MarshalIndent holds some 50 MB
// of JSON at once).
func TestReportListsStayFlat(t *testing.T) {
	if testtier.Race {
		t.Skip("a heap measurement (the scratch stores' block cache is Go heap under -race); .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("keeps and renders reports of 100,000 entries")
	}
	// The collector lets garbage grow to GOGC percent of the live heap
	// before it runs: with a low GOGC the peak is what is held.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var peaks []uint64
	sizes := []int{10_000, 100_000}
	for _, n := range sizes {
		dir := t.TempDir()
		peaks = append(peaks, peakHeapDuring(100*time.Microsecond, func() {
			rep := bigReport(dir, 1<<20, n)
			if names, _ := os.ReadDir(dir); len(names) != 2 {
				t.Errorf("%d entries: the lists did not spill under %s", n, dir)
			}
			var c countingWriter
			if err := rep.WriteJSON(&c); err != nil {
				t.Error(err)
			}
			if int64(c) < int64(n)*200 {
				t.Errorf("%d entries: %d bytes of JSON", n, c)
			}
			if err := rep.Close(); err != nil {
				t.Error(err)
			}
		}))
	}
	t.Logf("peak heap keeping and writing the lists: %.2f MiB at %d entries, %.2f MiB at %d", float64(peaks[0])/(1<<20), sizes[0], float64(peaks[1])/(1<<20), sizes[1])
	// GC timing and the scratch stores' memtables: a few MiB; ten times
	// the entries must not bring ten times the heap.
	if peaks[1] > 2*peaks[0]+4<<20 {
		t.Errorf("peak heap keeping and writing the lists grew from %d to %d bytes with ten times the entries", peaks[0], peaks[1])
	}
}

// countingWriter counts the bytes written to it.
type countingWriter int64

func (c *countingWriter) Write(b []byte) (int, error) {
	*c += countingWriter(len(b))
	return len(b), nil
}

// BenchmarkReportListsJSON writes a report whose two lists hold 20,000
// entries each, shaped as a reshard's (IDs, key prefixes and tokens of
// the engine's lengths), from memory to io.Discard: what writing the lists
// costs a reshard beyond reading them back, at 10M runs shrunk 8 -> 3
// about 1.4M entries.
func BenchmarkReportListsJSON(b *testing.B) {
	const n = 20000
	runs := make([]reshard.RenumberedRun, n)
	tokens := make([]reshard.TokenChange, n)
	for i := range n {
		wf := fmt.Sprintf("orders.e3.s%d.01JF3K8Z6Q%016d", i%8, i)
		runs[i] = reshard.RenumberedRun{WorkflowID: wf, OldShard: i % 8, OldRun: uint64(i), NewShard: i % 3, NewRun: uint64(1000000 + i),
			OldKey: fmt.Sprintf("%d:%d:", i%8, i), NewKey: fmt.Sprintf("%d:%d:", i%3, 1000000+i)}
		if i%2 == 0 {
			runs[i].Tokens = []reshard.RunToken{{Position: 7, Old: "AAECAwQFBgcICQoLDA0ODw", New: "AAECAwQFBgcICQoLDA0OEA"}}
		}
		tokens[i] = reshard.TokenChange{WorkflowID: wf, Position: 7, Old: "AAECAwQFBgcICQoLDA0ODw", New: "AAECAwQFBgcICQoLDA0OEA"}
	}
	dir := b.TempDir()
	rep := &reshard.Report{Version: reshard.ReportVersion, Dir: "d", Outcome: reshard.OutcomeDone,
		Renumbered: reshard.NewTestList(filepath.Join(dir, "r"), 1<<40, runs...),
		Tokens:     reshard.NewTestList(filepath.Join(dir, "t"), 1<<40, tokens...)}
	defer rep.Close()
	b.ResetTimer()
	for b.Loop() {
		if err := rep.WriteJSON(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
