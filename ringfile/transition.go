package ringfile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The only changes a policy goes through. Each returns a new policy (the
// input is never modified) with the revision bumped, and refuses to return
// one that Validate would reject.

// ShardChange names how a new epoch's shard set differs from the current
// one: the shards it adds and the shards it removes. A set that differs
// without being named is refused, so a typo in a ring can never drop or
// add a shard silently.
type ShardChange struct {
	Add, Remove []int
}

// IsZero reports whether the change names nothing.
func (c ShardChange) IsZero() bool { return len(c.Add) == 0 && len(c.Remove) == 0 }

// Apply returns the set that results from set, ascending, or an error
// naming each shard the change cannot add (already in set) or remove (not
// in set). epoch names set's epoch in messages.
func (c ShardChange) Apply(set []int, epoch int64) ([]int, error) {
	has := make(map[int]bool, len(set))
	for _, sh := range set {
		has[sh] = true
	}
	var already, absent, both []int
	for _, sh := range c.Add {
		if has[sh] {
			already = append(already, sh)
		}
		if slices.Contains(c.Remove, sh) {
			both = append(both, sh)
		}
	}
	for _, sh := range c.Remove {
		if !has[sh] {
			absent = append(absent, sh)
		}
	}
	var msgs []string
	if len(already) > 0 {
		msgs = append(msgs, fmt.Sprintf("--add-shards names %s, already in epoch %d's ring", shardWords(already), epoch))
	}
	if len(absent) > 0 {
		msgs = append(msgs, fmt.Sprintf("--remove-shards names %s, not in epoch %d's ring", shardWords(absent), epoch))
	}
	if len(both) > 0 {
		msgs = append(msgs, fmt.Sprintf("%s both added and removed", shardsAre(both)))
	}
	if len(msgs) > 0 {
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	for _, sh := range c.Remove {
		delete(has, sh)
	}
	for _, sh := range c.Add {
		has[sh] = true
	}
	out := make([]int, 0, len(has))
	for sh := range has {
		out = append(out, sh)
	}
	slices.Sort(out)
	return out, nil
}

// shardWords names shards as a noun phrase: "shard 4", "shards 4-7, 9".
func shardWords(shards []int) string {
	if len(shards) == 1 {
		return fmt.Sprintf("shard %d", shards[0])
	}
	return "shards " + FormatShardSet(shards)
}

// checkShardSet refuses a ring whose shard set is not want, naming the
// shards it leaves out and the ones it adds, and the flag that would name
// each change.
func checkShardSet(ring Ring, want []int, cur *Epoch, ch ShardChange) error {
	got := ring.ShardSet()
	if slices.Equal(got, want) {
		return nil
	}
	missing, extra := setDiff(want, got), setDiff(got, want)
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("it leaves out %s of epoch %d (to drop %s, name %s with --remove-shards %s)",
			shardWords(missing), cur.Number, them(len(missing)), them(len(missing)), strings.Join(ShardRanges(missing), ",")))
	}
	if len(extra) > 0 {
		msgs = append(msgs, fmt.Sprintf("it places %s, not in epoch %d's ring (to add %s, name %s with --add-shards %s)",
			shardWords(extra), cur.Number, them(len(extra)), them(len(extra)), strings.Join(ShardRanges(extra), ",")))
	}
	named := ""
	if !ch.IsZero() {
		named = " beyond the change named"
	}
	return fmt.Errorf("%w: the new ring's shards differ from epoch %d's%s: %s; a typo in a ring must not add or drop a shard silently",
		ErrShardSet, cur.Number, named, strings.Join(msgs, "; "))
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// setDiff returns the members of a not in b; both ascending.
func setDiff(a, b []int) []int {
	var out []int
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
		}
	}
	return out
}

// OpenEpoch publishes ring as a new epoch: current+1 (epoch 0 for a
// namespace with none) becomes OPEN and current, the previous OPEN epoch
// becomes DRAINING with its ring kept. The new epoch's shard set is the
// shards ring places; it must be the current epoch's set changed exactly
// as ch names (the genesis epoch may have any set). Cells the ring names
// that are not declared yet are declared (with the fingerprints in
// declare, if any). A ring identical to the current one is refused: a
// needless epoch only adds a draining generation every worker must poll.
func OpenEpoch(p *Policy, ring Ring, ch ShardChange, declare ...CellDecl) (*Policy, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	cur := p.CurrentEpoch()
	if cur != nil && cur.Ring.SamePlacement(ring) {
		return nil, fmt.Errorf("the new ring places every shard as epoch %d already does: opening an epoch would change nothing", cur.Number)
	}
	if cur != nil {
		want, err := ch.Apply(cur.ShardSet(), cur.Number)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrShardSet, err)
		}
		if err := checkShardSet(ring, want, cur, ch); err != nil {
			return nil, err
		}
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
	next.Epochs = append(next.Epochs, Epoch{Number: number, Status: StatusOpen, Ring: fresh, Shards: fresh.ShardSet()})
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
// a different namespace, an epoch that disappears, a ring
// that changes, a status that moves backwards, a current epoch that goes
// back, or a revision that does not go up. Update applies it to
// every write, whatever computed the new policy.
func CheckTransition(old, next *Policy) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if old.Namespace != next.Namespace {
		add("the namespace would change from %s to %s", old.Namespace, next.Namespace)
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
		case !slices.Equal(n.ShardSet(), e.ShardSet()):
			add("epoch %d's shard set would change", e.Number)
		case n.Status < e.Status:
			add("epoch %d would go back from %s to %s", e.Number, e.Status, n.Status)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: refusing the write:%s", ErrSealed, joinLines(problems))
	}
	return nil
}
