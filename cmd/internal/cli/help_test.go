package cli

import (
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
