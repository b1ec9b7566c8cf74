package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command, groups and the root included, explains itself and shows
// an example in --help.
func TestEveryCommandHasHelpAndExample(t *testing.T) {
	root := NewRoot(newIO(nil, nil, nil, nil), "test", nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Short == "" || c.Long == "" {
			t.Errorf("%q has no Short or Long help", c.CommandPath())
		}
		if c.Example == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// Flag values in help are named for what they hold (--owned SHARDS,
// --lock-timeout DUR), never by pflag's type (int64Slice, stringToString),
// and an empty list shows no "(default [])".
func TestHelpNamesFlagValues(t *testing.T) {
	root := NewRoot(newIO(nil, nil, nil, nil), "test", nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		usage := c.LocalFlags().FlagUsages() + c.InheritedFlags().FlagUsages()
		for _, bad := range []string{"int64Slice", "stringToString", " strings ", " string ", " int ", " int64 ", " uint ", " float ", " duration ", "(default [])"} {
			if strings.Contains(usage, bad) {
				t.Errorf("%s --help shows %q:\n%s", c.CommandPath(), bad, usage)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	mint, _, _ := root.Find([]string{"id", "mint"})
	if u := mint.LocalFlags().FlagUsages(); !strings.Contains(u, "--owned SHARDS ") {
		t.Errorf("id mint --help:\n%s", u)
	}
}
