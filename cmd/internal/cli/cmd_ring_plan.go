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

type ringPlanOptions struct {
	addCell, removeCell, split string
	rebalance                  bool
	weights                    map[string]int
	fingerprint, region        string
	addShards, removeShards    string
	output                     string
	json                       bool
	store                      ringStoreFlags
}

func newRingPlanCmd(ios *IO) *cobra.Command {
	var opts ringPlanOptions
	cmd := &cobra.Command{
		Use:   "plan (FILE | --store etcd://HOST:PORT --namespace NS) (--add-cell C | --remove-cell C | --split A:B | --rebalance | --add-shards LIST | --remove-shards LIST) [--weights a=2,b=1] [-o PLAN]",
		Short: "Compute the next ring that moves the fewest shards for a goal",
		Long: `Plan computes the ring of the next epoch from the current one and prints
the change as a diff: the current and the planned ring as two strips in
the same columns (keys as in "fusee ring show"), '^' under the columns
whose shards move; the ranges in shard order, a range that stays once and
a range that moves as a - line (old cell) and a + line (new cell), red and
green on a terminal; each cell's shards before and after; and which epochs
will be draining once it is opened. It writes nothing but
the plan file (-o), which records the revision and epoch it was computed
from and the new ring; "fusee ring open-epoch FILE --plan PLAN" opens it,
and refuses (exit 5) if FILE has moved on since.

Goals (exactly one):
  --add-cell C      C joins; every cell ends at its weighted share
  --remove-cell C   C leaves; its shards go to the others, balanced
  --split A:B       new cell B takes the upper half of A's shards; no other
                    cell moves
  --rebalance       every cell ends at its weighted share
  --add-shards LIST new shards (e.g. 8-11, none in the current ring), dealt
                    one at a time to the cell with the fewest shards (ties
                    to the earlier cell in ring order); no shard moves
  --remove-shards LIST
                    those shards leave the ring; no other shard moves;
                    refused if a cell would be left with none
  (--add-shards and --remove-shards may be given together: the removal
  first, then the new shards dealt)

Weights (--weights a=2,b=1; a cell not named weighs 1) set each cell's
target: the floor of its share of the shards, the leftover shards going to
the largest remainders. Each cell keeps its lowest shards up to its target
and only the shards above targets move, so the number moved is the lower
bound: the sum over cells of max(0, before - target).

The plan file carries the shards it adds and removes to open-epoch.

Preconditions: FILE is valid and has a current epoch. Plan refuses a goal
that leaves a kept cell with no shard, needs more cells than shards, or
moves nothing (an epoch that changes nothing is needless).` + ringStoreHelp,
		Example: `  fusee ring plan orders.ring --split cellA:cellB -o split.plan
  fusee ring plan orders.ring --add-cell cellC --fingerprint jdbc-77e1 --region eu-west
  fusee ring plan orders.ring --rebalance --weights cellA=2,cellB=1 --json
  fusee ring plan orders.ring --add-shards 8-11 -o grow.plan
  fusee ring plan orders.ring --remove-shards 6-7 -o shrink.plan`,
		RunE: func(cmd *cobra.Command, args []string) error {
			goal, err := opts.goal()
			if err != nil {
				return err
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingPlan(cmd.Context(), ios, opts, goal, st) })
		},
	}
	opts.store.add(cmd, nil)
	f := cmd.Flags()
	f.StringVar(&opts.addCell, "add-cell", "", "plan adding this cell")
	f.StringVar(&opts.removeCell, "remove-cell", "", "plan removing this cell")
	f.StringVar(&opts.split, "split", "", "plan splitting cell A into A and the new cell B (A:B)")
	f.BoolVar(&opts.rebalance, "rebalance", false, "plan rebalancing the current cells by weight")
	f.StringToIntVar(&opts.weights, "weights", nil, "cell weights, CELL=N (default 1 each)")
	f.StringVar(&opts.fingerprint, "fingerprint", "", "storage fingerprint of the cell the plan adds")
	f.StringVar(&opts.region, "region", "", "region of the slots of the cell the plan adds")
	f.StringVar(&opts.addShards, "add-shards", "", "plan adding these new shards, e.g. 8-11")
	f.StringVar(&opts.removeShards, "remove-shards", "", "plan removing these shards from the ring, e.g. 6-7")
	f.StringVarP(&opts.output, "output", "o", "", "write the plan to this file")
	f.BoolVar(&opts.json, "json", false, "print the plan as JSON")
	return cmd
}

func (o ringPlanOptions) goal() (ringfile.Goal, error) {
	var goals []ringfile.Goal
	if o.addCell != "" {
		goals = append(goals, ringfile.Goal{Kind: ringfile.GoalAddCell, Cell: o.addCell})
	}
	if o.removeCell != "" {
		goals = append(goals, ringfile.Goal{Kind: ringfile.GoalRemoveCell, Cell: o.removeCell})
	}
	if o.split != "" {
		from, to, ok := strings.Cut(o.split, ":")
		if !ok || from == "" || to == "" {
			return ringfile.Goal{}, usagef("--split %q: want FROM:TO, for example cellA:cellB", o.split)
		}
		goals = append(goals, ringfile.Goal{Kind: ringfile.GoalSplit, Cell: from, To: to})
	}
	if o.rebalance {
		goals = append(goals, ringfile.Goal{Kind: ringfile.GoalRebalance})
	}
	if o.addShards != "" || o.removeShards != "" {
		ch, err := ringShardChange(o.addShards, o.removeShards)
		if err != nil {
			return ringfile.Goal{}, err
		}
		if len(o.weights) > 0 {
			return ringfile.Goal{}, usagef("--weights do not apply to --add-shards and --remove-shards, which move no shard")
		}
		goals = append(goals, ringfile.Goal{Kind: ringfile.GoalShards, AddShards: ch.Add, RemoveShards: ch.Remove})
	}
	if len(goals) != 1 {
		return ringfile.Goal{}, usagef("give exactly one of --add-cell, --remove-cell, --split, --rebalance and --add-shards/--remove-shards")
	}
	g := goals[0]
	names := [][2]string{{"--add-cell", o.addCell}, {"--remove-cell", o.removeCell}, {"--region", o.region}}
	if g.Kind == ringfile.GoalSplit {
		names = append(names, [2]string{"--split", g.Cell}, [2]string{"--split", g.To})
	}
	for _, n := range names {
		if n[1] != "" {
			if err := ringCheckNames(n[0], n[1]); err != nil {
				return ringfile.Goal{}, err
			}
		}
	}
	for _, cell := range slices.Sorted(maps.Keys(o.weights)) {
		if err := ringCheckNames("--weights", cell); err != nil {
			return ringfile.Goal{}, err
		}
		if o.weights[cell] < 1 {
			return ringfile.Goal{}, usagef("--weights %s=%d: want a weight of at least 1", cell, o.weights[cell])
		}
	}
	if o.fingerprint != "" {
		if err := ringfile.CheckFingerprint(o.fingerprint); err != nil {
			return ringfile.Goal{}, usagef("--fingerprint: %v", err)
		}
	}
	if (o.fingerprint != "" || o.region != "") && g.Kind != ringfile.GoalAddCell && g.Kind != ringfile.GoalSplit {
		return ringfile.Goal{}, usagef("--fingerprint and --region describe the cell a plan adds (--add-cell or --split)")
	}
	if g.Kind != ringfile.GoalShards {
		g.Weights = o.weights
	}
	g.Fingerprint, g.Region = o.fingerprint, o.region
	return g, nil
}

func runRingPlan(ctx context.Context, ios *IO, opts ringPlanOptions, goal ringfile.Goal, st ringfile.Store) error {
	path := st.Name()
	p, err := ringLoad(ctx, st)
	if err != nil {
		return err
	}
	res, err := ringfile.MakePlan(p, goal)
	if err != nil {
		return err
	}
	if opts.output != "" {
		if err := ringfile.WriteFile(opts.output, ringfile.FormatPlan(res.Plan)); err != nil {
			return err
		}
	}
	if opts.json {
		return ios.printJSON(newRingPlanView(res, len(p.CurrentEpoch().ShardSet()), opts.output))
	}
	fmt.Fprintf(ios.Out, "plan for %s: %s (from revision %d; epoch %d drains, epoch %d opens)\n",
		path, res.Plan.Goal, res.Plan.BaseRevision, res.Plan.BaseEpoch, res.Plan.BaseEpoch+1)
	before := p.CurrentEpoch().Ring
	keys := newRingKeys(ringDeclared(p), before.Cells(), res.Plan.Ring.Cells())
	if err := printRingMoves(ios, keys, before, res.Plan.Ring, res.Changes); err != nil {
		return err
	}
	fmt.Fprintf(ios.Out, "once opened, draining: epoch %s (workers keep polling their cells until each is retired)\n", ringJoinEpochs(res.Draining))
	if opts.output != "" {
		fmt.Fprintf(ios.Out, "wrote %s: open it with `fusee ring open-epoch %s --plan %s`\n", opts.output, ringTargetArgs(st), opts.output)
	}
	return nil
}

type ringPlanView struct {
	Goal         string                `json:"goal"`
	BaseRevision int64                 `json:"base_revision"`
	BaseEpoch    int64                 `json:"base_epoch"`
	Moved        int                   `json:"moved"`
	Shards       int                   `json:"shards"`
	AddedShards  []string              `json:"added_shards"`
	RemovedShard []string              `json:"removed_shards"`
	Moves        []ringfile.Move       `json:"moves"`
	Cells        []ringfile.CellChange `json:"cells"`
	Draining     []int64               `json:"draining"`
	Output       string                `json:"output,omitempty"`
}

func newRingPlanView(res *ringfile.PlanResult, shards int, output string) ringPlanView {
	return ringPlanView{Goal: res.Plan.Goal, BaseRevision: res.Plan.BaseRevision, BaseEpoch: res.Plan.BaseEpoch,
		Moved: ringfile.Moved(ringMovesOnly(res.Moves)), Shards: shards, Moves: ringNonNil(ringMovesOnly(res.Moves)), Cells: res.Changes,
		AddedShards: ringNonNil(ringfile.ShardRanges(res.Plan.Change.Add)), RemovedShard: ringNonNil(ringfile.ShardRanges(res.Plan.Change.Remove)),
		Draining: ringNonNil(res.Draining), Output: output}
}

// ringMovesOnly drops the runs of shards that are added or removed (an
// empty from or to): they change the set, they do not move.
func ringMovesOnly(moves []ringfile.Move) []ringfile.Move {
	var out []ringfile.Move
	for _, m := range moves {
		if m.From != "" && m.To != "" {
			out = append(out, m)
		}
	}
	return out
}
