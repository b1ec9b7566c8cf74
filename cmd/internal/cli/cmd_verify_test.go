package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// makeDataDir writes a small data directory with n shards: a parent that
// started a child on whatever shard its ID hashes to, the child's result
// delivered, a signal left unacknowledged, and a tombstone. It checkpoints
// halfway so that there is both a store and a log tail.
func makeDataDir(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	db, err := journal.Create(vfs.Default, dir, journal.CreateOptions{Shards: n, Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	next := map[int]model.RunNo{}
	commit := func(ops ...journal.ShardOp) {
		t.Helper()
		if err := db.Commit(ops); err != nil {
			t.Fatal(err)
		}
	}
	start := func(id string, rec model.Record) model.RunRef {
		s := model.ShardOf(id, n)
		if next[s] == 0 {
			next[s] = 1
		}
		no := next[s]
		next[s]++
		rec.Kind, rec.WorkflowID, rec.Gen = model.KindStart, id, 1
		commit(journal.ShardOp{Shard: s, Op: model.Op{Kind: model.OpStart, Run: no, Rec: rec}})
		return model.RunRef{Shard: s, Run: no}
	}
	add := func(ref model.RunRef, rec model.Record) {
		commit(journal.ShardOp{Shard: ref.Shard, Op: model.Op{Kind: model.OpAppend, Run: ref.Run, Rec: rec}})
	}
	p := start("parent", model.Record{Type: "P", Time: 10})
	add(p, model.Record{Kind: model.KindChild, Pos: 1, WorkflowID: "kid", Type: "K", MsgID: "parent/1/c1"})
	commit(journal.ShardOp{Shard: model.ShardOf("kid", n), Op: model.Op{Kind: model.OpSeen, MsgID: "parent/1/c1", WorkflowID: "kid"}})
	k := start("kid", model.Record{Type: "K", Time: 11, Origin: model.OriginChild,
		Parent: model.ParentRef{Shard: p.Shard, Run: p.Run, Pos: 1}, ParentID: "parent"})
	commit(journal.ShardOp{Shard: p.Shard, Op: model.Op{Kind: model.OpAck, MsgID: "parent/1/c1"}})
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	add(k, model.Record{Kind: model.KindTimer, Pos: 1, Name: "nap", Time: 500})
	add(k, model.Record{Kind: model.KindFired, Pos: 2, Ref: 1, Time: 500})
	add(k, model.Record{Kind: model.KindDone, Pos: 3, Status: model.StatusOK, Time: 501})
	add(p, model.Record{Kind: model.KindSend, Pos: 2, WorkflowID: "elsewhere", Name: "ping", MsgID: "parent/1/s2"})
	o := start("old", model.Record{Type: "O", Time: 5})
	add(o, model.Record{Kind: model.KindDone, Pos: 1, Status: model.StatusFailed, Time: 6})
	commit(journal.ShardOp{Shard: o.Shard, Op: model.Op{Kind: model.OpTombstone, Run: o.Run}})
	return dir
}

func TestVerifyCleanDirectory(t *testing.T) {
	dir := makeDataDir(t, 3)
	out, errOut, code := runFusee(t, nil, "verify", dir)
	if code != 0 || out != "ok: 3 shards, 3 runs, no findings\n" || !regexp.MustCompile(`^verify: count: 3/3 runs done in [0-9.]+s( \([0-9.k]+ runs/s\))?\nverify: check: 3/3 runs done in [0-9.]+s( \([0-9.k]+ runs/s\))?\nverify: join: 3/3 shards done in [0-9.]+s( \([0-9.k]+ shards/s\))?\n$`).MatchString(errOut) {
		t.Fatalf("verify: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, _, code = runFusee(t, nil, "verify", "--json", dir)
	if code != 0 || out != `{"type":"summary","ok":true,"unreadable":false,"shards":3,"runs":3,"errors":0,"warnings":0,"info":0}`+"\n" {
		t.Fatalf("verify --json: code %d\n%s", code, out)
	}
}

// A directory whose log is damaged inside acknowledged data is one
// "unreadable" finding and exit 1, in text and in JSON.
func TestVerifyUnreadableDirectory(t *testing.T) {
	dir := makeDataDir(t, 2)
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no log segments (%v)", err)
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+64 && i < len(b); i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(segs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runFusee(t, nil, "verify", dir)
	if code != 1 || !strings.HasPrefix(out, "directory: unreadable: ") {
		t.Fatalf("verify of a damaged log: code %d\n%s", code, out)
	}
	out, _, code = runFusee(t, nil, "verify", "--json", dir)
	ls := lines(out)
	var f struct{ Type, Kind, Severity string }
	if code != 1 || len(ls) != 2 || json.Unmarshal([]byte(ls[0]), &f) != nil || f.Type != "finding" || f.Kind != "unreadable" {
		t.Fatalf("verify --json of a damaged log: code %d\n%s", code, out)
	}
}

func TestVerifyRefusesDirectoryInUse(t *testing.T) {
	dir := makeDataDir(t, 2)
	db, _, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, cmd := range []string{"verify", "inspect", "dump"} {
		if _, errOut, code := runFusee(t, nil, cmd, dir); code != ExitInUse {
			t.Errorf("%s of a directory in use: exit %d, want %d\n%s", cmd, code, ExitInUse, errOut)
		}
	}
	if _, _, code := runFusee(t, nil, "verify", filepath.Join(dir, "nope")); code != ExitFailure {
		t.Errorf("verify of a missing directory: exit %d", code)
	}
}

func TestInspectDirectory(t *testing.T) {
	dir := makeDataDir(t, 3)
	out, _, code := runFusee(t, nil, "inspect", dir)
	if code != 0 {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}
	for _, want := range []string{"format     local, log format 3, 3 shards", "oldest     old#1", "newest     kid#1", "total"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runFusee(t, nil, "inspect", "--json", dir)
	var sum struct {
		Shards int `json:"shards"`
		Total  struct {
			Runs, Running, Finished, Tombstone, Outbox int
			TailEntries                                int `json:"tail_entries"`
		} `json:"total"`
		PerShard []json.RawMessage `json:"per_shard"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != 0 {
		t.Fatalf("inspect --json: %v, exit %d\n%s", err, code, out)
	}
	tot := sum.Total
	if sum.Shards != 3 || len(sum.PerShard) != 3 || tot.Runs != 3 || tot.Running != 1 || tot.Finished != 1 ||
		tot.Tombstone != 1 || tot.Outbox != 2 || tot.TailEntries != 7 {
		t.Errorf("inspect --json totals: %+v\n%s", sum, out)
	}
}

// The logical dumps of the same workflows under 2 and 5 shards agree; the
// full dumps (with physical fields) do not.
func TestDumpLogicalAcrossShardCounts(t *testing.T) {
	a, b := makeDataDir(t, 2), makeDataDir(t, 5)
	la, _, ca := runFusee(t, nil, "dump", a, "--logical")
	lb, _, cb := runFusee(t, nil, "dump", b, "--logical")
	if ca != 0 || cb != 0 || la != lb || strings.Count(la, "\n") < 10 {
		t.Fatalf("logical dumps: exits %d %d\n%s\n----\n%s", ca, cb, la, lb)
	}
	if strings.Contains(la, `"phys"`) {
		t.Fatalf("logical dump with physical fields:\n%s", la)
	}
	pa, _, _ := runFusee(t, nil, "dump", a)
	pb, _, _ := runFusee(t, nil, "dump", b)
	if pa == pb || !strings.Contains(pa, `"phys"`) {
		t.Fatalf("physical dumps agree across shard counts or lack phys")
	}
}

// A shard directory beyond fusee.meta's count is reported (the engine
// never opens it), as a warning that fails verify, naming the directory.
func TestVerifyReportsExtraStore(t *testing.T) {
	dir := genDir(t)
	if err := os.CopyFS(filepath.Join(dir, "shards", "0004"), os.DirFS(filepath.Join(dir, "shards", "0002"))); err != nil {
		t.Fatal(err)
	}
	out, _, code := runFusee(t, nil, "verify", dir)
	if code != ExitFailure || !strings.Contains(out, "directory: extra-store: "+filepath.Join(dir, "shards", "0004")+" is a shard directory beyond the 3 shards fusee.meta gives") ||
		!strings.Contains(out, "0 errors, 1 warning") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	out, _, _ = runFusee(t, nil, "verify", "--json", dir)
	if !strings.Contains(out, `"kind":"extra-store","severity":"warning"`) {
		t.Errorf("--json:\n%s", out)
	}
}
