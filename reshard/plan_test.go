package reshard_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/internal/testtier"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// fileHashes lists every file under dir on the disk (but the kept layout
// and LOCK) with its SHA-256.
func fileHashes(t testing.TB, dir string) string {
	t.Helper()
	files, err := hashFiles(vfs.Default, dir, reshard.KeptDirName, reshard.ReportsDirName)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// makePlan runs a dry run that writes a plan and reads it back as a file
// would be.
func makePlan(t testing.TB, dir string, n int) *reshard.Plan {
	t.Helper()
	rep := doReshard(t, dir, n, reshard.Options{DryRun: true, MakePlan: true})
	if rep.Plan == nil {
		t.Fatal("a dry run with MakePlan returned no plan")
	}
	data, err := reshard.MarshalPlan(rep.Plan)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reshard.ParsePlan("plan.json", data)
	if err != nil {
		t.Fatalf("reading back the plan: %v", err)
	}
	return p
}

// commitOne opens dir as the engine does and acknowledges one entry.
func commitOne(t testing.TB, dir string) {
	t.Helper()
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wf := "one-more"
	op := model.Op{Kind: model.OpSeen, MsgID: "one-more-msg", WorkflowID: wf}
	if err := db.Commit([]journal.ShardOp{{Shard: model.ShardOf(wf, len(db.Shards)), Op: op}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPlanApplyEqualsDirect: a plan made by a dry run and applied gives
// the directory a reshard without a plan gives (the same physical dump),
// every renumbered run where the plan said, finished ones included.
func TestPlanApplyEqualsDirect(t *testing.T) {
	for _, c := range []struct{ from, to int }{{3, 5}, {4, 2}} {
		t.Run(fmt.Sprintf("%d->%d", c.from, c.to), func(t *testing.T) {
			a, b := genDir(t, c.from, 300, 41), genDir(t, c.from, 300, 41)
			p := makePlan(t, a, c.to)
			if p.Version != reshard.PlanVersion || p.OldShards != c.from || p.NewShards != c.to || len(p.Shards) != c.to {
				t.Fatalf("plan: version %d, %d to %d shards, %d totals", p.Version, p.OldShards, p.NewShards, len(p.Shards))
			}
			var runs int64
			for _, s := range p.Shards {
				runs += s.Runs
			}
			if runs != 300 || p.Renumbered.Len() != p.Counts.RunsRenumbered {
				t.Fatalf("plan: %d runs in the totals, %d renumbered listed, %d counted", runs, p.Renumbered.Len(), p.Counts.RunsRenumbered)
			}
			before := logicalDump(t, a)
			rep := doReshard(t, a, 0, reshard.Options{Plan: p, PlanPath: "plan.json"})
			if rep.Outcome != reshard.OutcomeDone || rep.NewShards != c.to {
				t.Fatalf("apply: outcome %s, %d shards", rep.Outcome, rep.NewShards)
			}
			doReshard(t, b, c.to, reshard.Options{})
			if physicalDump(t, a) != physicalDump(t, b) {
				t.Fatal("the plan applied and a direct reshard give different physical dumps")
			}
			sameDump(t, "after applying the plan", before, logicalDump(t, a))
			chk, err := reshard.VerifyPlan(context.Background(), vfs.Default, a, p, t.TempDir(), 1) // a one-byte budget: the join spills
			if err != nil {
				t.Fatal(err)
			}
			if !chk.OK() || int64(chk.Renumbered) != p.Renumbered.Len() {
				t.Fatalf("verify-plan: %d of %d renumbered found, differences %q", chk.Renumbered, p.Renumbered.Len(), chk.Differences)
			}
		})
	}
}

// TestPlanRefused: a plan is refused, with nothing changed, when the
// directory has one more acknowledged entry, is another directory, or the
// plan file is damaged or of another version.
func TestPlanRefused(t *testing.T) {
	dir := genDir(t, 3, 200, 43)
	p := makePlan(t, dir, 5)

	commitOne(t, dir)
	files := fileHashes(t, dir)
	_, err := reshard.Reshard(context.Background(), vfs.Default, dir, reshard.Options{Plan: p, PlanPath: "plan.json"})
	var stale *reshard.StalePlanError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "the log ends at") {
		t.Fatalf("a plan applied after one more entry: %v, want a StalePlanError naming the log end", err)
	}
	if fileHashes(t, dir) != files {
		t.Fatal("a refused plan changed the directory")
	}

	other := genDir(t, 3, 200, 44)
	files = fileHashes(t, other)
	if _, err := reshard.Reshard(context.Background(), vfs.Default, other, reshard.Options{Plan: p}); !errors.As(err, &stale) {
		t.Fatalf("a plan applied to another directory: %v, want a StalePlanError", err)
	}
	if fileHashes(t, other) != files {
		t.Fatal("a refused plan changed the other directory")
	}

	data, err := reshard.MarshalPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	var pfe *reshard.PlanFileError
	for name, bad := range map[string][]byte{
		"truncated": data[:len(data)/2],
		"edited":    bytes.Replace(data, []byte(`"new_run": `), []byte(`"new_run": 1`), 1),
		"version":   bytes.Replace(data, []byte(`"plan_version": 1`), []byte(`"plan_version": 2`), 1),
		"not json":  []byte("format=local\n"),
	} {
		if _, err := reshard.ParsePlan("plan.json", bad); !errors.As(err, &pfe) {
			t.Errorf("%s plan: %v, want a PlanFileError", name, err)
		}
	}
}

// TestVerifyPlanDifferences: --verify-plan on a directory resharded
// without the plan's count, or not resharded, lists differences.
func TestVerifyPlanDifferences(t *testing.T) {
	dir := genDir(t, 3, 200, 45)
	p := makePlan(t, dir, 5)
	chk, err := reshard.VerifyPlan(context.Background(), vfs.Default, dir, p, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if chk.OK() || !strings.Contains(chk.Differences[0], "3 shards, the plan goes to 5") {
		t.Fatalf("verify-plan before the reshard: %q", chk.Differences)
	}
	doReshard(t, dir, 5, reshard.Options{})
	moved := p.Renumbered.All()
	moved[0].NewRun++ // as if the plan had said another number
	p.Renumbered = reshard.NewTestList(t.TempDir(), 1, moved...)
	chk, err = reshard.VerifyPlan(context.Background(), vfs.Default, dir, p, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if chk.OK() {
		t.Fatal("verify-plan found no difference with a plan that moved a run elsewhere")
	}
}

// wholePlan is the plan file rendered whole in memory, as MarshalPlan did
// before it streamed: the reference WritePlan must match byte for byte.
func wholePlan(t testing.TB, p *reshard.Plan) []byte {
	t.Helper()
	c := *p
	c.Checksum = ""
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	c.Checksum = hex.EncodeToString(sum[:])
	if data, err = json.MarshalIndent(&c, "", "  "); err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

// TestPlanFileStreamed: a plan's file, its lists in memory or spilled
// (a one-byte budget), is byte for byte the whole rendering; read back
// from the file with its lists spilling, it renders to the same bytes,
// and every planned run and token change comes back in order.
func TestPlanFileStreamed(t *testing.T) {
	src := genDir(t, 4, 400, 46)
	for _, memory := range []int64{0, 1} {
		rep := doReshard(t, src, 3, reshard.Options{DryRun: true, MakePlan: true, Memory: memory, Scratch: t.TempDir()})
		p := rep.Plan
		if p.Renumbered.Len() == 0 || p.Tokens.Len() == 0 {
			t.Fatalf("memory %d: %d renumbered, %d tokens: the workload tests nothing", memory, p.Renumbered.Len(), p.Tokens.Len())
		}
		data, err := reshard.MarshalPlan(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := wholePlan(t, p); !bytes.Equal(data, want) {
			t.Fatalf("memory %d: the streamed plan differs from the whole rendering", memory)
		}
		path := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := reshard.ReadPlan(vfs.Default, path, t.TempDir(), 1)
		if err != nil {
			t.Fatalf("memory %d: reading the plan back: %v", memory, err)
		}
		again, err := reshard.MarshalPlan(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("memory %d: the plan read back renders differently", memory)
		}
		if !slices.Equal(back.Renumbered.All(), p.Renumbered.All()) || !slices.Equal(back.Tokens.All(), p.Tokens.All()) {
			t.Fatalf("memory %d: the lists read back differ", memory)
		}
		if err := back.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// bigPlan is a plan of 8 to 3 shards with n planned runs and n token
// changes, its lists spilling under dir past budget bytes each.
func bigPlan(dir string, budget int64, n int) *reshard.Plan {
	p := &reshard.Plan{Version: reshard.PlanVersion, Dir: "/d", OldShards: 8, NewShards: 3,
		Identity:   reshard.Fingerprint{Shards: 8},
		Counts:     reshard.Counts{Runs: map[string]int64{}},
		Renumbered: reshard.NewTestList[reshard.PlannedRun](filepath.Join(dir, "r"), budget),
		Tokens:     reshard.NewTestList[reshard.TokenChange](filepath.Join(dir, "t"), budget),
		Shards:     []reshard.ShardTotals{{Shard: 0}, {Shard: 1}, {Shard: 2}}}
	for i := range n {
		id := fmt.Sprintf("workflow-%d", i)
		err := p.Renumbered.Add(reshard.PlannedRun{WorkflowID: id, Gen: uint32(i % 5), State: "parked", OldShard: i % 8,
			OldRun: uint64(i), NewShard: i % 3, NewRun: uint64(i) + 1<<20, OldKey: id + "/1/", NewKey: id + "/2/"})
		if err == nil {
			err = p.Tokens.Add(reshard.TokenChange{WorkflowID: id, Position: uint32(i), Old: "t-old-" + id, New: "t-new-" + id})
		}
		if err != nil {
			panic(err)
		}
	}
	return p
}

// TestPlanFileStaysFlat: keeping a plan of 10,000 and of 100,000 planned
// runs and token changes, writing its file and reading it back takes
// about the same heap, not ten times it: the lists spill, the file is
// streamed both ways. Held as slices, and written and read whole, the
// larger plan alone would be tens of MB.
func TestPlanFileStaysFlat(t *testing.T) {
	if testtier.Race {
		t.Skip("a heap measurement, a minute under -race; .ci/run runs this test without -race")
	}
	if testing.Short() {
		t.Skip("writes and reads plans of 100,000 runs")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(5)) // the peak is what is held
	var peaks []uint64
	sizes := []int{10_000, 100_000}
	for _, n := range sizes {
		dir := t.TempDir()
		path := filepath.Join(dir, "plan.json")
		peaks = append(peaks, peakHeapDuring(100*time.Microsecond, func() {
			p := bigPlan(dir, 1<<20, n)
			err := meta.ReplaceFileWith(vfs.Default, path, func(w io.Writer) error { return reshard.WritePlan(w, p) })
			if err == nil {
				err = p.Close()
			}
			if err != nil {
				t.Error(err)
				return
			}
			back, err := reshard.ReadPlan(vfs.Default, path, dir, 8<<20) // a list's share: 512 KiB
			if err != nil {
				t.Error(err)
				return
			}
			if back.Renumbered.Len() != int64(n) || back.Tokens.Len() != int64(n) {
				t.Errorf("%d entries written, %d and %d read back", n, back.Renumbered.Len(), back.Tokens.Len())
			}
			if err := back.Close(); err != nil {
				t.Error(err)
			}
		}))
	}
	t.Logf("peak heap writing and reading the plan: %.2f MiB at %d entries, %.2f MiB at %d", float64(peaks[0])/(1<<20), sizes[0], float64(peaks[1])/(1<<20), sizes[1])
	if peaks[1] > 2*peaks[0]+4<<20 {
		t.Errorf("peak heap writing and reading the plan grew from %d to %d bytes with ten times the entries", peaks[0], peaks[1])
	}
}
