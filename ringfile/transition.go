package ringfile

import (
	"errors"
	"fmt"
	"slices"
)

// The only changes a policy goes through. Each returns a new policy (the
// input is never modified) with the revision bumped, and refuses to return
// one that Validate would reject.

// OpenEpoch publishes ring as a new epoch: current+1 (epoch 0 for a
// namespace with none) becomes OPEN and current, the previous OPEN epoch
// becomes DRAINING with its ring kept. Cells the ring names that are not
// declared yet are declared (with the fingerprints in declare, if any). A
// ring identical to the current one is refused: a needless epoch only adds
// a draining generation every worker must poll.
func OpenEpoch(p *Policy, ring Ring, declare ...CellDecl) (*Policy, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	if cur := p.CurrentEpoch(); cur != nil && cur.Ring.SamePlacement(ring) {
		return nil, fmt.Errorf("the new ring places every shard as epoch %d already does: opening an epoch would change nothing", cur.Number)
	}
	next := p.Clone()
	if cur := next.CurrentEpoch(); cur != nil {
		cur.Status = StatusDraining
	}
	number := p.Current + 1 // NoEpoch + 1 == 0: the genesis epoch
	for _, d := range declare {
		next.declare(CellDecl{ID: d.ID, Fingerprint: d.Fingerprint}) // its line is another file's
	}
	for _, c := range ring.Cells() {
		next.declare(CellDecl{ID: c})
	}
	fresh := slices.Clone(ring)
	for i := range fresh {
		fresh[i].Line = 0
	}
	next.Epochs = append(next.Epochs, Epoch{Number: number, Status: StatusOpen, Ring: fresh})
	next.Current = number
	next.Revision++
	if err := checkResult(next); err != nil {
		return nil, fmt.Errorf("refusing to open epoch %d:%w", number, err)
	}
	return next, nil
}

// checkResult lists every error Validate finds in the policy a change
// would produce. The input was valid, so each is the change's fault.
func checkResult(next *Policy) error {
	var msgs []string
	for _, f := range Validate(next) {
		if f.Severity == SeverityError {
			msgs = append(msgs, f.Msg)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(joinLines(msgs))
}

// Retire turns a DRAINING epoch RETIRED. Its ring stays: retirement is
// about work, not addressing, so its ids still resolve. Whether its work is
// done is the caller's question (see CheckCensus).
func Retire(p *Policy, epoch int64) (*Policy, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	e := p.Epoch(epoch)
	switch {
	case e == nil:
		return nil, fmt.Errorf("epoch %d does not exist", epoch)
	case epoch == p.Current:
		return nil, fmt.Errorf("epoch %d is the current epoch: it cannot be retired (open a new epoch first)", epoch)
	case e.Status != StatusDraining:
		return nil, fmt.Errorf("epoch %d is %s: only a draining epoch can be retired", epoch, e.Status)
	}
	next := p.Clone()
	next.Epoch(epoch).Status = StatusRetired
	next.Revision++
	return next, nil
}

// CheckTransition refuses a write that would rewrite published history:
// a different namespace or shard count, an epoch that disappears, a ring
// that changes, a status that moves backwards, a current epoch that goes
// back, or a revision that does not go up. Update applies it to
// every write, whatever computed the new policy.
func CheckTransition(old, next *Policy) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if old.Namespace != next.Namespace {
		add("the namespace would change from %s to %s", old.Namespace, next.Namespace)
	}
	if old.Shards != next.Shards {
		add("the shard count would change from %d to %d (that is a reshard of the key space, not an epoch)", old.Shards, next.Shards)
	}
	if next.Revision <= old.Revision {
		add("the revision would not advance (%d -> %d)", old.Revision, next.Revision)
	}
	if next.Current < old.Current {
		add("the current epoch would go back from %d to %d", old.Current, next.Current)
	}
	for _, e := range old.Epochs {
		n := next.Epoch(e.Number)
		switch {
		case n == nil:
			add("epoch %d would disappear", e.Number)
		case !n.Ring.SamePlacement(e.Ring):
			add("epoch %d's ring would change", e.Number)
		case n.Status < e.Status:
			add("epoch %d would go back from %s to %s", e.Number, e.Status, n.Status)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: refusing the write:%s", ErrSealed, joinLines(problems))
	}
	return nil
}
