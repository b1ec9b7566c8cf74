package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringShowOptions struct {
	epoch int64
	json  bool
	store ringStoreFlags
}

func newRingShowCmd(ios *IO) *cobra.Command {
	var opts ringShowOptions
	cmd := &cobra.Command{
		Use:   "show (FILE | --store etcd://HOST:PORT --namespace NS) [--epoch E] [--json]",
		Short: "Show a ring file: epochs, status, a strip of each ring, shards per cell, balance",
		Long: `Show prints the namespace, the current epoch's shard count, the revision
and current epoch, the declared cells (with fingerprints, their bindings)
and the active cells workers must poll, then every epoch, newest first: its
status, the shards it added and removed against the epoch before it (when
its set differs), a strip of its shard -> cell map ('.' for a shard not in
its set), and, per cell, how many shards it owns, which ranges, in which region,
and the ring's balance (fewest and most shards per cell against the even
share).

The strip is one line, shard 0 at the left: each cell has a key letter
(and on a colour terminal a colour), the same in every epoch, listed under
it. It fits the terminal's width ($COLUMNS, else 80 columns): runs of
shards on one cell are compressed, each keeping at least one column; where
there are more runs than columns a column that spans cells shows '*'.

It only reads FILE. A file with errors is still shown, with a warning, so
that it can be looked at; a file that does not parse is refused with every
syntax error and its line.

--epoch E shows one epoch. --json prints the same as one object.` + ringStoreHelp,
		Example: `  fusee ring show orders.ring
  fusee ring show orders.ring --epoch 2
  fusee ring show orders.ring --json | jq '.epochs[0].cells'
  fusee ring show --store etcd://10.0.0.1:2379,10.0.0.2:2379 --namespace orders`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("epoch") {
				opts.epoch = ringfile.NoEpoch
			} else if opts.epoch < 0 {
				return usagef("--epoch %d: want an epoch number, 0 or more", opts.epoch)
			}
			return opts.store.run(args, func(st ringfile.Store) error { return runRingShow(cmd.Context(), ios, opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().Int64Var(&opts.epoch, "epoch", 0, "show only this epoch")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print as JSON")
	return cmd
}

type ringCellView struct {
	Cell    string   `json:"cell"`
	Shards  int      `json:"shards"`
	Ranges  []string `json:"ranges"`
	Regions []string `json:"regions,omitempty"`
}

type ringEpochView struct {
	Epoch     int64          `json:"epoch"`
	Status    string         `json:"status"`
	Shards    int            `json:"shards"`
	ShardSet  []string       `json:"shard_set"`
	Added     []string       `json:"added_shards"`   // vs the epoch before it
	Removed   []string       `json:"removed_shards"` // vs the epoch before it
	Cells     []ringCellView `json:"cells"`
	MinShards int            `json:"min_shards"`
	MaxShards int            `json:"max_shards"`
	EvenShare float64        `json:"even_share"`

	ring ringfile.Ring // for the strip; not in the JSON
	set  []int
	prev *int64 // the epoch Added and Removed compare with
}

type ringDeclView struct {
	Cell        string `json:"cell"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

type ringShowView struct {
	File         string `json:"file"`
	Namespace    string `json:"namespace"`
	Shards       int    `json:"shards"` // the current epoch's
	span         int
	Revision     int64           `json:"revision"`
	CurrentEpoch *int64          `json:"current_epoch"`
	Cells        []ringDeclView  `json:"cells"`
	ActiveCells  []string        `json:"active_cells"`
	Epochs       []ringEpochView `json:"epochs"`
}

func runRingShow(ctx context.Context, ios *IO, opts ringShowOptions, st ringfile.Store) error {
	p, err := st.Load(ctx)
	if err != nil {
		return err
	}
	path := st.Name()
	if fs := ringfile.Validate(p); ringfile.HasErrors(fs) {
		ios.warnf("%s has errors (run `fusee ring validate %s`); showing it as it is", path, ringTargetArgs(st))
	}
	if opts.epoch != ringfile.NoEpoch && p.Epoch(opts.epoch) == nil {
		return fmt.Errorf("%s has no epoch %d", path, opts.epoch)
	}
	v := newRingShowView(p, opts.epoch)
	if opts.json {
		return ios.printJSON(v)
	}
	return printRingShow(ios, v)
}

func newRingShowView(p *ringfile.Policy, only int64) ringShowView {
	v := ringShowView{File: p.File, Namespace: p.Namespace, Revision: p.Revision, span: p.Span(),
		Cells: []ringDeclView{}, ActiveCells: ringNonNil(p.ActiveCells()), Epochs: []ringEpochView{}}
	if p.Current != ringfile.NoEpoch {
		v.CurrentEpoch = &p.Current
	}
	if cur := p.CurrentEpoch(); cur != nil {
		v.Shards = len(cur.ShardSet())
	}
	for _, c := range p.Cells {
		v.Cells = append(v.Cells, ringDeclView{c.ID, c.Fingerprint})
	}
	for i := len(p.Epochs) - 1; i >= 0; i-- {
		if e := p.Epochs[i]; only == ringfile.NoEpoch || e.Number == only {
			var prev *ringfile.Epoch
			if i > 0 {
				prev = &p.Epochs[i-1]
			}
			v.Epochs = append(v.Epochs, newRingEpochView(e, prev))
		}
	}
	return v
}

// newRingEpochView describes e; prev, the epoch before it (nil for the
// first), is what its added and removed shards are counted against.
func newRingEpochView(e ringfile.Epoch, prev *ringfile.Epoch) ringEpochView {
	set := e.ShardSet()
	v := ringEpochView{Epoch: e.Number, Status: e.Status.String(), Shards: len(set), ShardSet: ringNonNil(ringfile.ShardRanges(set)),
		Added: []string{}, Removed: []string{}, Cells: []ringCellView{}, ring: e.Ring, set: set}
	if prev != nil {
		old := prev.ShardSet()
		v.Added = ringNonNil(ringfile.ShardRanges(ringSetMinus(set, old)))
		v.Removed = ringNonNil(ringfile.ShardRanges(ringSetMinus(old, set)))
		v.prev = &prev.Number
	}
	shards := len(set)
	for _, cell := range e.Ring.Cells() {
		var owned []int
		var regions []string
		for _, s := range e.Ring {
			if s.Cell == cell {
				owned = append(owned, s.Shard)
				if s.Region != "" && !slices.Contains(regions, s.Region) {
					regions = append(regions, s.Region)
				}
			}
		}
		v.Cells = append(v.Cells, ringCellView{Cell: cell, Shards: len(owned), Ranges: ringfile.ShardRanges(owned), Regions: regions})
		if len(v.Cells) == 1 || len(owned) < v.MinShards {
			v.MinShards = len(owned)
		}
		v.MaxShards = max(v.MaxShards, len(owned))
	}
	if n := len(v.Cells); n > 0 {
		v.EvenShare = float64(shards) / float64(n)
	}
	return v
}

func printRingShow(ios *IO, v ringShowView) error {
	current := "none (not ready)"
	if v.CurrentEpoch != nil {
		current = strconv.FormatInt(*v.CurrentEpoch, 10)
	}
	fmt.Fprintf(ios.Out, "%s: namespace %s, %d shards, revision %d, current epoch %s\n", v.File, v.Namespace, v.Shards, v.Revision, current)
	decls := make([]string, len(v.Cells))
	described := make([]string, len(v.Cells))
	for i, c := range v.Cells {
		decls[i], described[i] = c.Cell, c.Cell
		if c.Fingerprint != "" {
			described[i] += " (fingerprint " + c.Fingerprint + ")"
		}
	}
	fmt.Fprintf(ios.Out, "cells: %s\n", strings.Join(described, ", "))
	fmt.Fprintf(ios.Out, "active cells (workers poll): %s\n", strings.Join(v.ActiveCells, ", "))
	// One key per cell for the whole output: a cell keeps its letter and
	// colour from epoch to epoch.
	keys := newRingKeys(decls)
	for i := len(v.Epochs) - 1; i >= 0; i-- {
		keys = newRingKeys(keys.cells, v.Epochs[i].ring.Cells())
	}
	for _, e := range v.Epochs {
		fmt.Fprintf(ios.Out, "\nepoch %d %s\n", e.Epoch, e.Status)
		if len(e.Added) > 0 || len(e.Removed) > 0 {
			change := []string{}
			if len(e.Added) > 0 {
				change = append(change, "added "+strings.Join(e.Added, ", "))
			}
			if len(e.Removed) > 0 {
				change = append(change, "removed "+strings.Join(e.Removed, ", "))
			}
			fmt.Fprintf(ios.Out, "shards %s (%d): %s since epoch %d\n", strings.Join(e.ShardSet, ", "), e.Shards, strings.Join(change, "; "), *e.prev)
		}
		ios.printRingStrip(keys, e.ring, e.set, v.span)
		if err := printRingEpoch(ios, e); err != nil {
			return err
		}
	}
	return nil
}

func printRingEpoch(ios *IO, e ringEpochView) error {
	withRegion := slices.ContainsFunc(e.Cells, func(c ringCellView) bool { return len(c.Regions) > 0 })
	headers := []string{"CELL", "SHARDS", "RANGES"}
	if withRegion {
		headers = []string{"CELL", "REGION", "SHARDS", "RANGES"}
	}
	var rows [][]string
	for _, c := range e.Cells {
		row := []string{c.Cell, strconv.Itoa(c.Shards), strings.Join(c.Ranges, ", ")}
		if withRegion {
			region := strings.Join(c.Regions, ",")
			if region == "" {
				region = "-"
			}
			row = slices.Insert(row, 1, region)
		}
		rows = append(rows, row)
	}
	if err := ios.printTable(headers, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(ios.Out, "balance: %d to %d shards per cell (even share %.1f)\n", e.MinShards, e.MaxShards, e.EvenShare)
	return err
}

// ringSetMinus returns the members of a not in b.
func ringSetMinus(a, b []int) []int {
	var out []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
