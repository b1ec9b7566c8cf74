package meta

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for errors.Is; the typed errors below carry the details.
var (
	// ErrInUse: another process holds the directory's lock.
	ErrInUse = errors.New("data directory in use")
	// ErrSwitching: the directory's reshard or upgrade was interrupted
	// after its switch began; only the command that was interrupted may
	// open it, to finish the switch (*SwitchingError names reshard,
	// *UpgradingError upgrade).
	ErrSwitching = errors.New("data directory has an interrupted switch (reshard or upgrade)")
	// ErrOldLog: the directory's log format is older than the caller
	// reads; `fusee upgrade` converts log format 2.
	ErrOldLog = errors.New("data directory has an older log format")
)

// InUseError is returned when the lock is held by someone else. Holder
// names it ("pid 123 (fusee verify /data)"), "" when that is not known.
type InUseError struct{ Dir, Holder string }

func (e *InUseError) Error() string {
	if e.Holder != "" {
		return fmt.Sprintf("%s is in use by %s; stop it and retry", e.Dir, e.Holder)
	}
	return fmt.Sprintf("%s is in use by another process (engine, reshard or inspect); stop it and retry", e.Dir)
}

func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// SwitchingError is returned when an opener finds format=reshard.
type SwitchingError struct {
	Dir                  string
	OldShards, NewShards int
}

func (e *SwitchingError) Error() string {
	return fmt.Sprintf("%s: an interrupted reshard (from %d to %d shards) must be finished before anything can open the directory: run `fusee reshard %s` to finish the interrupted reshard",
		e.Dir, e.OldShards, e.NewShards, ShellQuote(e.Dir))
}

func (e *SwitchingError) Is(target error) bool { return target == ErrSwitching }

// UpgradingError is returned when an opener finds format=upgrade: an
// upgrade from log format 2 was interrupted after its switch began.
type UpgradingError struct{ Dir string }

func (e *UpgradingError) Error() string {
	return fmt.Sprintf("%s: an interrupted upgrade (log format %d to %d) must be finished before anything can open the directory: run `fusee upgrade %s` to finish it",
		e.Dir, LogPerShard, LogShared, ShellQuote(e.Dir))
}

// Is makes an UpgradingError match ErrSwitching: the same refusal, with
// another command to finish it.
func (e *UpgradingError) Is(target error) bool { return target == ErrSwitching }

// LogError is returned when the directory's log format is not the one the
// caller reads. Only an older format (Have < Want) is ErrOldLog.
type LogError struct {
	Dir        string
	Have, Want int
}

func (e *LogError) Error() string {
	if e.Have < e.Want {
		return fmt.Sprintf("%s uses log format %d (a log per shard), older than the format %d this command reads: stop the engine and run `fusee upgrade %s` to convert it (docs/operations.md, \"Upgrading the log format\")",
			e.Dir, e.Have, e.Want, ShellQuote(e.Dir))
	}
	return fmt.Sprintf("%s uses log format %d, but this command reads only log format %d", e.Dir, e.Have, e.Want)
}

func (e *LogError) Is(target error) bool { return target == ErrOldLog && e.Have < e.Want }

// ShellQuote quotes s for a POSIX shell when it needs it, so the command
// in a message can be pasted as it is.
func ShellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
