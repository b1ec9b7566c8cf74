package reshard

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/switchdir"
)

// State is where a data directory stands with respect to reshard, as its
// files show it after a reshard stopped (a reshard that is running holds
// the lock, so nobody else sees its files).
type State string

// States.
const (
	// StateNone: no reshard left anything behind.
	StateNone State = "none"
	// StateBuilding: fusee.meta is format=local and reshard.new is
	// present: an attempt stopped before its switch (or, rarely, one that
	// finished and stopped while removing its leftovers). The directory
	// holds the shards fusee.meta names and opens as it is.
	StateBuilding State = "building"
	// StateSwitching: fusee.meta is format=reshard: the switch began and
	// did not finish. Nothing but `fusee reshard <dir>` opens the
	// directory.
	StateSwitching State = "switching"
	// StateCleaningUp: fusee.meta is format=local and reshard.old is
	// present: the reshard finished; the old files are a leftover.
	StateCleaningUp State = "cleaning-up"
)

// Status is a data directory's reshard state and what finishes it. Its
// JSON field names are part of `fusee inspect --json`.
type Status struct {
	State State `json:"state"`
	// OldShards and NewShards are the counts a switch is between (only
	// while switching).
	OldShards int `json:"old_shards,omitempty"`
	NewShards int `json:"new_shards,omitempty"`
	// Leftovers are the paths a rerun removes (building, cleaning up).
	Leftovers []string `json:"leftovers,omitempty"`
	// OldFiles and NewFiles say, while switching, where the old and the
	// new log and shard directories are at this moment: per component,
	// either in place or moved aside.
	OldFiles []string `json:"old_files,omitempty"`
	NewFiles []string `json:"new_files,omitempty"`
	// Command is the exact command that finishes the reshard or removes
	// its leftovers (empty for StateNone): the command layer's to fill,
	// as reshard knows nothing of commands.
	Command string `json:"command,omitempty"`
	// Kept is the old layout a reshard with --keep-old kept (nil: none).
	Kept *KeptLayout `json:"kept,omitempty"`
	// Report is, while cleaning up, the finished switch's report, not
	// yet given its name in reshard-reports.
	Report string `json:"report,omitempty"`
	// Reports are the reports the directory keeps (reshard-reports),
	// oldest first.
	Reports []KeptReport `json:"reports,omitempty"`
}

// ReadStatus reports dir's reshard state, read-only: it takes the
// directory's lock (an *meta.InUseError when another process holds it,
// as a running reshard does), reads fusee.meta in any state and looks for
// reshard.new and reshard.old, then lets the lock go. It opens no shard
// and changes nothing.
func ReadStatus(fs vfs.FS, dir string) (*Status, error) {
	d, err := meta.Open(meta.ReadOnlyFS(fs), dir, meta.Options{AllowSwitching: true})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fs = d.FS()
	m := d.Meta()
	newDir, oldDir := switchdir.Source(fs, dir), fs.PathJoin(dir, OldDirName)
	st := &Status{State: StateNone}
	if st.Kept, err = switchdir.ReadKeptLayout(fs, dir); err != nil {
		return nil, err
	}
	if st.Reports, err = ListReports(fs, dir); err != nil {
		return nil, err
	}
	if m.Switching() {
		st.State, st.OldShards, st.NewShards = StateSwitching, m.OldShards, m.NewShards
		// The same test finishSwitch makes: while reshard.new/X exists
		// the new X has not moved in, and X in place is the old one.
		for _, name := range switchdir.LayoutNames {
			pending, err := switchdir.Exists(fs, fs.PathJoin(newDir, name))
			if err != nil {
				return nil, err
			}
			if pending {
				old := fs.PathJoin(dir, name)
				if aside := fs.PathJoin(oldDir, name); switchdir.FileExists(fs, aside) {
					old = aside
				}
				st.OldFiles = append(st.OldFiles, old)
				st.NewFiles = append(st.NewFiles, fs.PathJoin(newDir, name))
				continue
			}
			st.OldFiles = append(st.OldFiles, fs.PathJoin(oldDir, name))
			st.NewFiles = append(st.NewFiles, fs.PathJoin(dir, name))
		}
		return st, nil
	}
	st.Leftovers = switchdir.Leftovers(fs, dir)
	st.Report = switchdir.PendingReport(fs, dir)
	switch {
	case st.Report != "":
		// A switch finished (its report carried in, the final
		// fusee.meta written) and its cleanup did not, whatever is left.
		st.State, st.NewShards = StateCleaningUp, m.Shards
	case len(st.Leftovers) == 0:
		return st, nil
	case st.Leftovers[0] != fs.PathJoin(dir, NewDirName):
		st.State, st.NewShards = StateCleaningUp, m.Shards
	default:
		st.State = StateBuilding
	}
	return st, nil
}
