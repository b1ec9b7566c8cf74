package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringOpenEpochOptions struct {
	plan         string
	slots        []string
	fingerprints map[string]string
	newCells     []string
	addShards    string
	removeShards string
	write        ringWriteFlags
	store        ringStoreFlags
}

func newRingOpenEpochCmd(ios *IO) *cobra.Command {
	var opts ringOpenEpochOptions
	cmd := &cobra.Command{
		Use:   "open-epoch (FILE | --store etcd://HOST:PORT --namespace NS) (--plan PLAN | --slots 0-127=a,128-255=b [--add-shards LIST] [--remove-shards LIST]) [--expect-revision R]",
		Short: "Open a new epoch with a new ring: the only write that changes placement",
		Long: `Open-epoch publishes a ring as the next epoch: current+1 becomes OPEN and
current, the previous OPEN epoch becomes DRAINING and keeps its ring (its
instances keep resolving through it), and the revision goes up by one. A
namespace with no epoch gets epoch 0.

The ring comes from a plan ("fusee ring plan ... -o PLAN") or from --slots,
written as the reference's CLI writes slots, shard=cell[@region], extended
with ranges: --slots 0-511=cellA,512-1023=cellB@eu-west (repeatable; in ring
order, the order a cell mints into its shards). Every cell --slots names
must already be declared in FILE or be introduced explicitly, with
--new-cell CELL[=FP] (repeatable) or --fingerprint CELL=FP: a cell name
that is neither is refused as a likely typo, since it would move shards to
a database that does not exist. A plan introduces its new cells itself.

Each epoch's ring names its own shard set. A ring whose shards differ
from the current epoch's is refused, naming the shards it leaves out and
the ones it adds, unless the change is named exactly: --add-shards LIST
for shards new to the ring, --remove-shards LIST for shards it drops
(LIST as 8-11,14). So a typo in --slots never drops or adds a shard
silently. The old epoch keeps its ring: ids born in it still resolve
there, including on the shards the new ring drops. A plan carries its own
change.

Preconditions: FILE is valid; the new ring places every shard of its set
on exactly one cell and differs from the current ring. A plan must have
been computed from FILE's current revision, and --expect-revision R
requires revision R: otherwise nothing is written and the exit code is 5
(re-read, re-plan, retry). A plan that was opened already says so and
exits 1: there is nothing to retry. Before opening, register the new
ring's cells' nodes: ids minted in the new epoch resolve to them at once.` + ringStoreHelp,
		Example: `  fusee ring open-epoch orders.ring --plan split.plan
  fusee ring open-epoch orders.ring --slots 0-511=cellA,512-1023=cellB --expect-revision 3
  fusee ring open-epoch orders.ring --slots 0-1023=cellC --fingerprint cellC=jdbc-77e1 --dry-run
  fusee ring open-epoch orders.ring --slots 0-511=cellA,512-1023=cellD --new-cell cellD
  fusee ring open-epoch orders.ring --slots 0-1=a,2-3=b,4=c --new-cell c --add-shards 4
  fusee ring open-epoch orders.ring --slots 0-2=a --remove-shards 3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (opts.plan == "") == (len(opts.slots) == 0) {
				return usagef("give exactly one of --plan and --slots")
			}
			if opts.plan != "" && (len(opts.fingerprints) > 0 || len(opts.newCells) > 0) {
				return usagef("--fingerprint and --new-cell go with --slots; a plan declares its own cells")
			}
			if opts.plan != "" && (opts.addShards != "" || opts.removeShards != "") {
				return usagef("--add-shards and --remove-shards go with --slots; a plan carries its own change")
			}
			if err := ringCheckFingerprints(opts.fingerprints); err != nil {
				return err
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingOpenEpoch(cmd.Context(), ios, &opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	f := cmd.Flags()
	f.StringVar(&opts.plan, "plan", "", "open the ring of this plan file")
	f.StringSliceVar(&opts.slots, "slots", nil, "the new ring, FIRST-LAST=CELL[@REGION],... in ring order")
	f.StringToStringVar(&opts.fingerprints, "fingerprint", nil, "storage fingerprint of a new cell, CELL=FP (repeatable)")
	f.StringArrayVar(&opts.newCells, "new-cell", nil, "introduce a cell not yet declared, CELL or CELL=FP (repeatable)")
	f.StringVar(&opts.addShards, "add-shards", "", "shards the new ring adds to the current epoch's set, e.g. 8-11,14")
	f.StringVar(&opts.removeShards, "remove-shards", "", "shards the new ring drops from the current epoch's set, e.g. 3")
	opts.write.add(cmd)
	return cmd
}

func runRingOpenEpoch(ctx context.Context, ios *IO, opts *ringOpenEpochOptions, st ringfile.Store) error {
	path := st.Name()
	wopt := opts.write.options()
	open, err := opts.opener(&wopt)
	if err != nil {
		return err
	}
	var before ringfile.Ring
	next, err := st.Update(ctx, wopt, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		if e := cur.CurrentEpoch(); e != nil {
			before = e.Ring
		}
		return open(cur)
	})
	if err != nil {
		return ringExplainInvalidIn(st, err)
	}
	if opts.write.json || opts.write.dryRun {
		return opts.write.reportWrite(ios, st, next, "")
	}
	fmt.Fprintf(ios.Out, "opened epoch %d of %s in %s (revision %d)\n", next.Current, next.Namespace, path, next.Revision)
	if before != nil {
		after := next.CurrentEpoch().Ring
		keys := newRingKeys(ringDeclared(next), before.Cells(), after.Cells())
		if err := printRingMoves(ios, keys, before, after, ringfile.CompareRings(before, after)); err != nil {
			return err
		}
	}
	if d := next.Draining(); len(d) > 0 {
		fmt.Fprintf(ios.Out, "draining: epoch %s; retire each with `fusee ring retire %s --epoch E --census CENSUS` once its work is done\n", ringJoinEpochs(d), ringTargetArgs(st))
	}
	_, err = fmt.Fprintf(ios.Out, "active cells (workers poll): %s\n", strings.Join(next.ActiveCells(), ", "))
	return err
}

// opener reads the plan or the slots and returns the change to apply; a
// plan also sets the revision the write expects.
func (o *ringOpenEpochOptions) opener(wopt *ringfile.WriteOptions) (func(*ringfile.Policy) (*ringfile.Policy, error), error) {
	if o.plan == "" {
		ring, err := ringParseSlots(o.slots)
		if err != nil {
			return nil, err
		}
		decls, introduced, err := o.introducedCells()
		if err != nil {
			return nil, err
		}
		change, err := ringShardChange(o.addShards, o.removeShards)
		if err != nil {
			return nil, err
		}
		return func(cur *ringfile.Policy) (*ringfile.Policy, error) {
			if err := ringCheckDeclared(cur, ring, introduced); err != nil {
				return nil, err
			}
			return ringfile.OpenEpoch(cur, ring, change, decls...)
		}, nil
	}
	plan, err := ringfile.LoadPlan(o.plan)
	if err != nil {
		return nil, err
	}
	if wopt.ExpectRevision != ringfile.AnyRevision && wopt.ExpectRevision != plan.BaseRevision {
		return nil, usagef("--expect-revision %d contradicts the plan, computed from revision %d", wopt.ExpectRevision, plan.BaseRevision)
	}
	wopt.ExpectRevision, wopt.ExpectedBy = plan.BaseRevision, "the plan "+o.plan
	wopt.Stale = func(cur *ringfile.Policy) error { return ringfile.PlanApplied(cur, plan) }
	return func(cur *ringfile.Policy) (*ringfile.Policy, error) { return ringfile.OpenPlan(cur, plan) }, nil
}

// introducedCells merges --fingerprint and --new-cell into the declarations
// to make and the set of cells the command line introduces.
func (o *ringOpenEpochOptions) introducedCells() ([]ringfile.CellDecl, map[string]bool, error) {
	fps := maps.Clone(o.fingerprints)
	if fps == nil {
		fps = map[string]string{}
	}
	introduced := map[string]bool{}
	for cell := range fps {
		introduced[cell] = true
	}
	var bare []ringfile.CellDecl
	for _, item := range o.newCells {
		cell, fp, hasFP := strings.Cut(item, "=")
		switch {
		case cell == "":
			return nil, nil, usagef("--new-cell %q: want CELL or CELL=FINGERPRINT", item)
		case hasFP && fp == "":
			return nil, nil, usagef("--new-cell %q: empty fingerprint (write --new-cell %s to skip the fingerprint)", item, cell)
		case ringfile.CheckName("--new-cell", cell) != nil:
			return nil, nil, usageError{ringfile.CheckName("--new-cell", cell)}
		case hasFP && ringfile.CheckFingerprint(fp) != nil:
			return nil, nil, usagef("--new-cell %s: %v", item, ringfile.CheckFingerprint(fp))
		case hasFP && fps[cell] != "" && fps[cell] != fp:
			return nil, nil, usagef("cell %s is given two fingerprints, %s and %s", cell, fps[cell], fp)
		case hasFP:
			fps[cell] = fp
		case !introduced[cell]:
			bare = append(bare, ringfile.CellDecl{ID: cell})
		}
		introduced[cell] = true
	}
	decls := ringFingerprints(fps)
	for _, d := range bare {
		if _, ok := fps[d.ID]; !ok {
			decls = append(decls, d)
		}
	}
	return decls, introduced, nil
}

// ringCheckDeclared refuses a ring that names a cell neither declared in
// cur nor introduced on the command line: a mistyped cell name would
// otherwise move shards to a database that does not exist.
func ringCheckDeclared(cur *ringfile.Policy, ring ringfile.Ring, introduced map[string]bool) error {
	var unknown []string
	for _, c := range ring.Cells() {
		if !cur.IsDeclared(c) && !introduced[c] {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	flags := make([]string, len(unknown))
	for i, c := range unknown {
		flags[i] = "--new-cell " + c
	}
	return fmt.Errorf("--slots names cell%s %s, not declared in %s: refusing to move shards to %s (a typo?); to introduce %s, add %s (or --new-cell CELL=FINGERPRINT)",
		ringPlural(len(unknown)), strings.Join(unknown, ", "), cur.File, ringThem(len(unknown)), ringThem(len(unknown)), strings.Join(flags, " "))
}

func ringThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// ringShardChange reads --add-shards and --remove-shards.
func ringShardChange(add, remove string) (ringfile.ShardChange, error) {
	var ch ringfile.ShardChange
	for _, f := range []struct {
		flag, list string
		into       *[]int
	}{{"--add-shards", add, &ch.Add}, {"--remove-shards", remove, &ch.Remove}} {
		if f.list == "" {
			continue
		}
		set, err := ringfile.ParseShardList(f.list)
		if err != nil {
			return ch, usagef("%s %s: %v", f.flag, f.list, err)
		}
		if set[len(set)-1] >= ringfile.MaxShards {
			return ch, usagef("%s %s: shard %d is outside 0..%d", f.flag, f.list, set[len(set)-1], ringfile.MaxShards-1)
		}
		*f.into = set
	}
	return ch, nil
}
