package sim

import (
	"sort"

	"github.com/fusee-dev/fusee/idcodec"
	"github.com/fusee-dev/fusee/journal/model"
)

// testReshard is a deliberately simple offline reshard for the oracle: it
// builds n new in-memory shards from old ones, moving every run to the
// shard its workflow ID hashes to and renumbering EVERY run (in an order
// scrambled by salt, so that no run keeps its number or its order), and
// rewrites every reference; dedup entries go to their receiving
// workflow's shard. The real reshard renumbers as little as it
// can; renumbering everything is the harsher test that the engine never
// depends on run numbers.
func testReshard(old []*model.Shard, n int, salt uint64) []*model.Shard {
	return testReshardSeen(old, n, salt, func(wf string) int { return model.ShardOf(wf, n) })
}

// testReshardSeen is testReshard with the new shard of each dedup entry
// chosen by seenShard from its receiving workflow ID (a test of the oracle
// misroutes them on purpose).
func testReshardSeen(old []*model.Shard, n int, salt uint64, seenShard func(wf string) int) []*model.Shard {
	type key struct {
		shard int
		run   model.RunNo
	}
	var all []key
	for _, s := range old {
		for no := range s.Runs {
			all = append(all, key{s.Index, no})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		hi := idcodec.Hash64(string(rune(all[i].shard))) ^ int64(all[i].run)*int64(salt|1)
		hj := idcodec.Hash64(string(rune(all[j].shard))) ^ int64(all[j].run)*int64(salt|1)
		if hi != hj {
			return hi < hj
		}
		if all[i].shard != all[j].shard {
			return all[i].shard < all[j].shard
		}
		return all[i].run < all[j].run
	})
	// The new stores are a new store generation: tokens carry it.
	var gen uint64
	for _, s := range old {
		gen = max(gen, s.StoreGen+1)
	}
	shards := make([]*model.Shard, n)
	for i := range shards {
		shards[i] = model.NewShard(i, n)
		shards[i].StoreGen = gen
	}
	moved := map[key]model.RunRef{}
	for _, k := range all {
		r := old[k.shard].Runs[k.run]
		ns := model.ShardOf(r.WorkflowID, n)
		no := shards[ns].NextRun
		shards[ns].NextRun++
		moved[k] = model.RunRef{Shard: ns, Run: no}
	}
	ref := func(r model.RunRef) model.RunRef {
		if r.IsZero() {
			return r
		}
		return moved[key{r.Shard, r.Run}]
	}
	parent := func(p model.ParentRef) model.ParentRef {
		if p.IsZero() {
			return p
		}
		m := moved[key{p.Shard, p.Run}]
		return model.ParentRef{Shard: m.Shard, Run: m.Run, Pos: p.Pos}
	}
	rewrite := func(j []model.Record) []model.Record {
		if j == nil {
			return nil
		}
		out := make([]model.Record, len(j))
		for i, r := range j {
			r.Parent, r.Pred, r.Next, r.By = parent(r.Parent), ref(r.Pred), ref(r.Next), ref(r.By)
			if r.Key.WorkflowID != "" {
				m := moved[key{model.ShardOf(r.Key.WorkflowID, len(old)), r.Key.Run}]
				r.Key.Run = m.Run
			}
			if r.Token.Run != 0 {
				m := moved[key{r.Token.Shard, r.Token.Run}]
				r.Token = model.Token{Gen: model.TokenGen(gen), Shard: m.Shard, Run: m.Run, Pos: r.Token.Pos}
			}
			out[i] = r
		}
		return out
	}
	latestGen := map[string]uint32{}
	for _, k := range all {
		r := old[k.shard].Runs[k.run]
		m := moved[k]
		nr := *r
		nr.No = m.Run
		nr.Renumbered = true
		nr.Journal = rewrite(r.Journal)
		s := shards[m.Shard]
		s.Runs[m.Run] = &nr
		if a, ok := old[k.shard].Archive[k.run]; ok {
			s.Archive[m.Run] = rewrite(a)
		}
		if g, ok := latestGen[r.WorkflowID]; !ok || r.Gen > g {
			latestGen[r.WorkflowID] = r.Gen
			s.ByID[r.WorkflowID] = m.Run
		}
	}
	for _, s := range old {
		for _, m := range s.SortedOutbox() {
			nm := *m
			nm.From = ref(m.From)
			nm.Parent = parent(m.Parent)
			ns := shards[nm.From.Shard]
			nm.Seq = ns.NextSeq
			ns.NextSeq++
			ns.Outbox[nm.ID] = &nm
		}
		// A dedup entry goes with the workflow the message was
		// delivered to: a repeat of the message is routed by that same
		// workflow ID, so it reaches exactly this shard.
		for id, wf := range s.Seen {
			shards[seenShard(wf)].Seen[id] = wf
		}
	}
	for _, s := range shards {
		s.RebuildTimers()
	}
	return shards
}
