// Package switchdir owns the switch of a data directory from one layout
// to another (docs/reshard.md §7, §9, §11): the names of the folders a
// switch uses (reshard.new, reshard.old, reshard.kept), the steps that
// move a built layout in and the old one aside, kept or removed, the
// fusee.meta that ends a switch, the leftovers a crash can leave, the
// record of a kept layout and its fingerprint, and where the report of a
// switch is at each step (the source, pending, named in reshard-reports).
// A reshard, an upgrade and an undo share it.
//
// It moves, syncs and removes whole files and folders, and reads only
// fusee.meta, store headers and log ends; it must never rewrite a shard,
// append to a log or read a report's content beyond its name, and it
// knows nothing of the plan, the rewrite or commands.
package switchdir

import "github.com/cockroachdb/pebble/v2/vfs"

// Dir is a data directory as a switch sees it.
type Dir struct {
	FS   vfs.FS
	Path string
	// Step, a testing knob (nil in production), is called at each named
	// step of a switch and of its report's way into reshard-reports; an
	// error it returns stops the operation there, as a crash would.
	Step func(step string) error
}

// Hook runs d's testing knob at step.
func (d Dir) Hook(step string) error {
	if d.Step == nil {
		return nil
	}
	return d.Step(step)
}
