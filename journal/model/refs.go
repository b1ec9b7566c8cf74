package model

// This file is the one place that knows which fields of a Record and of a
// Message name a run. A reshard moves and renumbers runs, so it must
// rewrite every such field; it does so only through MapRefs, and a test
// (refs_test.go) walks the two types by reflection to prove that every
// field of a run-bearing type is visited. A new run-bearing field that is
// not added here fails that test instead of being silently left pointing
// at the old run.

// RefField names a run-bearing field.
type RefField uint8

// The run-bearing fields.
const (
	RefParent    RefField = iota + 1 // Record.Parent: a child's parent, an update's caller
	RefPred                          // Record.Pred: the predecessor (continue-as-new, reset, restart)
	RefNext                          // Record.Next: the run a continue-as-new or reset started
	RefBy                            // Record.By: who sent a signal or asked to cancel
	RefKey                           // Record.Key: the Ctx::key a step ran with
	RefToken                         // Record.Token: an async completion's token
	RefMsgFrom                       // Message.From: the sending run
	RefMsgParent                     // Message.Parent: the parent or waiting position
)

var refFieldNames = [...]string{"", "parent", "pred", "next", "by", "key", "token", "from", "msg-parent"}

func (f RefField) String() string {
	if int(f) < len(refFieldNames) && f > 0 {
		return refFieldNames[f]
	}
	return "ref(?)"
}

// A RunMapper returns the reference that replaces ref in field f. It is
// called only for references that name a run (ref.Run != 0).
type RunMapper func(f RefField, ref RunRef) RunRef

// MapRefs replaces every run reference of r by what m returns for it;
// positions (a parent's, a key's, a token's) are kept. A Ctx::key names
// no shard (it is its own run's key), so keyShard is passed to m as the
// key's shard. A token's other bits (its store generation) are left for
// the caller.
func (r *Record) MapRefs(keyShard int, m RunMapper) {
	mapParent(&r.Parent, RefParent, m)
	mapRun(&r.Pred, RefPred, m)
	mapRun(&r.Next, RefNext, m)
	mapRun(&r.By, RefBy, m)
	if r.Key.Run != 0 {
		n := m(RefKey, RunRef{Shard: keyShard, Run: r.Key.Run})
		r.Key.Run = n.Run
	}
	if r.Token.Run != 0 {
		n := m(RefToken, RunRef{Shard: r.Token.Shard, Run: r.Token.Run})
		r.Token.Shard, r.Token.Run = n.Shard, n.Run
	}
}

// MapRefs replaces the message's run references (its sender and its
// parent) by what m returns for them.
func (msg *Message) MapRefs(m RunMapper) {
	mapRun(&msg.From, RefMsgFrom, m)
	mapParent(&msg.Parent, RefMsgParent, m)
}

func mapRun(r *RunRef, f RefField, m RunMapper) {
	if r.Run != 0 {
		*r = m(f, *r)
	}
}

func mapParent(p *ParentRef, f RefField, m RunMapper) {
	if p.Run != 0 {
		n := m(f, p.RunRef())
		p.Shard, p.Run = n.Shard, n.Run
	}
}
