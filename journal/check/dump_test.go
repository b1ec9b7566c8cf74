package check

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
	"pgregory.net/rapid"
)

func dumpOf(tb testing.TB, w *world) string {
	tb.Helper()
	var b bytes.Buffer
	if err := WriteLogicalDump(&b, w.shards); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// firstDiff shows where two dumps part, for failure messages.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "line " + itoa(i+1) + ":\n  " + al[i] + "\n  " + bl[i]
		}
	}
	return "one dump is a prefix of the other (" + itoa(len(al)) + " vs " + itoa(len(bl)) + " lines)"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// The same logical content under different shard counts and different run
// numbers dumps byte for byte the same.
func TestDumpInvariantAcrossShardCounts(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, 8} {
		ws := randomWorlds(t, seed, 400, 1, 3, 4, 7, 16)
		want := dumpOf(t, ws[0])
		if strings.Count(want, "\n") < 100 {
			t.Fatalf("seed %d: a dump of %d lines is too small to prove anything", seed, strings.Count(want, "\n"))
		}
		for _, w := range ws[1:] {
			if got := dumpOf(t, w); got != want {
				t.Fatalf("seed %d: %d shards and %d shards dump differently: %s", seed, ws[0].n, w.n, firstDiff(want, got))
			}
		}
	}
}

// Property: for any workload and any two shard counts, the dumps agree and
// the physical dumps do not (they carry shard and run numbers).
func TestDumpInvariantProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		steps := rapid.IntRange(0, 300).Draw(rt, "steps")
		n1 := rapid.IntRange(1, 12).Draw(rt, "n1")
		n2 := rapid.IntRange(1, 12).Draw(rt, "n2")
		ws := randomWorlds(t, seed, steps, n1, n2)
		a, b := dumpOf(t, ws[0]), dumpOf(t, ws[1])
		if a != b {
			rt.Fatalf("%d vs %d shards: %s", n1, n2, firstDiff(a, b))
		}
		for _, w := range ws {
			if fs := Verify(w.state()); len(fs) != 0 {
				rt.Fatalf("%d shards: a valid state has findings: %v", w.n, fs)
			}
		}
	})
}

// Every line of the dump is one JSON object with a "t" member, and no
// physical member appears in the logical dump.
func TestDumpLinesAreJSONObjects(t *testing.T) {
	w := randomWorlds(t, 11, 300, 4)[0]
	seenT := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(dumpOf(t, w), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		typ, _ := obj["t"].(string)
		seenT[typ] = true
		if _, ok := obj["phys"]; ok {
			t.Fatalf("logical dump line with phys: %s", line)
		}
	}
	for _, typ := range []string{"run", "rec", "timer", "msg", "seen"} {
		if !seenT[typ] {
			t.Errorf("no %q line in the dump of a 300-step workload", typ)
		}
	}
	var b bytes.Buffer
	if err := WriteDump(&b, w.shards, DumpOptions{Physical: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `{"t":"shard","phys":{"shard":0,"count":4,`) || !strings.Contains(b.String(), `"renumbered":true`) {
		t.Fatalf("physical dump lacks shard lines or the renumbered flag:\n%.2000s", b.String())
	}
}

// References are rendered through run identities.
func TestDumpRendersReferencesInvariantly(t *testing.T) {
	w := newWorld(t, 4, 99)
	p := w.start("parent", "P", model.OriginFresh, model.ParentRef{}, "", nil, 1)
	msg := w.child(p, "kid", "K", []byte("in"))
	w.deliver(msg, true, 2)
	kid := ident{"kid", 1}
	w.step(kid, "s", nil)
	w.async(kid, "ext")
	d := dumpOf(t, w)
	for _, want := range []string{
		`{"t":"rec","run":"kid#1","pos":0,"kind":"start","time":2,"workflow_id":"kid","type":"K","attempt":1,"origin":"child","gen":1,"parent":"parent#1@1","parent_id":"parent","payload":"in"}`,
		`{"t":"rec","run":"kid#1","pos":1,"kind":"step","name":"s","status":"ok","attempt":1,"key":"kid#1@1"}`,
		`{"t":"rec","run":"kid#1","pos":2,"kind":"async","name":"ext","token":"kid#1@2"}`,
		`{"t":"seen","id":"parent/1/c1","workflow_id":"kid"}`,
	} {
		if !strings.Contains(d, want+"\n") {
			t.Errorf("dump lacks\n  %s\nin\n%s", want, d)
		}
	}
	// A reference to a run that is gone renders as dangling.
	delete(w.shards[model.ShardOf("parent", 4)].Runs, w.ref(p).Run)
	if d := dumpOf(t, w); !strings.Contains(d, `"parent":"dangling"`) {
		t.Errorf("a parent reference to a missing run is not dangling:\n%s", d)
	}
}

// Changing any one logical fact changes the dump.
func TestDumpSeesEveryLogicalChange(t *testing.T) {
	mutations := []struct {
		name   string
		mutate func(w *world)
	}{
		{"record payload", func(w *world) {
			r := firstRun(w, hasRecord(model.KindStep))
			r.Journal[len(r.Journal)-1].Payload = []byte("x")
		}},
		{"record name", func(w *world) { r := firstRun(w, hasRecord(model.KindStep)); lastOf(r, model.KindStep).Name += "!" }},
		{"run state", func(w *world) { firstRun(w, inState(model.StateRunning)).State = model.StateParked }},
		{"run status", func(w *world) { firstRun(w, inState(model.StateFinished)).Status = model.StatusFailed + 1 }},
		{"run type", func(w *world) { firstRun(w, inState(model.StateRunning)).Type += "!" }},
		{"start time", func(w *world) { firstRun(w, inState(model.StateRunning)).Started++ }},
		{"parent ref", func(w *world) {
			r := firstRun(w, func(r *model.Run) bool { return len(r.Journal) > 0 && !r.Journal[0].Parent.IsZero() })
			r.Journal[0].Parent.Pos++
		}},
		{"key ref", func(w *world) { lastOf(firstRun(w, hasRecord(model.KindStep)), model.KindStep).Key.Pos++ }},
		{"archive record", func(w *world) {
			for _, s := range w.shards {
				for no, a := range s.Archive {
					a[0].Time++
					s.Archive[no] = a
					return
				}
			}
			panic("no archive")
		}},
		{"outbox message", func(w *world) {
			for _, s := range w.shards {
				for _, m := range s.Outbox {
					m.Target += "!"
					return
				}
			}
			panic("no message")
		}},
		{"seen entry", func(w *world) {
			for _, s := range w.shards {
				for id := range s.Seen {
					delete(s.Seen, id)
					return
				}
			}
			panic("no seen entry")
		}},
		{"outbox message's parent ID", func(w *world) {
			for _, s := range w.shards {
				for _, m := range s.Outbox {
					if m.ParentID != "" {
						m.ParentID += "!"
						return
					}
				}
			}
			panic("no message with a parent")
		}},
		{"outbox message's send time", func(w *world) {
			for _, s := range w.shards {
				for _, m := range s.Outbox {
					m.Sent++
					return
				}
			}
			panic("no message")
		}},
		{"seen entry's workflow", func(w *world) {
			for _, s := range w.shards {
				for id := range s.Seen {
					s.Seen[id] += "!"
					return
				}
			}
			panic("no seen entry")
		}},
		{"timer", func(w *world) {
			for _, s := range w.shards {
				for k := range s.Timers {
					delete(s.Timers, k)
					return
				}
			}
			panic("no timer")
		}},
		{"index", func(w *world) {
			for _, s := range w.shards {
				for id := range s.ByID {
					delete(s.ByID, id)
					return
				}
			}
		}},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			ws := randomWorlds(t, 21, 500, 3, 5)
			before := dumpOf(t, ws[1])
			m.mutate(ws[0])
			if a, b := dumpOf(t, ws[0]), before; a == b {
				t.Fatalf("the dump did not change")
			}
		})
	}
}

func firstRun(w *world, keep func(r *model.Run) bool) *model.Run {
	for _, x := range w.idents() {
		if r := w.run(x); keep(r) {
			return r
		}
	}
	panic("no run matches")
}

func inState(st model.RunState) func(*model.Run) bool {
	return func(r *model.Run) bool { return r.State == st }
}

func hasRecord(k model.Kind) func(*model.Run) bool {
	return func(r *model.Run) bool { return lastOf(r, k) != nil }
}

func lastOf(r *model.Run, k model.Kind) *model.Record {
	for i := len(r.Journal) - 1; i >= 0; i-- {
		if r.Journal[i].Kind == k {
			return &r.Journal[i]
		}
	}
	return nil
}
