package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

// What each command leaves behind when Ctrl-C (SIGINT) or SIGTERM stops
// it, by command path below the root. An operator who interrupted a
// command needs to know whether anything changed and what to do next,
// not "context canceled". A command whose state depends on how far it got
// says so in its own error instead (""): gen (the directory was not
// created) and reshard (before or after its switch).
var interruptStates = map[string]string{
	"demo":      "the demo's directory was removed, unless --keep was given",
	"gen":       "",
	"reshard":   "",
	"upgrade":   "",
	"inspect":   nothingChanged,
	"verify":    nothingChanged + "; the findings printed so far are not all of them",
	"dump":      nothingChanged + "; the dump printed so far is incomplete",
	"sim drive": "the directory is consistent (every batch in its log is whole); run the same command again to continue",

	"version": nothingChanged,
	"man":     "the man pages written so far are whole; run it again to write them all",

	"id parse":  nothingChanged,
	"id format": nothingChanged,
	"id shard":  nothingChanged,
	"id mint":   nothingChanged + "; the ids printed so far are valid",

	"ring show":           nothingChanged,
	"ring validate":       nothingChanged,
	"ring resolve":        nothingChanged,
	"ring active-cells":   nothingChanged,
	"ring mint":           nothingChanged + "; the ids printed so far are valid",
	"ring plan":           "the ring file was not changed; a plan file (-o) is written whole or not at all",
	"ring export":         "the ring file was not changed; the export (-o) is written whole or not at all",
	"ring init":           ringWriteInterrupted,
	"ring open-epoch":     ringWriteInterrupted,
	"ring retire":         ringWriteInterrupted,
	"ring import":         ringWriteInterrupted,
	"ring push":           "the ring file was not changed; the etcd key is at its old revision or the new one (a push is one transaction); `fusee ring show --store ... --namespace NS` says which",
	"ring pull":           "the etcd key was not changed; the ring file is whole, at its old revision or the new one, or not created (writes are atomic)",
	"ring bindings":       nothingChanged,
	"ring bind":           ringWriteInterrupted,
	"ring unbind":         ringWriteInterrupted,
	"ring prune-bindings": ringWriteInterrupted,
}

const (
	nothingChanged       = "nothing was changed"
	ringWriteInterrupted = "the ring file (or etcd key) is whole, at its old revision or the new one (writes are atomic); `fusee ring show FILE` (or --store ... --namespace NS) says which"
)

// interruptedMessage turns a cancellation into the line Run prints:
// "<command> interrupted: <state>".
func interruptedMessage(cmd *cobra.Command, err error) error {
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	state, ok := interruptStates[path]
	if !ok || state == "" {
		// The command said it itself; drop the cause's "context canceled".
		msg := strings.TrimSuffix(err.Error(), ": "+context.Canceled.Error())
		if msg == context.Canceled.Error() {
			msg = path + " interrupted; it may have stopped part way"
		}
		return exitError{code: ExitCancelled, err: errors.New(msg)}
	}
	return exitError{code: ExitCancelled, err: errors.New(path + " interrupted: " + state)}
}
