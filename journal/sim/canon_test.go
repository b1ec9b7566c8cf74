package sim

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/fusee-dev/fusee/journal/check"
	"github.com/fusee-dev/fusee/journal/model"
)

// logical is the oracle's view of shards: the official logical dump
// (check.WriteLogicalDump, what `fusee dump --logical` prints) followed by
// this package's own canon rendering, a second opinion written
// independently. Both are free of shard counts and run numbers.
func logical(t testing.TB, shards []*model.Shard) []string {
	t.Helper()
	var b bytes.Buffer
	if err := check.WriteLogicalDump(&b, shards); err != nil {
		t.Fatalf("logical dump: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i := range lines {
		lines[i] = "dump " + lines[i]
	}
	out := append(lines, canon(shards)...)
	sort.Strings(out)
	return out
}

// canon renders shards as sorted lines that do not depend on the shard
// count or on run numbers: runs by identity (workflow ID, generation),
// references as the identity of the run they name. Two directories hold
// the same logical state exactly when their canon lines are equal.
func canon(shards []*model.Shard) []string {
	id := func(shard int, run model.RunNo) string {
		if run == 0 {
			return "-"
		}
		if shard < 0 || shard >= len(shards) {
			return "dangling"
		}
		r, ok := shards[shard].Runs[run]
		if !ok {
			return "dangling"
		}
		return fmt.Sprintf("%s#%d", r.WorkflowID, r.Gen)
	}
	var out []string
	rec := func(owner string, r model.Record) string {
		refs := fmt.Sprintf("parent=%s@%d pred=%s next=%s by=%s", id(r.Parent.Shard, r.Parent.Run), r.Parent.Pos,
			id(r.Pred.Shard, r.Pred.Run), id(r.Next.Shard, r.Next.Run), id(r.By.Shard, r.By.Run))
		if r.Key.WorkflowID != "" {
			// A Ctx::key names a run by workflow ID and number.
			sh := model.ShardOf(r.Key.WorkflowID, len(shards))
			refs += fmt.Sprintf(" key=%s@%d", id(sh, r.Key.Run), r.Key.Pos)
		}
		if r.Token.Run != 0 {
			refs += fmt.Sprintf(" token=%s@%d", id(r.Token.Shard, r.Token.Run), r.Token.Pos)
		}
		r.Parent, r.Pred, r.Next, r.By, r.Key, r.Token = model.ParentRef{}, model.RunRef{}, model.RunRef{}, model.RunRef{}, model.CtxKey{}, model.Token{}
		return fmt.Sprintf("%s %05d %s %+v %s", owner, r.Pos, r.Kind, r, refs)
	}
	for _, s := range shards {
		for _, r := range s.Runs {
			name := fmt.Sprintf("%s#%d", r.WorkflowID, r.Gen)
			out = append(out, fmt.Sprintf("%s run type=%s state=%s status=%s started=%d finished=%d",
				name, r.Type, r.State, r.Status, r.Started, r.Finished))
			j := r.Journal
			if r.State == model.StateTombstone {
				if r.Journal != nil {
					out = append(out, name+" tombstone with a journal")
				}
				j = s.Archive[r.No]
			}
			for _, x := range j {
				out = append(out, rec(name, x))
			}
		}
		for wf, no := range s.ByID {
			out = append(out, fmt.Sprintf("%s latest=%s", wf, id(s.Index, no)))
		}
		for _, m := range s.Outbox {
			out = append(out, fmt.Sprintf("msg %s kind=%s from=%s target=%s parent=%s@%d parent_id=%s type=%s name=%s status=%s deadline=%d sent=%d payload=%q",
				m.ID, m.Kind, id(m.From.Shard, m.From.Run), m.Target, id(m.Parent.Shard, m.Parent.Run), m.Parent.Pos,
				m.ParentID, m.Type, m.Name, m.Status, m.Deadline, m.Sent, m.Payload))
		}
		for msg, wf := range s.Seen {
			out = append(out, "seen "+msg+" to "+wf)
		}
		for k := range s.Timers {
			out = append(out, fmt.Sprintf("timer %s@%d at=%d", id(s.Index, k.Run), k.Pos, k.At))
		}
	}
	// A dedup entry held by two shards appears twice: an engine keeps
	// each on its receiving workflow's shard only, and a reshard must too
	// (a copy elsewhere is a sign that it was routed wrong).
	sort.Strings(out)
	return out
}

// sameCanon fails the test at the first difference between two canon
// renderings.
func sameCanon(t testing.TB, what string, a, b []string) {
	t.Helper()
	i, j := 0, 0
	var diffs []string
	for (i < len(a) || j < len(b)) && len(diffs) < 20 {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i++
			j++
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			diffs = append(diffs, "- "+a[i])
			i++
		default:
			diffs = append(diffs, "+ "+b[j])
			j++
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%s: logical states differ (%d vs %d lines):\n%s", what, len(a), len(b), strings.Join(diffs, "\n"))
	}
}
