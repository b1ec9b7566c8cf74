package reshard_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

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
// long, every string awkward), WriteJSON writes exactly what
// MarshalIndent renders.
func TestWriteJSONMatchesWhole(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
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
		switch rapid.IntRange(0, 2).Draw(t, "renumbered") {
		case 1:
			rep.Renumbered = []reshard.RenumberedRun{}
		case 2:
			rep.Renumbered = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) reshard.RenumberedRun {
				return reshard.RenumberedRun{WorkflowID: anyText().Draw(t, "wf"), OldShard: rapid.Int().Draw(t, "os"),
					OldRun: rapid.Uint64().Draw(t, "or"), NewShard: rapid.Int().Draw(t, "ns"), NewRun: rapid.Uint64().Draw(t, "nr"),
					OldKey: anyText().Draw(t, "ok"), NewKey: anyText().Draw(t, "nk")}
			}), 1, 20).Draw(t, "list")
		}
		switch rapid.IntRange(0, 2).Draw(t, "tokens") {
		case 1:
			rep.Tokens = []reshard.TokenChange{}
		case 2:
			rep.Tokens = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) reshard.TokenChange {
				return reshard.TokenChange{WorkflowID: anyText().Draw(t, "wf"), Position: rapid.Uint32().Draw(t, "pos"),
					Old: anyText().Draw(t, "old"), New: anyText().Draw(t, "new")}
			}), 1, 20).Draw(t, "list")
		}
		if got, want := streamedJSON(t, rep), wholeJSON(t, rep); !bytes.Equal(got, want) {
			t.Fatalf("streamed JSON differs from the whole rendering:\n%s\nwant:\n%s", got, want)
		}
	})
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
		if len(rep.Renumbered) == 0 || len(rep.Tokens) == 0 {
			t.Fatalf("dry run %v: %d renumbered, %d tokens: the workload tests nothing", dry, len(rep.Renumbered), len(rep.Tokens))
		}
		if got, want := streamedJSON(t, rep), wholeJSON(t, rep); !bytes.Equal(got, want) {
			t.Fatalf("dry run %v: streamed JSON differs from the whole rendering", dry)
		}
	}
}

// bigReport is a report with n renumbered runs and n token changes.
func bigReport(n int) *reshard.Report {
	rep := &reshard.Report{Version: reshard.ReportVersion, Dir: "/d", Outcome: reshard.OutcomeDone,
		Counts: reshard.Counts{Runs: map[string]int64{}}, Renumbered: make([]reshard.RenumberedRun, n), Tokens: make([]reshard.TokenChange, n)}
	for i := range n {
		id := "workflow-" + strconv.Itoa(i)
		rep.Renumbered[i] = reshard.RenumberedRun{WorkflowID: id, OldShard: i % 8, OldRun: uint64(i), NewShard: i % 3,
			NewRun: uint64(i) + 1<<20, OldKey: "k1." + strconv.Itoa(i) + ".", NewKey: "k2." + strconv.Itoa(i) + "."}
		rep.Tokens[i] = reshard.TokenChange{WorkflowID: id, Position: uint32(i), Old: "t-old-" + id, New: "t-new-" + id}
	}
	return rep
}

// writePeakHeap is the largest heap (above the heap before) sampled
// while write runs.
func writePeakHeap(write func()) uint64 { return peakHeapDuring(100*time.Microsecond, write) }

// TestWriteJSONStaysFlat: writing the --json report of 10,000 and of
// 100,000 renumbered runs and token changes takes about the same extra
// heap (the report itself aside), not ten times it: the lists are never
// rendered whole. The whole rendering (MarshalIndent) fails this: at
// 100,000 entries it holds some 50 MB of JSON at once.
func TestWriteJSONStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("renders reports of 100,000 entries")
	}
	// The lists themselves are live heap, and the collector lets garbage
	// grow to GOGC percent of it before it runs: with a low GOGC the
	// garbage stays small and the peak is what the writing holds.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	var peaks []uint64
	sizes := []int{10_000, 100_000}
	for _, n := range sizes {
		rep := bigReport(n)
		peaks = append(peaks, writePeakHeap(func() {
			if err := rep.WriteJSON(io.Discard); err != nil {
				t.Error(err)
			}
		}))
		runtime.KeepAlive(rep)
	}
	t.Logf("peak heap writing the JSON: %.2f MiB at %d entries, %.2f MiB at %d", float64(peaks[0])/(1<<20), sizes[0], float64(peaks[1])/(1<<20), sizes[1])
	// GC timing: garbage between collections can reach the GC's target,
	// a few MiB here; ten times the entries must not bring ten times that.
	if peaks[1] > 2*peaks[0]+4<<20 {
		t.Errorf("peak heap writing the JSON grew from %d to %d bytes with ten times the entries", peaks[0], peaks[1])
	}
}
