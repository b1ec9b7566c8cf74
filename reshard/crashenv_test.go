package reshard_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/journal/sim"
	"github.com/fusee-dev/fusee/reshard"
)

// memDir is where the crash and fault tests keep their data directory on
// a memory filesystem.
const memDir = "/data"

// representativeDir generates a directory of shards shards on a fresh
// crashable memory filesystem (sim's workload: every record, message and
// reference kind), checkpoints it and adds, in the log tail, one run whose
// signal names a run that does not exist: a dangling reference, which no
// operation makes today. It returns the filesystem, synced as a cleanly
// closed directory leaves it.
func representativeDir(t testing.TB, shards, runs int, seed uint64) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewCrashableMem()
	ctx := context.Background()
	if _, err := sim.Generate(ctx, mem, memDir, sim.GenOptions{Shards: shards, Runs: runs, Seed: seed}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	db, _, err := journal.Open(mem, memDir, journal.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Run number gone is skipped (as if its run had been dropped): the
	// checkpoint records the shard's next run number above it, and the
	// new run's signal names it.
	s := db.Shards[0]
	gone := s.NextRun
	s.NextRun++
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	wf := idOn(t, "dangler", 0, shards)
	no := s.NextRun
	ops := []journal.ShardOp{
		{Shard: 0, Op: model.Op{Kind: model.OpStart, Run: no, Rec: model.Record{Kind: model.KindStart, WorkflowID: wf, Type: "hand", Time: db.Now, Gen: 1}}},
		{Shard: 0, Op: model.Op{Kind: model.OpAppend, Run: no, Rec: model.Record{Kind: model.KindSignal, Pos: 1, Time: db.Now,
			Name: "poke", MsgID: "sig-dangling", By: model.RunRef{Shard: 0, Run: gone}}}},
	}
	if err := db.Commit(ops); err != nil {
		t.Fatalf("adding the dangling reference: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return mem
}

// memDump is the logical dump of the directory on fs (the renumbering-
// invariant oracle).
func memDump(fs vfs.FS) (string, error) {
	st, err := check.Load(fs, memDir)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := check.WriteLogicalDump(&b, st.Shards); err != nil {
		return "", err
	}
	return b.String(), nil
}

// memDumpV2 is memDump of a log format 2 directory, recovered whole as
// the engine build that wrote it would (journal.ReadV2).
func memDumpV2(fs vfs.FS) (string, error) {
	st, err := journal.ReadV2(fs, memDir)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := check.WriteLogicalDump(&b, st.Shards); err != nil {
		return "", err
	}
	return b.String(), nil
}

// stepCounter is an errorfs injector that numbers every operation that
// changes the filesystem — create, write, sync, rename, remove, mkdir,
// link — and calls onStep with each before it happens. It injects
// nothing itself unless onStep returns an error.
type stepCounter struct {
	mu     sync.Mutex
	n      int
	onStep func(k int, op errorfs.Op) error
}

func (c *stepCounter) String() string { return fmt.Sprintf("step counter at %d", c.n) }

// isStep reports whether op changes the filesystem. Closing a file, the
// LOCK and a flush change nothing a crash could keep or lose.
func isStep(op errorfs.Op) bool {
	switch op.Kind {
	case errorfs.OpLock, errorfs.OpFileClose, errorfs.OpFileFlush:
		return false
	}
	return op.Kind.ReadOrWrite() == errorfs.OpIsWrite
}

func (c *stepCounter) MaybeError(op errorfs.Op) error {
	if !isStep(op) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.onStep == nil {
		return nil
	}
	return c.onStep(c.n, op)
}

// memVerifyDump loads the directory on fs once, runs the checker on it and
// returns its logical dump, or its problems.
func memVerifyDump(fs vfs.FS) (string, error) {
	st, err := check.Load(fs, memDir)
	if err != nil {
		return "", err
	}
	var problems []string
	for _, f := range check.Verify(st) {
		if f.Problem() {
			problems = append(problems, f.String())
		}
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("verify: %d problems:\n%s", len(problems), strings.Join(problems[:min(10, len(problems))], "\n"))
	}
	var b bytes.Buffer
	if err := check.WriteLogicalDump(&b, st.Shards); err != nil {
		return "", err
	}
	return b.String(), nil
}

// hashFiles lists every file under root on fs (but LOCK, which only tells
// who holds the directory, and, with skip, the top-level names skip
// lists) with its SHA-256, one "hash path" a line, in path order.
func hashFiles(fs vfs.FS, root string, skip ...string) (string, error) {
	var lines []string
	var walk func(rel string) error
	walk = func(rel string) error {
		p := fs.PathJoin(root, rel)
		names, err := fs.List(p)
		if err != nil {
			return err
		}
		for _, n := range names {
			r := n
			if rel != "" {
				r = rel + "/" + n
			} else if n == "LOCK" || slices.Contains(skip, n) {
				continue
			}
			st, err := fs.Stat(fs.PathJoin(root, r))
			if err != nil {
				return err
			}
			if st.IsDir() {
				if err := walk(r); err != nil {
					return err
				}
				continue
			}
			f, err := fs.Open(fs.PathJoin(root, r))
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%x %s", h.Sum(nil), r))
		}
		return nil
	}
	if err := walk(""); err != nil {
		return "", err
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

// lineDiff lists the lines only in want ("-") and only in got ("+").
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for l := range w {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range g {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// cloneGuard keeps the harness's power cuts (CrashClone) apart from Link.
// Pebble's MemFS.Link read-locks the MemFS's clone mutex twice; when a
// CrashClone taken by another goroutine (the step counter cutting power
// while a reshard writes two stores at once) waits between those two read
// locks, both wait forever. Links take cloneGuard's read lock, every clone
// its write lock, so a clone never starts while a Link is inside the MemFS.
var cloneGuard sync.RWMutex

// guardLinks wraps the filesystem under errorfs (below it, so that a power
// cut inside errorfs's hook never waits for a Link of its own goroutine).
func guardLinks(fs vfs.FS) vfs.FS { return linkGuardFS{fs} }

type linkGuardFS struct{ vfs.FS }

func (g linkGuardFS) Link(oldname, newname string) error {
	cloneGuard.RLock()
	defer cloneGuard.RUnlock()
	return g.FS.Link(oldname, newname)
}

// cloneNow is m.CrashClone(cfg) once no Link is inside a MemFS.
func cloneNow(m *vfs.MemFS, cfg vfs.CrashCloneCfg) *vfs.MemFS {
	cloneGuard.Lock()
	defer cloneGuard.Unlock()
	return m.CrashClone(cfg)
}

// reportLists renders a report's two lists, an entry a line, so that two
// reports can be compared list for list.
func reportLists(rep *reshard.Report) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	b.WriteString("renumbered_unfinished:\n")
	err := rep.Renumbered.Each(func(r *reshard.RenumberedRun) error { return enc.Encode(r) })
	if err != nil {
		return "", err
	}
	b.WriteString("token_changes:\n")
	err = rep.Tokens.Each(func(t *reshard.TokenChange) error { return enc.Encode(t) })
	return b.String(), err
}

// reversedLists is what an undo's report must list, given the lists of
// the reshard it undoes (reportLists): every renumbered run back (by its
// old shard and number, which are the undo's new ones) and every token
// change the other way, in the same order.
func reversedLists(lists string) string {
	var runs []reshard.RenumberedRun
	var tokens []reshard.TokenChange
	section := ""
	for _, line := range strings.Split(strings.TrimSuffix(lists, "\n"), "\n") {
		switch line {
		case "renumbered_unfinished:", "token_changes:":
			section = line
			continue
		}
		if section == "renumbered_unfinished:" {
			var r reshard.RenumberedRun
			_ = json.Unmarshal([]byte(line), &r)
			back := reshard.RenumberedRun{WorkflowID: r.WorkflowID, OldShard: r.NewShard, OldRun: r.NewRun, NewShard: r.OldShard, NewRun: r.OldRun,
				OldKey: r.NewKey, NewKey: r.OldKey, Tokens: []reshard.RunToken{}}
			for _, t := range r.Tokens {
				back.Tokens = append(back.Tokens, reshard.RunToken{Position: t.Position, Old: t.New, New: t.Old})
			}
			runs = append(runs, back)
			continue
		}
		var t reshard.TokenChange
		_ = json.Unmarshal([]byte(line), &t)
		tokens = append(tokens, reshard.TokenChange{WorkflowID: t.WorkflowID, Position: t.Position, Old: t.New, New: t.Old})
	}
	slices.SortStableFunc(runs, func(a, b reshard.RenumberedRun) int {
		return cmp.Or(cmp.Compare(a.NewShard, b.NewShard), cmp.Compare(a.NewRun, b.NewRun))
	})
	var b strings.Builder
	enc := json.NewEncoder(&b)
	b.WriteString("renumbered_unfinished:\n")
	for i := range runs {
		_ = enc.Encode(&runs[i])
	}
	b.WriteString("token_changes:\n")
	for i := range tokens {
		_ = enc.Encode(&tokens[i])
	}
	return b.String()
}
