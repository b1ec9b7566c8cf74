package idcodec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// MaxLength is the longest id, counted in UTF-16 code units as the
// reference counts it (its id columns are VARCHAR(128)).
const MaxLength = 128

// ID is a parsed self-routing id. Cell is empty when the id carries no cell
// label. A legacy id has Legacy set and only Raw filled in.
type ID struct {
	Raw       string
	Legacy    bool
	Namespace string
	Cell      string
	Epoch     int64
	Shard     int64
	ULID      string // the rest after the shard; may contain dots
}

// String returns the id as it was parsed.
func (id ID) String() string { return id.Raw }

// Parse splits an id into its fields. It never fails: anything that does
// not match {namespace}[.c{cell}].e{digits}.s{digits}.{rest} whole, or whose
// numbers overflow a signed 64-bit integer, comes back with Legacy set.
func Parse(s string) ID {
	legacy := ID{Raw: s, Legacy: true}
	// namespace: one dot-free, non-empty segment.
	dot := strings.IndexByte(s, '.')
	if dot <= 0 {
		return legacy
	}
	ns, rest := s[:dot], s[dot+1:]
	cell := ""
	// The reference's regex backtracks: an optional "c{cell}." segment is
	// tried first, then dropped if the rest does not fit. Try both.
	if strings.HasPrefix(rest, "c") {
		if d := strings.IndexByte(rest, '.'); d > 1 {
			if id, ok := parseTail(rest[d+1:]); ok {
				id.Raw, id.Namespace, id.Cell = s, ns, rest[1:d]
				return id
			}
		}
	}
	id, ok := parseTail(rest)
	if !ok {
		return legacy
	}
	id.Raw, id.Namespace, id.Cell = s, ns, cell
	return id
}

// parseTail parses "e{digits}.s{digits}.{rest}".
func parseTail(s string) (ID, bool) {
	epoch, s, ok := numberSegment(s, 'e')
	if !ok {
		return ID{}, false
	}
	shard, s, ok := numberSegment(s, 's')
	if !ok {
		return ID{}, false
	}
	// The reference's ".+" does not cross a line terminator.
	if s == "" || strings.ContainsAny(s, lineTerminators) {
		return ID{}, false
	}
	return ID{Epoch: epoch, Shard: shard, ULID: s}, true
}

// numberSegment reads "{tag}{ascii digits}." and returns the number and what
// follows the dot. Leading zeros are accepted; overflow is a mismatch.
func numberSegment(s string, tag byte) (int64, string, bool) {
	if len(s) < 3 || s[0] != tag {
		return 0, "", false
	}
	i := 1
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 1 || i >= len(s) || s[i] != '.' {
		return 0, "", false
	}
	n, err := strconv.ParseInt(s[1:i], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, s[i+1:], true
}

// IsLegacy reports whether s is not a self-routing id.
func IsLegacy(s string) bool { return Parse(s).Legacy }

// Format builds an id. The namespace must be non-empty and dot-free; a
// blank cell (empty or only whitespace, as Java's isBlank counts it) omits
// the cell segment, any other cell must be dot-free. Epoch and shard must
// not be negative, and the ulid must be non-empty and on one line, so that
// Parse reads the id back. The id may be at most MaxLength UTF-16 code
// units.
func Format(namespace, cell string, epoch, shard int64, ulid string) (string, error) {
	if err := checkSegment(namespace, "namespace"); err != nil {
		return "", err
	}
	if isBlank(cell) {
		cell = ""
	} else if err := checkSegment(cell, "cell id"); err != nil {
		return "", err
	}
	if epoch < 0 || shard < 0 {
		return "", fmt.Errorf("epoch and shard must not be negative (epoch %d, shard %d)", epoch, shard)
	}
	// The reference would build these, but Parse would call the result
	// legacy: an id must survive its own round trip.
	if ulid == "" || strings.ContainsAny(ulid, lineTerminators) {
		return "", fmt.Errorf("the ulid (the rest of the id) must be non-empty and on one line: %q", ulid)
	}
	var b strings.Builder
	b.WriteString(namespace)
	if cell != "" {
		b.WriteString(".c")
		b.WriteString(cell)
	}
	fmt.Fprintf(&b, ".e%d.s%d.%s", epoch, shard, ulid)
	id := b.String()
	if n := len(utf16.Encode([]rune(id))); n > MaxLength {
		return "", fmt.Errorf("id would be %d characters, over the %d an id may have: %q; shorten the namespace or the cell id", n, MaxLength, id)
	}
	return id, nil
}

// lineTerminators are the characters Java's regex '.' does not match.
const lineTerminators = "\n\r\u0085\u2028\u2029"

// isBlank is Java's String.isBlank: empty or only characters
// Character.isWhitespace accepts. That is not unicode.IsSpace: Java counts
// U+001C..U+001F and not the no-break spaces (U+00A0, U+2007, U+202F) or
// U+0085, so a cell of a single no-break space is a cell, as in the
// reference.
func isBlank(s string) bool {
	for _, r := range s {
		if !javaIsWhitespace(r) {
			return false
		}
	}
	return true
}

func javaIsWhitespace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x1f:
		return true
	case r == 0xa0 || r == 0x2007 || r == 0x202f:
		return false
	}
	return unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp)
}

func checkSegment(v, what string) error {
	if v == "" || strings.IndexByte(v, '.') >= 0 {
		return fmt.Errorf("%s must be non-empty and contain no '.': %q", what, v)
	}
	return nil
}
