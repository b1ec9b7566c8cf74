package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/meta"
)

// dataCommands are the commands that lock a data directory; each gets
// --lock-timeout (the ring commands have their own, for a ring file).
var dataCommands = map[string]bool{"fusee gen": true, "fusee sim drive": true, "fusee inspect": true, "fusee verify": true,
	"fusee dump": true, "fusee reshard": true, "fusee upgrade": true}

// addLockTimeoutFlags gives every data command --lock-timeout.
func addLockTimeoutFlags(root *cobra.Command) {
	for _, c := range root.Commands() {
		for _, cmd := range append([]*cobra.Command{c}, c.Commands()...) {
			if dataCommands[cmd.CommandPath()] {
				cmd.Flags().Duration("lock-timeout", 0, "how long to wait for the data directory's lock while the engine or another fusee holds it, before giving up (exit 3); 0 does not wait")
			}
		}
	}
}

// lockWaitKey is the context key of the data directory's lock wait.
type lockWaitKey struct{}

type lockWait struct {
	wait time.Duration
	ios  *IO
}

// withLockWait puts cmd's --lock-timeout into its context, for dataFS.
func withLockWait(cmd *cobra.Command, ios *IO) {
	f := cmd.Flags().Lookup("lock-timeout")
	if f == nil || !dataCommands[cmd.CommandPath()] {
		return
	}
	d, err := time.ParseDuration(f.Value.String()) // its Type is "DUR" (nameFlagValues)
	if err != nil || d <= 0 {
		return
	}
	cmd.SetContext(context.WithValue(cmd.Context(), lockWaitKey{}, lockWait{wait: d, ios: ios}))
}

// dataFS is the filesystem a data command opens its directory on: the
// disk, whose locks wait as --lock-timeout says, telling the operator
// once who holds the lock they wait for.
func dataFS(ctx context.Context) vfs.FS {
	w, ok := ctx.Value(lockWaitKey{}).(lockWait)
	if !ok {
		return vfs.Default
	}
	return meta.WithLockWait(vfs.Default, w.wait, func(path, holder string) {
		w.ios.active.clear()
		fmt.Fprintf(w.ios.Err, "waiting for %s: locked by %s; giving up after %s (--lock-timeout)\n", path, holder, w.wait)
	})
}
