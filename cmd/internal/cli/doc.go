// Package cli holds the fusee commands: one file per command, each parsing
// flags, calling a library package and printing the result.
//
// It owns everything about terminals: colour (lipgloss, only on a terminal
// and never with NO_COLOR), tables, JSON output, progress lines, the
// mapping of typed errors to exit codes, and configuration (flags, FUSEE_*
// environment variables, the --config file, through viper).
//
// It must never hold storage or placement logic: that lives in reshard,
// journal, meta, ringfile and idcodec, which know nothing about cobra or
// terminals.
package cli
