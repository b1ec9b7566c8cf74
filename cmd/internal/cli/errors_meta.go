package cli

import (
	"errors"

	"github.com/fusee-dev/fusee/meta"
)

// The meta package's refusals have their own exit codes, so that scripts
// can tell "wait and retry" (in use) from "finish the reshard first".
func init() {
	registerCodeMapper(func(err error) (int, bool) {
		switch {
		case errors.Is(err, meta.ErrInUse):
			return ExitInUse, true
		case errors.Is(err, meta.ErrSwitching):
			return ExitSwitching, true
		}
		return 0, false
	})
}
