package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringActiveCellsOptions struct {
	json  bool
	store ringStoreFlags
}

func newRingActiveCellsCmd(ios *IO) *cobra.Command {
	var opts ringActiveCellsOptions
	cmd := &cobra.Command{
		Use:   "active-cells (FILE | --store etcd://HOST:PORT --namespace NS)",
		Short: "List the cells workers must poll: every cell of a non-retired epoch",
		Long: `Active-cells prints every cell named by the ring of an epoch that is OPEN
or DRAINING, one per line, sorted: a draining epoch's instances live on
until they finish, so workers keep polling its cells until it is retired.

Preconditions: FILE is valid. --json prints {"revision", "cells": [{"cell",
"epochs"}]}: the revision is the generation a worker can watch to know
when to re-read the list.` + ringStoreHelp,
		Example: `  fusee ring active-cells orders.ring
  fusee ring active-cells orders.ring --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.store.run(args, func(st ringfile.Store) error { return runRingActiveCells(cmd.Context(), ios, opts, st) })
		},
	}
	opts.store.add(cmd, nil)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print as JSON")
	return cmd
}

type ringActiveCellView struct {
	Cell   string  `json:"cell"`
	Epochs []int64 `json:"epochs"`
}

func runRingActiveCells(ctx context.Context, ios *IO, opts ringActiveCellsOptions, st ringfile.Store) error {
	p, err := ringLoad(ctx, st)
	if err != nil {
		return err
	}
	cells := p.ActiveCells()
	if !opts.json {
		for _, c := range cells {
			fmt.Fprintln(ios.Out, c)
		}
		return nil
	}
	views := make([]ringActiveCellView, len(cells))
	for i, c := range cells {
		views[i] = ringActiveCellView{Cell: c, Epochs: []int64{}}
		for _, e := range p.Epochs {
			if e.Status != ringfile.StatusRetired && len(e.Ring.Owned(c)) > 0 {
				views[i].Epochs = append(views[i].Epochs, e.Number)
			}
		}
	}
	return ios.printJSON(struct {
		Revision int64                `json:"revision"`
		Cells    []ringActiveCellView `json:"cells"`
	}{p.Revision, views})
}
