package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func init() { addCommand(newDemoCmd) }

type demoOptions struct {
	dir    string
	keep   bool
	runs   int
	shards int
}

// The demo is a script of real fusee commands, each run in-process through
// the same command tree an operator uses, with its output shown under a
// "$ fusee ..." line. It exercises the code paths, not a copy of them.
func newDemoCmd(ios *IO) *cobra.Command {
	opts := demoOptions{runs: 2000, shards: 4}
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--keep]",
		Short: "Run the main job on a built-in example, in a temporary directory",
		Long: `Demo walks through what fusee is for on a built-in example, running the
real commands one after another and showing each with its output:

  1. gen: a simulated engine fills a data directory with runs stopped
     mid-flight (running, parked, finished, tombstoned, messages in
     outboxes, a log tail after the last checkpoint);
  2. verify and inspect: the directory is read through the engine's own
     recovery, read-only, and checked;
  3. reshard: a dry run shows the plan (runs moved and renumbered, the
     pending completion tokens that change, the space needed), then the
     real run changes the shard count (from --shards to --shards+3);
     verify and inspect the result;
  4. sim drive: the engine reopens it and runs every run to completion;
     verify again;
  5. ring: a namespace's placement file goes through a cell split (the
     seed's worked example): ids minted before the split keep resolving to
     their old cell, new ones go to the new cell.

It writes only under DIR (a new temporary directory unless --dir is given)
and removes it afterwards unless --keep.`,
		Example: `  fusee demo
  fusee demo --dir /tmp/fusee-demo --keep
  go run ./cmd/fusee demo`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd, ios, opts)
		},
	}
	cmd.Flags().StringVar(&opts.dir, "dir", "", "work in this directory (must not exist or be empty) instead of a temporary one")
	cmd.Flags().BoolVar(&opts.keep, "keep", false, "keep the directory afterwards")
	cmd.Flags().IntVar(&opts.runs, "runs", opts.runs, "runs to generate")
	cmd.Flags().IntVar(&opts.shards, "shards", opts.shards, "shard count of the generated directory")
	return cmd
}

func runDemo(cmd *cobra.Command, ios *IO, opts demoOptions) (err error) {
	dir := opts.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "fusee-demo-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !opts.keep {
		defer func() {
			if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
				err = rmErr
			}
		}()
	} else {
		defer fmt.Fprintf(ios.Err, "demo: kept %s\n", dir)
	}
	data := filepath.Join(dir, "data")
	ring := filepath.Join(dir, "orders.ring")
	plan := filepath.Join(dir, "split.plan")
	d := demo{cmd: cmd, ios: ios}

	d.section("A data directory, filled by the simulated engine and stopped mid-flight")
	d.run("gen", data, "--shards", fmt.Sprint(opts.shards), "--runs", fmt.Sprint(opts.runs), "--seed", "1")
	d.run("verify", data)
	d.run("inspect", data)

	d.section("Reshard it offline to a new shard count: plan first, then the real run")
	d.run("reshard", data, fmt.Sprint(opts.shards+3), "--dry-run")
	d.run("reshard", data, fmt.Sprint(opts.shards+3))
	d.run("verify", data)
	d.run("inspect", data)

	d.section("The engine reopens the resharded directory and runs every run to completion")
	d.run("sim", "drive", data)
	d.run("verify", data)

	d.section("A ring file: namespace orders, 16 shards on one cell, then a cell split")
	d.run("ring", "init", ring, "--namespace", "orders", "--shards", "16", "--cells", "cellA")
	oldID := strings.TrimSpace(d.capture("ring", "mint", ring, "--cell", "cellA"))
	d.run("ring", "plan", ring, "--split", "cellA:cellB", "-o", plan)
	d.run("ring", "open-epoch", ring, "--plan", plan)
	newIDs := strings.Fields(d.capture("ring", "mint", ring, "--cell", "cellB", "--count", "2"))
	d.run(append([]string{"ring", "resolve", ring, oldID}, newIDs...)...)
	d.run("ring", "show", ring)
	d.run("ring", "active-cells", ring)
	return d.err
}

type demo struct {
	cmd *cobra.Command
	ios *IO
	err error
}

func (d *demo) section(title string) {
	if d.err != nil {
		return
	}
	fmt.Fprintln(d.ios.Out)
	fmt.Fprintln(d.ios.Out, styleHeader.Render("## "+title))
}

// run executes one fusee command with the demo's output streams.
func (d *demo) run(args ...string) {
	if d.err != nil {
		return
	}
	fmt.Fprintln(d.ios.Out, styleGood.Render("$ fusee "+strings.Join(args, " ")))
	d.exec(d.ios, args)
}

// capture executes one fusee command, shows it, and returns its stdout.
func (d *demo) capture(args ...string) string {
	if d.err != nil {
		return ""
	}
	fmt.Fprintln(d.ios.Out, styleGood.Render("$ fusee "+strings.Join(args, " ")))
	var out bytes.Buffer
	sub := &IO{In: d.ios.In, Out: &out, Err: d.ios.Err, ErrTTY: d.ios.ErrTTY}
	d.exec(sub, args)
	fmt.Fprint(d.ios.Out, out.String())
	return out.String()
}

func (d *demo) exec(ios *IO, args []string) {
	root := NewRoot(ios, d.cmd.Root().Version, nil)
	root.SetArgs(args)
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	if err := root.ExecuteContext(d.cmd.Context()); err != nil {
		d.err = fmt.Errorf("demo step 'fusee %s': %w", strings.Join(args, " "), err)
	}
}
