package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/fusee-dev/fusee/journal/model"
)

// TestCompleteByToken: the outside world answers an async completion by its
// token alone; a token that names nothing pending is refused and changes
// nothing, and so is a token of another store generation (one handed out
// before a reshard) that names a pending completion's shard, run and
// position.
func TestCompleteByToken(t *testing.T) {
	_, b := genMem(t, GenOptions{Shards: 4, Runs: 400, Seed: 11})
	e := reopenMem(b, Config{})
	var pending, answered *model.Record
	for _, s := range b.sh {
		for _, r := range s.SortedRuns() {
			for i := range r.Journal {
				rec := &r.Journal[i]
				if rec.Kind != model.KindAsync {
					continue
				}
				live := r.State == model.StateRunning || r.State == model.StateParked
				if live && !isClosed(r.Journal, rec.Pos) && pending == nil {
					pending = rec
				}
				if isClosed(r.Journal, rec.Pos) && answered == nil {
					answered = rec
				}
			}
		}
	}
	if pending == nil || answered == nil {
		t.Fatal("the workload has no pending or no answered async completion")
	}
	tok := pending.Token
	if want := model.TokenGen(b.sh[tok.Shard].StoreGen); tok.Gen != want || want != 1 {
		t.Fatalf("token %s has store generation %d, its shard mints %d (want 1: a new directory)", tok, tok.Gen, want)
	}
	before := logical(t, b.sh)
	for _, bad := range []string{
		answered.Token.String(), // answered already
		model.Token{Shard: tok.Shard, Run: tok.Run, Pos: tok.Pos + 1}.String(),                      // not an async position
		model.Token{Shard: tok.Shard, Run: model.MaxRunNo, Pos: tok.Pos}.String(),                   // no such run
		model.Token{Shard: 1000, Run: tok.Run, Pos: tok.Pos}.String(),                               // no such shard
		model.Token{Gen: (tok.Gen + 1) % 64, Shard: tok.Shard, Run: tok.Run, Pos: tok.Pos}.String(), // another store generation
	} {
		if err := e.Complete(bad, nil); !errors.Is(err, ErrNoPendingAsync) {
			t.Errorf("Complete(%s) = %v, want ErrNoPendingAsync", bad, err)
		}
	}
	if err := e.Complete("tk-not-a-token", nil); err == nil {
		t.Errorf("a malformed token was accepted")
	}
	sameCanon(t, "refused answers", before, logical(t, b.sh))

	if err := e.Complete(tok.String(), []byte("from the test")); err != nil {
		t.Fatalf("Complete(%s): %v", tok, err)
	}
	r := b.sh[tok.Shard].Runs[tok.Run]
	if !isClosed(r.Journal, tok.Pos) {
		t.Fatalf("run %s#%d: async at %d still open after its answer", r.WorkflowID, r.Gen, tok.Pos)
	}
	if err := e.Complete(tok.String(), nil); !errors.Is(err, ErrNoPendingAsync) {
		t.Errorf("second answer: %v, want ErrNoPendingAsync", err)
	}
	if e.Stats().Rejected != 7 {
		t.Errorf("rejected %d tokens, want 7", e.Stats().Rejected)
	}
	if err := e.Drive(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.LostAcks == 0 || st.Repeats == 0 {
		t.Errorf("lost acks %d, repeats dropped %d: want the dedup path exercised", st.LostAcks, st.Repeats)
	}
}
