package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { addCommand(newVersionCmd) }

// Set by a release build's linker flags (goreleaser.yaml):
// -X github.com/fusee-dev/fusee/cmd/internal/cli.commit=... and .date=...
var commit, date string

// buildInfo is what `fusee version` reports.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`   // "unknown" when not known
	Date     string `json:"date"`     // the commit's time, or the release's; "" when not known
	Modified any    `json:"modified"` // built from a tree with uncommitted changes: true, false or "unknown"
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// versionUnknown is the commit, and whether the tree was modified, of a binary
// built without version-control information (go build -buildvcs=false, a
// build outside a checkout): a false "modified" would claim what nobody
// checked.
const versionUnknown = "unknown"

// readBuildInfo fills in what the linker flags did not set from the
// module and version-control information Go records in the binary (go
// install, go build in a checkout).
func readBuildInfo(version string) buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.fromSettings(bi.Settings)
	}
	if b.Commit == "" {
		b.Commit = versionUnknown
	}
	if b.Modified == nil {
		b.Modified = versionUnknown
	}
	return b
}

// fromSettings takes the commit, its time and the tree's state from the
// vcs.* build settings.
func (b *buildInfo) fromSettings(settings []debug.BuildSetting) {
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if b.Commit == "" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
}

func (b buildInfo) String() string {
	s := "fusee " + b.Version
	c := b.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	s += ", commit " + c
	switch b.Modified {
	case true:
		s += " (modified)"
	case versionUnknown:
		if b.Commit != versionUnknown {
			s += " (modified: unknown)"
		}
	}
	if b.Date != "" {
		s += ", " + b.Date
	}
	return s + ", " + b.Go + " " + b.Platform
}

func newVersionCmd(ios *IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print fusee's version, commit and Go version",
		Long: `Version prints the version fusee was built as (a release's tag, the module
version of "go install ...@version", or "dev"), the commit and its time
when known, whether the tree had uncommitted changes, and the Go version
and platform. A binary built without version-control information says
"unknown" for the commit and for whether the tree was modified.
"fusee --version" prints the same line.`,
		Example: `  fusee version
  fusee version --json | jq -r .commit`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := readBuildInfo(cmd.Root().Version)
			if asJSON {
				return ios.printJSON(b)
			}
			_, err := fmt.Fprintln(ios.Out, b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as JSON")
	return cmd
}
