package check

import "github.com/fusee-dev/fusee/journal/model"

// references checks every typed reference in a run's records that names
// another run: the reference goes into the join (refer, locate), and
// landed judges it once resolved.
func (v *verifier) references(s *sh, r *model.Run, j []model.Record) {
	for i := range j {
		rec := &j[i]
		switch rec.Kind {
		case model.KindStart:
			if i == 0 {
				v.startRefs(s, r, rec)
			}
		case model.KindDone:
			if nextToFollow(v.about(s, r), v.place(s), r, rec) {
				v.refer(s, r, rec, refNext, rec.Next, 0)
			}
		case model.KindSignal, model.KindCancel:
			if !rec.By.IsZero() {
				v.refer(s, r, rec, refSender, rec.By, -1)
			}
		case model.KindUpdate:
			if rec.Parent.IsZero() {
				continue
			}
			v.locate(s, r, rec, refCaller, rec.Parent.RunRef(), rec.ParentID, -1)
		}
	}
}

// startRefs follows a Start record's parent and predecessor.
func (v *verifier) startRefs(s *sh, r *model.Run, st *model.Record) {
	if !st.Parent.IsZero() {
		v.locate(s, r, st, refParent, st.Parent.RunRef(), st.ParentID, int(st.Parent.Pos))
	}
	if !st.Pred.IsZero() && predToFollow(v.about(s, r), v.place(s), r, st) {
		v.refer(s, r, st, refPred, st.Pred, -1)
	}
}

// report reports what resolving ref found when it is not a run: a bad
// shard, an unissued number or a dangling reference.
func (v *verifier) report(s *sh, r *model.Run, rec *model.Record, what string, ref model.RunRef, t target, res resolution) {
	var next model.RunNo
	if res == unissued {
		next = v.w.infos[t.slot].NextRun
	}
	resolutionRule(v.about(s, r), rec, what, ref, res, len(v.w.srcs), next)
}

// locate is refer for a reference that comes with the workflow ID of its
// target: the target's shard is checked against that ID first.
func (v *verifier) locate(s *sh, r *model.Run, rec *model.Record, c refCheck, ref model.RunRef, id string, pos int) {
	if _, ok := v.w.byIndex[ref.Shard]; ok && !onIDsShard(v.about(s, r), v.w.shardCount, rec, refWhat[c], ref, id) {
		return
	}
	v.refer(s, r, rec, c, ref, pos)
}
