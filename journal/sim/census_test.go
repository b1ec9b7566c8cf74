package sim

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal"
	"github.com/fusee-dev/fusee/journal/model"
)

// TestGenExercisesFormat: a generated directory of 2000 runs holds every
// record kind, message kind, origin, status, state and reference kind, a
// log tail after the last checkpoint and messages whose receiver has seen
// them but whose acknowledgement was lost; after `sim drive` every run is
// finished and every outbox empty.
func TestGenExercisesFormat(t *testing.T) {
	dir, rep := genDir(t, GenOptions{Shards: 5, Runs: 2000, Seed: 2024})
	c := rep.Census
	js, _ := json.Marshal(c)
	t.Logf("census: %s", js)
	if c.Runs != 2000 {
		t.Errorf("runs: %d, want 2000", c.Runs)
	}
	need := func(what string, m map[string]int, names ...string) {
		t.Helper()
		for _, n := range names {
			if m[n] == 0 {
				t.Errorf("%s %q: none in the generated directory", what, n)
			}
		}
	}
	var kinds, msgs, statuses, origins []string
	for k := model.KindStart; k <= model.KindDone; k++ {
		kinds = append(kinds, k.String())
	}
	for k := model.MsgStartChild; k <= model.MsgUpdateResult; k++ {
		msgs = append(msgs, k.String())
	}
	for s := model.StatusOK; s <= model.StatusReset; s++ {
		statuses = append(statuses, s.String())
	}
	for o := model.OriginFresh; o <= model.OriginRestart; o++ {
		origins = append(origins, o.String())
	}
	need("record kind", c.Records, kinds...)
	need("message kind (outboxes)", c.Messages, msgs...)
	need("run status", c.Statuses, statuses...)
	need("origin", c.Origins, origins...)
	need("state", c.States, "running", "parked", "finished", "tombstone")
	need("reference", c.Refs, RefParent, RefPred, RefNext, RefCancelBy, RefSignalBy, RefKey, RefToken,
		RefCaller, RefUpdateExtern, RefMsgFrom, RefMsgParent)
	if c.SeenUnacked == 0 {
		t.Errorf("no message is both seen by its receiver and still in its sender's outbox")
	}
	if c.Timers == 0 || c.Archived == 0 {
		t.Errorf("timers %d, archived records %d: want some of each", c.Timers, c.Archived)
	}
	// Pending work of every kind a reshard must move.
	var pending model.Pending
	for _, s := range openState(t, dir) {
		for _, r := range s.Runs {
			if r.State != model.StateRunning && r.State != model.StateParked {
				continue
			}
			p := model.PendingOf(r)
			pending.Timers = append(pending.Timers, p.Timers...)
			pending.Waits = append(pending.Waits, p.Waits...)
			pending.Children = append(pending.Children, p.Children...)
			pending.Updates = append(pending.Updates, p.Updates...)
			pending.Asyncs = append(pending.Asyncs, p.Asyncs...)
			pending.Signals = append(pending.Signals, p.Signals...)
		}
	}
	for what, n := range map[string]int{"timers": len(pending.Timers), "waits": len(pending.Waits),
		"children": len(pending.Children), "updates": len(pending.Updates), "asyncs": len(pending.Asyncs),
		"buffered signals": len(pending.Signals)} {
		if n == 0 {
			t.Errorf("no unfinished run has pending %s", what)
		}
	}

	db, rec, err := journal.Open(vfs.Default, dir, journal.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	replayed := 0
	for _, s := range rec.Shards {
		replayed += s.Replayed
	}
	db.Close()
	if replayed == 0 {
		t.Errorf("recovery replayed no log entries: want a log tail after the last checkpoint")
	}

	drep, err := Drive(context.Background(), vfs.Default, dir, DriveOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	d := drep.Census
	if d.States["running"]+d.States["parked"] != 0 || len(d.Messages) != 0 {
		t.Errorf("after drive: states %v, outbox %v; want every run finished and no message left", d.States, d.Messages)
	}
	if d.Runs <= c.Runs {
		t.Errorf("drive started no run (%d before, %d after): pending children and continuations must start", c.Runs, d.Runs)
	}
}
