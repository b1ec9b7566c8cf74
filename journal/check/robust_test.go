package check

import (
	"io"
	"reflect"
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
	"pgregory.net/rapid"
)

// mutateRecord sets one field of rec to a value drawn from t: the kind of
// damage a bad reshard or a bit flip behind a valid checksum could leave.
func mutateRecord(t *rapid.T, rec *model.Record, label string) {
	small := func() uint32 { return rapid.Uint32Range(0, 40).Draw(t, label+"-v") }
	switch rapid.IntRange(0, 12).Draw(t, label+"-field") {
	case 0:
		rec.Kind = model.Kind(rapid.IntRange(0, 25).Draw(t, label+"-kind"))
	case 1:
		rec.Pos = small()
	case 2:
		rec.Ref = small()
	case 3:
		rec.Gen = small()
	case 4:
		rec.Origin = model.Origin(small() % 7)
	case 5:
		rec.Status = model.Status(small() % 10)
	case 6:
		rec.Parent = model.ParentRef{Shard: int(small()%6) - 1, Run: model.RunNo(small()), Pos: small()}
	case 7:
		rec.Pred = model.RunRef{Shard: int(small() % 5), Run: model.RunNo(small())}
	case 8:
		rec.Next = model.RunRef{Shard: int(small() % 5), Run: model.RunNo(small())}
	case 9:
		rec.Key = model.CtxKey{WorkflowID: rapid.SampledFrom([]string{"", "x", rec.WorkflowID}).Draw(t, label+"-kid"), Run: model.RunNo(small()), Pos: small()}
	case 10:
		rec.Token = model.Token{Shard: int(small() % 5), Run: model.RunNo(small()), Pos: small()}
	case 11:
		rec.WorkflowID = rapid.SampledFrom([]string{"", "x", "parent", "kid"}).Draw(t, label+"-id")
	case 12:
		rec.MsgID = rapid.SampledFrom([]string{"", "m", "parent/1/s2"}).Draw(t, label+"-msg")
	}
}

// Whatever the damage, Verify and the dumps neither panic nor change the
// state, and give the same answer twice.
func TestVerifyAndDumpSurviveDamage(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64Range(1, 1<<20).Draw(rt, "seed")
		w := randomWorlds(t, seed, 150, rapid.IntRange(1, 5).Draw(rt, "shards"))[0]
		runs := w.idents()
		if len(runs) == 0 {
			return
		}
		damage(rt, w, runs)
		before := physDump(t, w)
		a, b := Verify(w.state()), Verify(w.state())
		if !reflect.DeepEqual(a, b) {
			rt.Fatalf("Verify is not deterministic")
		}
		if err := WriteLogicalDump(io.Discard, w.shards); err != nil {
			rt.Fatal(err)
		}
		Inspect(w.state())
		if after := physDump(t, w); after != before {
			rt.Fatalf("checking changed the state: %s", firstDiff(before, after))
		}
	})
}

// damage plants one to six random kinds of damage in w's runs (idents).
func damage(rt *rapid.T, w *world, runs []ident) {
	for i := range rapid.IntRange(1, 6).Draw(rt, "damages") {
		x := rapid.SampledFrom(runs).Draw(rt, "run")
		s, r := w.shard(x), w.run(x)
		label := "d" + itoa(i)
		switch rapid.IntRange(0, 7).Draw(rt, label) {
		case 0, 1, 2:
			if h := history(s, r); len(h) > 0 {
				mutateRecord(rt, &h[rapid.IntRange(0, len(h)-1).Draw(rt, label+"-rec")], label)
			}
		case 3:
			r.State = model.RunState(rapid.IntRange(0, 6).Draw(rt, label+"-state"))
		case 4:
			r.Gen = rapid.Uint32Range(0, 4).Draw(rt, label+"-gen")
		case 5:
			r.Journal = r.Journal[:rapid.IntRange(0, len(r.Journal)).Draw(rt, label+"-cut")]
		case 6:
			s.NextRun = model.RunNo(rapid.IntRange(0, 30).Draw(rt, label+"-next"))
		case 7:
			for _, m := range s.Outbox {
				m.From.Run = model.RunNo(rapid.IntRange(0, 30).Draw(rt, label+"-from"))
				m.Parent.Shard = rapid.IntRange(-1, 6).Draw(rt, label+"-pshard")
				break
			}
		}
	}
}
