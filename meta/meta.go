package meta

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Values of the format= key.
const (
	// FormatLocal is the format of a data directory at rest.
	FormatLocal = "local"
	// Switching is the format of a fusee.meta written while a reshard
	// swaps the directory's files to a new shard count. Nothing but reshard
	// opens a directory in this state.
	Switching = "reshard"
	// Upgrading is the format of a fusee.meta written while an upgrade
	// swaps a log format 2 directory's files for rebuilt ones with the
	// shared log (log=3). Its new stores are at LSN 0 and its old ones
	// belong to the per-shard logs, so neither half opens alone: nothing
	// but upgrade opens a directory in this state.
	Upgrading = "upgrade"
)

// Values of the log= key.
const (
	// LogPerShard is the older log format: one log per shard.
	LogPerShard = 2
	// LogShared is the current log format: one write-ahead log shared by
	// every shard.
	LogShared = 3
)

// MaxShards is the most shards a data directory can have: a shard number
// is packed into 10 bits.
const MaxShards = 1024

// Meta is the content of fusee.meta.
type Meta struct {
	Format string // FormatLocal, Switching or Upgrading
	Log    int    // LogPerShard or LogShared
	Shards int    // 1..MaxShards; while switching, the new count

	// OldShards and NewShards are set only while Format is Switching: the
	// counts the interrupted switch goes from and to.
	OldShards, NewShards int
}

// Switching reports whether m marks a reshard whose switch has begun and
// not finished.
func (m Meta) Switching() bool { return m.Format == Switching }

// Upgrading reports whether m marks an upgrade whose switch has begun and
// not finished.
func (m Meta) Upgrading() bool { return m.Format == Upgrading }

// Keys in canonical order: the order Marshal writes them.
var keys = []string{"format", "log", "shards", "old_shards", "new_shards"}

// header is the comment line Marshal writes first.
const header = "# fusee data directory identity. Written by fusee: do not edit while anything has the directory open.\n"

// get returns the canonical text of one key's value.
func (m Meta) get(key string) string {
	switch key {
	case "format":
		return m.Format
	case "log":
		return strconv.Itoa(m.Log)
	case "shards":
		return strconv.Itoa(m.Shards)
	case "old_shards":
		return strconv.Itoa(m.OldShards)
	case "new_shards":
		return strconv.Itoa(m.NewShards)
	}
	panic("meta: unknown key " + key)
}

// set checks one value and stores it. It returns what is wrong with
// key=value, with the fix, or "" when it is fine. key must be known.
func (m *Meta) set(key, value string) string {
	if key == "format" {
		if value != FormatLocal && value != Switching && value != Upgrading {
			return fmt.Sprintf("format=%s is not a known format (%s, %s while a reshard switches files, or %s while an upgrade does); this file may come from a newer fusee", value, FormatLocal, Switching, Upgrading)
		}
		m.Format = value
		return ""
	}
	n, problem := decimal(key, value)
	if problem != "" {
		return problem
	}
	switch key {
	case "log":
		if n != LogPerShard && n != LogShared {
			return fmt.Sprintf("log=%s is not a known log format (%d, or the older %d); this file may come from a newer fusee", value, LogShared, LogPerShard)
		}
		m.Log = n
		return ""
	}
	if n < 1 || n > MaxShards {
		return fmt.Sprintf("%s=%s is out of range 1..%d; a shard number is packed into 10 bits, so set a count from 1 to %d", key, value, MaxShards, MaxShards)
	}
	switch key {
	case "shards":
		m.Shards = n
	case "old_shards":
		m.OldShards = n
	case "new_shards":
		m.NewShards = n
	}
	return ""
}

// decimal parses a plain decimal number: ASCII digits, no sign, no leading
// zero, so that every number has exactly one spelling.
func decimal(key, value string) (int, string) {
	if value == "" {
		return 0, fmt.Sprintf("%s= has no value; write a number, e.g. %s=8", key, key)
	}
	for i := 0; i < len(value); i++ {
		if value[i] < '0' || value[i] > '9' {
			return 0, fmt.Sprintf("%s=%s is not a plain decimal number; write digits only, e.g. %s=8", key, value, key)
		}
	}
	if len(value) > 1 && value[0] == '0' {
		return 0, fmt.Sprintf("%s=%s has a leading zero; write %s=%s", key, value, key, strings.TrimLeft(value, "0"))
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		// Only overflow is left; the caller's range check reports it.
		return math.MaxInt, ""
	}
	return n, ""
}

// crossProblem checks the rules between keys once each value is known to
// be fine on its own. present says which keys the file has. It returns the
// key the problem is best reported at ("" for the whole file) and the
// problem with its fix, or "", "" when m is consistent.
func (m Meta) crossProblem(present func(key string) bool) (string, string) {
	for _, k := range keys[:3] {
		if !present(k) {
			return "", fmt.Sprintf("missing %s=; every fusee.meta has format=, log= and shards= lines: add the missing one", k)
		}
	}
	if !m.Switching() {
		for _, k := range keys[3:] {
			if present(k) {
				return k, fmt.Sprintf("%s= is only allowed with format=%s (an interrupted reshard); remove the line", k, Switching)
			}
		}
		if m.Upgrading() && m.Log != LogShared {
			return "log", fmt.Sprintf("format=%s needs log=%d (the format the interrupted upgrade switches to), not log=%d; restore it, then run fusee upgrade", Upgrading, LogShared, m.Log)
		}
		return "", ""
	}
	for _, k := range keys[3:] {
		if !present(k) {
			return "", fmt.Sprintf("format=%s needs old_shards= and new_shards= (the counts the interrupted reshard switches between) and %s= is missing; restore it, then run fusee reshard", Switching, k)
		}
	}
	if m.Shards != m.NewShards {
		return "shards", fmt.Sprintf("shards=%d but new_shards=%d; while format=%s, shards= names the new count, so they must be equal", m.Shards, m.NewShards, Switching)
	}
	return "", ""
}

// Validate reports whether m can be written: the same rules Parse applies
// to a file.
func (m Meta) Validate() error {
	present := func(k string) bool {
		switch k {
		case "old_shards":
			return m.OldShards != 0
		case "new_shards":
			return m.NewShards != 0
		}
		return true
	}
	for _, k := range keys {
		if !present(k) {
			continue
		}
		var scratch Meta
		if problem := scratch.set(k, m.get(k)); problem != "" {
			return fmt.Errorf("invalid %s: %s", FileName, problem)
		}
	}
	if _, problem := m.crossProblem(present); problem != "" {
		return fmt.Errorf("invalid %s: %s", FileName, problem)
	}
	return nil
}

// Marshal returns the canonical bytes of m: the header comment, then each
// key in fixed order, old_shards and new_shards only while switching.
func (m Meta) Marshal() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(header)
	n := 3
	if m.Switching() {
		n = len(keys)
	}
	for _, k := range keys[:n] {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m.get(k))
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
}
