package meta

import (
	"fmt"
	"strings"
)

// FileError is a problem with the content of fusee.meta. Line is 1-based;
// 0 means the file as a whole (a missing key). Msg says what is wrong and
// how to fix it.
type FileError struct {
	Path string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

// Parse reads the content of a fusee.meta file; path is used only in
// errors. The rules are in the package documentation. When several things
// are wrong, the first line-level problem is reported, then missing keys,
// then the rules between keys.
func Parse(path string, data []byte) (Meta, error) {
	fail := func(line int, format string, args ...any) (Meta, error) {
		return Meta{}, &FileError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) == 0 {
		return fail(0, "the file is empty; it should hold format=, log= and shards= lines (was it truncated? restore it from a backup)")
	}
	text := string(data)
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var m Meta
	seen := make(map[string]int) // key -> line it was set on
	for i, raw := range lines {
		n := i + 1
		line, ok := strings.CutSuffix(raw, "\n")
		if !ok {
			return fail(n, "the last line has no newline at its end, so the file may be cut short; if %q is whole, end the line with a newline", line)
		}
		if strings.HasSuffix(line, "\r") {
			return fail(n, "the line ends with a carriage return (\\r); save the file with Unix (LF) line endings")
		}
		if line == "" || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fail(n, "%q is not key=value, a comment (#...) or an empty line", line)
		}
		if strings.TrimSpace(key) != key || strings.TrimSpace(value) != value {
			return fail(n, "%q has spaces around the key or value; write %s=%s with none", line, strings.TrimSpace(key), strings.TrimSpace(value))
		}
		if !isKey(key) {
			return fail(n, "%q is not a valid key (lowercase letters and '_' only); write key=value", key)
		}
		if !known(key) {
			return fail(n, "unknown key %q; known keys are %s (this file may come from a newer fusee)", key, strings.Join(keys, ", "))
		}
		if first, dup := seen[key]; dup {
			return fail(n, "%s= appears again (first on line %d); keep only one", key, first)
		}
		seen[key] = n
		if problem := m.set(key, value); problem != "" {
			return fail(n, "%s", problem)
		}
	}
	present := func(k string) bool { _, ok := seen[k]; return ok }
	if key, problem := m.crossProblem(present); problem != "" {
		return fail(seen[key], "%s", problem)
	}
	return m, nil
}

func isKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < 'a' || s[i] > 'z') && s[i] != '_' {
			return false
		}
	}
	return true
}

func known(key string) bool {
	for _, k := range keys {
		if k == key {
			return true
		}
	}
	return false
}
