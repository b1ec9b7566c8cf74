package ringfile

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors; the typed errors below wrap them so callers can test
// with errors.Is and map them to exit codes.
var (
	// ErrConflict: a compare-and-set lost, the file moved on.
	ErrConflict = errors.New("revision conflict")
	// ErrInvalid: the policy has error findings.
	ErrInvalid = errors.New("invalid policy")
	// ErrNotReady: no epoch places the namespace's instances; resolution
	// fails closed rather than guess a cell.
	ErrNotReady = errors.New("namespace not ready")
	// ErrUnplaced: the id's epoch does not place its shard on exactly one
	// cell. Never answered by wrapping onto another slot.
	ErrUnplaced = errors.New("shard not placed")
	// ErrCellMismatch: the id is labelled with a cell other than the one
	// its epoch places its shard on.
	ErrCellMismatch = errors.New("id labelled with another cell")
	// ErrShardSet: a new epoch's shard set differs from the current one
	// in a way the write did not name.
	ErrShardSet = errors.New("shard set changed without being named")
	// ErrApplied: a plan opened again, its epoch exists already.
	ErrApplied = errors.New("plan applied already")
	// ErrUnknownCell: the file declares no cell of that id.
	ErrUnknownCell = errors.New("cell not declared")
	// ErrOtherNamespace: the id belongs to another namespace.
	ErrOtherNamespace = errors.New("id of another namespace")
	// ErrSealed: a write would change published history (a ring, an
	// epoch's existence, a status going backwards).
	ErrSealed = errors.New("published history is sealed")
	// ErrLocked: another process held the file's lock for too long.
	ErrLocked = errors.New("ring file is locked by another process")
)

// ConflictError reports a lost compare-and-set.
type ConflictError struct {
	File     string
	Expected int64
	Actual   int64
	What     string // what carried the expectation: "--expect-revision", "the plan"
	Missing  bool   // there is no file yet
	Noun     string // what holds the policy: "file" when empty, "key" in etcd
}

func (e *ConflictError) Error() string {
	noun := e.Noun
	if noun == "" {
		noun = "file"
	}
	if e.Missing {
		return fmt.Sprintf("%s: %s expects revision %d but the %s does not exist yet", e.File, e.What, e.Expected, noun)
	}
	advice := "re-read it and retry"
	if strings.HasPrefix(e.What, "the plan") {
		advice = "plan again from the current epoch"
	}
	return fmt.Sprintf("%s: %s expects revision %d but the %s is at revision %d: it moved on; %s",
		e.File, e.What, e.Expected, noun, e.Actual, advice)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// InvalidError carries every finding of a policy that may not be acted on.
type InvalidError struct {
	File     string
	Findings []Finding
}

func (e *InvalidError) Error() string {
	errs := 0
	var first string
	for _, f := range e.Findings {
		if f.Severity == SeverityError {
			if errs == 0 {
				first = f.String()
			}
			errs++
		}
	}
	name := e.File
	if name == "" {
		name = "policy"
	}
	return fmt.Sprintf("%s is invalid (%d problem%s); first: %s", name, errs, plural(errs), first)
}

func (e *InvalidError) Unwrap() error { return ErrInvalid }

// SyntaxError is one line the parser could not accept.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return position(e.File, e.Line) + e.Msg }

// position formats "file:line: ", leaving out what is unknown.
func position(file string, line int) string {
	switch {
	case file != "" && line > 0:
		return fmt.Sprintf("%s:%d: ", file, line)
	case file != "":
		return file + ": "
	case line > 0:
		return fmt.Sprintf("line %d: ", line)
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// joinLines lists messages one per line, indented, for multi-part errors.
func joinLines(msgs []string) string {
	return "\n  " + strings.Join(msgs, "\n  ")
}

// UnknownCellError is a cell id the ring file does not declare.
type UnknownCellError struct {
	Cell  string
	File  string
	Cells []string // the cells the file declares
}

func (e *UnknownCellError) Error() string {
	return fmt.Sprintf("cell %s is not declared in %s (its cells: %s); a cell joins with `fusee ring plan --add-cell` or `--split`",
		e.Cell, e.File, strings.Join(e.Cells, ", "))
}

func (e *UnknownCellError) Is(target error) bool { return target == ErrUnknownCell }

// LockedError is a write that gave up waiting for another writer's lock.
type LockedError struct {
	File   string
	Holder string // who holds it: "pid 123 (...)" or "another process"
	Waited time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is locked by %s, still after %s: another write of it is running; retry when it has finished", e.File, e.Holder, e.Waited)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// AppliedError is a plan opened again: the epoch it opens exists already
// with its ring. Not a lost race: there is nothing to retry.
type AppliedError struct {
	File     string
	Epoch    int64
	Revision int64
}

func (e *AppliedError) Error() string {
	return fmt.Sprintf("%s: the plan was applied already: epoch %d has its ring (the policy is now at revision %d); nothing to do (to change placement again, plan from the current epoch)",
		e.File, e.Epoch, e.Revision)
}

func (e *AppliedError) Is(target error) bool { return target == ErrApplied }
