package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard"
)

// inspectUpgrading is inspect of a directory whose upgrade's switch was
// interrupted (format=upgrade, err a *meta.UpgradingError): nothing is
// opened, --json prints dir, format and reshard (state switching, the
// command that finishes it) as for an interrupted reshard, and the exit
// code is 4 with the refusal's message.
func inspectUpgrading(ios *IO, opts inspectOptions, dir string, err error) error {
	if opts.json {
		st := &reshard.Status{State: reshard.StateSwitching, Command: "fusee upgrade " + meta.ShellQuote(dir)}
		if m, merr := meta.ReadAny(vfs.Default, dir); merr == nil {
			st.OldShards, st.NewShards = m.Shards, m.Shards
		}
		if perr := ios.printJSON(switchingJSON{Dir: dir, Format: meta.Upgrading, Reshard: st}); perr != nil {
			return perr
		}
	}
	return exitError{code: ExitSwitching, err: err}
}

// withLeftovers adds to a refusal to open dir (log format 2, which only
// upgrade opens) what an earlier reshard or upgrade left in it, which
// inspect names for a directory it can open: rs's leftovers and the
// command that removes them.
func withLeftovers(err error, rs *reshard.Status) error {
	if !errors.Is(err, meta.ErrOldLog) || rs == nil || len(rs.Leftovers) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s is left from an upgrade or reshard that stopped: the upgrade removes it first", err, strings.Join(rs.Leftovers, " and "))
}

// bytesRow names a reshard's or upgrade's byte counts: a dry run writes
// nothing, and its second figure is what the real run would write.
func bytesRow(dryRun bool) string {
	if dryRun {
		return "bytes read / the real run writes"
	}
	return "bytes read / written"
}
