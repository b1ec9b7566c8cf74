package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/ringfile"
)

// Shell completion: cobra's `fusee completion bash|zsh|fish|powershell`
// scripts, with dynamic values where fusee can know them without being
// told: a reshard's new shard count from the directory's fusee.meta, and
// a ring file's cells and epochs for the ring commands' --cell, --epoch
// and friends. Completion only reads, and says nothing when it cannot.

// addCompletions registers the dynamic completions on the command tree.
func addCompletions(root *cobra.Command) {
	root.CompletionOptions.HiddenDefaultCmd = false
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), "fusee ")
		if path == "reshard" {
			c.ValidArgsFunction = completeReshardArgs
		}
		if strings.HasPrefix(path, "ring ") {
			for flag, fn := range map[string]cobra.CompletionFunc{
				"cell": completeRingCells, "add-cell": completeRingCells, "remove-cell": completeRingCells,
				"epoch": completeRingEpochs,
			} {
				if c.Flags().Lookup(flag) != nil {
					_ = c.RegisterFlagCompletionFunc(flag, fn)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeReshardArgs completes `fusee reshard <dir> <shards>`: the
// directory as a file name, then shard counts around the directory's
// current one (half, one less, one more, double), each described.
func completeReshardArgs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	if len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	m, err := meta.ReadAny(vfs.Default, args[0])
	if err != nil || m.Shards < 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	n := m.Shards
	var out []cobra.Completion
	seen := map[int]bool{n: true}
	for _, c := range []struct {
		n    int
		desc string
	}{{n / 2, "half of the current %d"}, {n - 1, "one fewer than the current %d"}, {n + 1, "one more than the current %d"}, {2 * n, "double the current %d"}} {
		if c.n >= 1 && c.n <= meta.MaxShards && !seen[c.n] {
			seen[c.n] = true
			out = append(out, cobra.CompletionWithDesc(strconv.Itoa(c.n), fmt.Sprintf(c.desc, n)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completionRing loads the ring file named by the command's first
// argument, or nil.
func completionRing(args []string) *ringfile.Policy {
	if len(args) == 0 {
		return nil
	}
	p, err := ringfile.Load(args[0])
	if err != nil {
		return nil
	}
	return p
}

// completeRingCells completes a cell flag with the ring file's declared
// cells.
func completeRingCells(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	p := completionRing(args)
	if p == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	active := map[string]bool{}
	for _, c := range p.ActiveCells() {
		active[c] = true
	}
	var out []cobra.Completion
	for _, d := range p.Cells {
		desc := "declared, holds no shard now"
		if active[d.ID] {
			desc = "active"
		}
		out = append(out, cobra.CompletionWithDesc(d.ID, desc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRingEpochs completes --epoch with the ring file's epochs and
// their status.
func completeRingEpochs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	p := completionRing(args)
	if p == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, e := range p.Epochs {
		out = append(out, cobra.CompletionWithDesc(strconv.FormatInt(e.Number, 10), strings.ToLower(fmt.Sprint(e.Status))))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
