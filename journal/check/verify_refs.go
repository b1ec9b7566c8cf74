package check

import (
	"github.com/fusee-dev/fusee/journal/model"
)

// references checks every typed reference in a run's records.
func (v *verifier) references(s *sh, r *model.Run, j []model.Record) {
	add := func(k Kind, format string, args ...any) { v.addf(k, s.Index, r.No, format, args...) }
	for i := range j {
		rec := &j[i]
		switch rec.Kind {
		case model.KindStart:
			if i == 0 {
				v.startRefs(s, r, rec)
			}
		case model.KindDone:
			v.nextRef(s, r, rec)
		case model.KindSignal, model.KindCancel:
			if !rec.By.IsZero() {
				v.resolve(s, r, rec, "sender", rec.By)
			}
		case model.KindStep:
			if k := rec.Key; k.WorkflowID != "" && (k.WorkflowID != r.WorkflowID || k.Run != r.No) {
				add(KindKey, "step at %d ran with key %s, this run's keys are %s", rec.Pos, k, r.Key(k.Pos))
			}
		case model.KindAsync:
			// A token carries the store generation that minted it, so one
			// minted before the store was rebuilt (a reshard) is refused.
			want := model.Token{Gen: model.TokenGen(s.StoreGen), Shard: s.Index, Run: r.No, Pos: rec.Pos}
			if t := rec.Token; t.Run != 0 && t != want {
				add(KindToken, "async at %d has token %s (store generation %d mod 64, shard %d, run %d, position %d), want %s (store generation %d)",
					rec.Pos, t, t.Gen, t.Shard, t.Run, t.Pos, want, s.StoreGen)
			}
		case model.KindUpdate:
			if rec.Parent.IsZero() {
				continue
			}
			if c := v.located(s, r, rec, "caller", rec.Parent.RunRef(), rec.ParentID); c != nil && c.WorkflowID != rec.ParentID {
				add(KindCaller, "update at %d names caller %s, a run of %q, but says the caller is %q",
					rec.Pos, rec.Parent, c.WorkflowID, rec.ParentID)
			}
		}
	}
}

// startRefs checks a Start record's origin, parent and predecessor.
func (v *verifier) startRefs(s *sh, r *model.Run, st *model.Record) {
	add := func(k Kind, format string, args ...any) { v.addf(k, s.Index, r.No, format, args...) }
	hasParent, hasPred := !st.Parent.IsZero(), !st.Pred.IsZero()
	switch st.Origin {
	case model.OriginChild:
		if !hasParent {
			add(KindOrigin, "origin child without a parent reference")
		}
	case model.OriginContinued, model.OriginReset, model.OriginRestart:
		if !hasPred {
			add(KindOrigin, "origin %s without a predecessor", st.Origin)
		}
		if st.Gen < 2 {
			add(KindOrigin, "origin %s in generation %d: a predecessor needs a generation before it", st.Origin, st.Gen)
		}
	}
	if hasParent && st.Origin != model.OriginChild {
		add(KindOrigin, "a parent reference with origin %s", st.Origin)
	}
	if hasPred && st.Origin != model.OriginContinued && st.Origin != model.OriginReset && st.Origin != model.OriginRestart {
		add(KindOrigin, "a predecessor with origin %s", st.Origin)
	}
	if hasParent {
		if p := v.locatedAt(s, r, st, "parent", st.Parent.RunRef(), st.ParentID, int(st.Parent.Pos)); p.r != nil {
			v.parentLanding(s, r, st, p)
		}
	}
	if hasPred {
		if st.Pred.Shard != s.Index && st.Pred.Run != model.NoSuchRun {
			add(KindRefWrongShard, "predecessor %s is on another shard than its own workflow %q", st.Pred, r.WorkflowID)
		} else if p := v.resolve(s, r, st, "predecessor", st.Pred); p != nil {
			v.predecessor(s, r, st, p)
		}
	}
}

// parentLanding checks that a child's parent reference lands on the
// parent's Child record for this child.
func (v *verifier) parentLanding(s *sh, r *model.Run, st *model.Record, p target) {
	add := func(format string, args ...any) { v.addf(KindParent, s.Index, r.No, format, args...) }
	if p.r.WorkflowID != st.ParentID {
		add("parent %s is a run of %q, the start says the parent is %q", st.Parent, p.r.WorkflowID, st.ParentID)
		return
	}
	if !p.hist {
		return // reported on the parent itself
	}
	switch c := p.rec; {
	case c == nil:
		add("parent %s: the parent's journal has %d records", st.Parent, p.n)
	case c.Kind != model.KindChild:
		add("parent %s is a %s record, not child", st.Parent, c.Kind)
	case c.WorkflowID != r.WorkflowID:
		add("parent %s requested a child %q, not %q", st.Parent, c.WorkflowID, r.WorkflowID)
	}
}

// predecessor checks that Pred is the previous generation of this run's
// ID and ended the way the origin says.
func (v *verifier) predecessor(s *sh, r *model.Run, st *model.Record, p *model.Run) {
	add := func(format string, args ...any) { v.addf(KindPred, s.Index, r.No, format, args...) }
	if p.WorkflowID != r.WorkflowID || p.Gen+1 != r.Gen {
		add("predecessor %s is %q generation %d, want %q generation %d", st.Pred, p.WorkflowID, p.Gen, r.WorkflowID, r.Gen-1)
		return
	}
	var want model.Status
	switch st.Origin {
	case model.OriginContinued:
		want = model.StatusContinuedAsNew
	case model.OriginReset:
		want = model.StatusReset
	}
	switch {
	case p.State != model.StateFinished && p.State != model.StateTombstone:
		add("predecessor %s is %s, not finished", st.Pred, p.State)
	case want != model.StatusNone && p.Status != want:
		add("origin %s but predecessor %s ended %s", st.Origin, st.Pred, p.Status)
	}
}

// nextRef checks a Done record's next run.
func (v *verifier) nextRef(s *sh, r *model.Run, d *model.Record) {
	add := func(format string, args ...any) { v.addf(KindNext, s.Index, r.No, format, args...) }
	starts := d.Status == model.StatusContinuedAsNew || d.Status == model.StatusReset
	switch {
	case starts && d.Next.IsZero():
		add("ended %s without naming the next run", d.Status)
		return
	case !starts && !d.Next.IsZero():
		add("ended %s but names a next run %s", d.Status, d.Next)
		return
	case d.Next.IsZero():
		return
	case d.Next.Shard != s.Index && d.Next.Run != model.NoSuchRun:
		v.addf(KindRefWrongShard, s.Index, r.No, "next run %s is on another shard than its own workflow %q", d.Next, r.WorkflowID)
		return
	}
	t := v.resolveAt(s, r, d, "next run", d.Next, 0)
	n := t.r
	if n == nil {
		return
	}
	if n.WorkflowID != r.WorkflowID || n.Gen != r.Gen+1 {
		add("next run %s is %q generation %d, want %q generation %d", d.Next, n.WorkflowID, n.Gen, r.WorkflowID, r.Gen+1)
		return
	}
	if first := t.rec; first != nil && first.Kind == model.KindStart {
		back := model.RunRef{Shard: s.Index, Run: r.No}
		if first.Pred != back {
			add("next run %s names predecessor %s, not this run", d.Next, first.Pred)
		}
	}
}

// resolve looks a reference up, reporting a bad shard, an unissued number
// or a dangling reference; it returns the run when there is one.
func (v *verifier) resolve(s *sh, r *model.Run, rec *model.Record, what string, ref model.RunRef) *model.Run {
	return v.resolveAt(s, r, rec, what, ref, -1).r
}

// resolveAt is resolve that also reads record pos of the run's history
// when pos is not negative.
func (v *verifier) resolveAt(s *sh, r *model.Run, rec *model.Record, what string, ref model.RunRef, pos int) target {
	t, res, err := v.w.lookup(ref.Shard, ref.Run, pos)
	if err != nil {
		v.fail(err)
		return target{slot: -1}
	}
	switch res {
	case badShard:
		v.addf(KindRefBadShard, s.Index, r.No, "%s at %d: %s %s names shard %d of %d", rec.Kind, rec.Pos, what, ref, ref.Shard, len(v.w.srcs))
	case unissued:
		v.addf(KindRefUnissued, s.Index, r.No, "%s at %d: %s %s, but shard %d's next run number is %d",
			rec.Kind, rec.Pos, what, ref, ref.Shard, v.w.infos[t.slot].NextRun)
	case dangling:
		v.addf(KindRefDangling, s.Index, r.No, "%s at %d: %s %s no longer exists", rec.Kind, rec.Pos, what, ref)
	case noSuchRun:
		v.addf(KindRefDangling, s.Index, r.No, "%s at %d: %s %s is the reserved number for no run: a reshard found the run it named gone",
			rec.Kind, rec.Pos, what, ref)
	}
	return t
}

// located resolves a reference that comes with the workflow ID of its
// target, checking the target's shard against that ID first.
func (v *verifier) located(s *sh, r *model.Run, rec *model.Record, what string, ref model.RunRef, id string) *model.Run {
	return v.locatedAt(s, r, rec, what, ref, id, -1).r
}

// locatedAt is located that also reads record pos of the run's history
// when pos is not negative.
func (v *verifier) locatedAt(s *sh, r *model.Run, rec *model.Record, what string, ref model.RunRef, id string, pos int) target {
	if _, ok := v.w.byIndex[ref.Shard]; ok && id != "" && ref.Run != model.NoSuchRun {
		if want := model.ShardOf(id, v.w.shardCount); want != ref.Shard {
			v.addf(KindRefWrongShard, s.Index, r.No, "%s at %d: %s %s is on shard %d, but %q lives on shard %d",
				rec.Kind, rec.Pos, what, ref, ref.Shard, id, want)
			return target{slot: -1}
		}
	}
	return v.resolveAt(s, r, rec, what, ref, pos)
}
