package cli

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes. Scripts rely on these; docs/operations.md lists them.
const (
	ExitOK        = 0   // success
	ExitFailure   = 1   // the command failed, or a check found problems
	ExitUsage     = 2   // bad flags or arguments
	ExitInUse     = 3   // the data directory is locked by another process
	ExitSwitching = 4   // a reshard's switch was interrupted: `fusee reshard <dir>` (no count) finishes it
	ExitConflict  = 5   // a compare-and-set write lost: the file moved on (re-read and retry)
	ExitCancelled = 130 // interrupted by a signal (Ctrl-C, SIGTERM)
)

// usageError marks an error in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns an error that exits with ExitUsage.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError carries an explicit exit code; silent means the command has
// already printed what the operator needs (for example a findings list).
type exitError struct {
	code   int
	err    error
	silent bool
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// exitSilently ends the command with code without printing another line.
func exitSilently(code int, reason string) error {
	return exitError{code: code, err: errors.New(reason), silent: true}
}

// codeMappers let files that own a library's error types add their mapping
// without this file importing every library.
var codeMappers []func(error) (int, bool)

func registerCodeMapper(f func(error) (int, bool)) { codeMappers = append(codeMappers, f) }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	if errors.Is(err, context.Canceled) {
		return ExitCancelled
	}
	for _, m := range codeMappers {
		if code, ok := m(err); ok {
			return code
		}
	}
	return ExitFailure
}
