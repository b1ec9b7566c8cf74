package ringfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The ring file format (docs/rings.md is the full description):
//
//	# comment lines and blank lines are ignored
//	fusee-ring 2
//	namespace orders
//	revision 7
//	current-epoch 1
//	cell cellA fingerprint=jdbc-7f3a
//	cell cellB
//	epoch 0 draining shards=0-511
//	  0-511 cellA
//	epoch 1 open shards=0-1023
//	  0-511 cellA
//	  512-1023 cellB@eu-west
//
// Directives start in column 0; slot lines are indented and belong to the
// epoch above them. An epoch line names the epoch's shard set, which its
// slots must place exactly, each once. A slot line is a shard or an
// inclusive range of shards and the cell (with an optional @region) they
// are placed on, in ring order. Format writes one canonical text for a
// policy: header fields in that order, cells sorted, epochs ascending,
// consecutive slots merged into ranges.
//
// Format 1, which fusee wrote before shard sets were per epoch, has a
// `shards S` header after the namespace and epoch lines without shards=:
// every epoch's set is 0..S-1. It is read as such and written as format 2
// by the next command that writes the file.

// FormatVersion is the version the "fusee-ring" line carries when fusee
// writes a file; format 1 is still read.
const FormatVersion = 2

const (
	magic      = "fusee-ring"
	fileBanner = "# fusee ring file: one namespace's placement policy (docs/rings.md).\n" +
		"# Change it with `fusee ring` commands: published rings are sealed.\n"
	// shardLimit bounds shard numbers the parser accepts, so a typo cannot
	// allocate a huge ring; Validate then checks them against MaxShards.
	shardLimit = 1 << 16
	// maxErrors stops a badly broken file from flooding the output.
	maxErrors = 50
)

// nameRule describes what validName accepts.
const nameRule = "1 to 64 letters, digits, '-' or '_'"

// validName accepts a namespace, cell id or region: short, dot-free and
// free of the characters the slot syntax uses (@ = , -).
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || (r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
		if !ok {
			return false
		}
	}
	return true
}

// Format returns the canonical text of a policy: the same policy always
// gives the same bytes.
func Format(p *Policy) []byte {
	var b strings.Builder
	b.WriteString(fileBanner)
	fmt.Fprintf(&b, "%s %d\n", magic, FormatVersion)
	fmt.Fprintf(&b, "namespace %s\n", p.Namespace)
	fmt.Fprintf(&b, "revision %d\n", p.Revision)
	if p.Current == NoEpoch {
		b.WriteString("current-epoch none\n")
	} else {
		fmt.Fprintf(&b, "current-epoch %d\n", p.Current)
	}
	if len(p.Cells) > 0 {
		b.WriteString("\n")
		writeCells(&b, p.Cells)
	}
	for _, e := range p.Epochs {
		fmt.Fprintf(&b, "\nepoch %d %s shards=%s\n", e.Number, e.Status, strings.Join(ShardRanges(e.ShardSet()), ","))
		writeRing(&b, "  ", e.Ring)
	}
	return []byte(b.String())
}

// writeCells writes declarations sorted, without exact duplicates.
func writeCells(b *strings.Builder, cells []CellDecl) {
	sorted := slices.Clone(cells)
	slices.SortFunc(sorted, func(x, y CellDecl) int {
		if c := strings.Compare(x.ID, y.ID); c != 0 {
			return c
		}
		return strings.Compare(x.Fingerprint, y.Fingerprint)
	})
	for i, c := range sorted {
		if i > 0 && c.ID == sorted[i-1].ID && c.Fingerprint == sorted[i-1].Fingerprint {
			continue
		}
		if c.Fingerprint == "" {
			fmt.Fprintf(b, "cell %s\n", c.ID)
		} else {
			fmt.Fprintf(b, "cell %s fingerprint=%s\n", c.ID, c.Fingerprint)
		}
	}
}

// writeRing writes a ring in order, merging runs of consecutive shards on
// the same cell and region into one range.
func writeRing(b *strings.Builder, indent string, ring Ring) {
	for i := 0; i < len(ring); {
		j := i + 1
		for j < len(ring) && ring[j].Shard == ring[j-1].Shard+1 &&
			ring[j].Cell == ring[i].Cell && ring[j].Region == ring[i].Region {
			j++
		}
		s := ring[i]
		b.WriteString(indent)
		if j-i == 1 {
			fmt.Fprintf(b, "%d %s", s.Shard, s.Cell)
		} else {
			fmt.Fprintf(b, "%d-%d %s", s.Shard, ring[j-1].Shard, s.Cell)
		}
		if s.Region != "" {
			b.WriteString("@" + s.Region)
		}
		b.WriteString("\n")
		i = j
	}
}

// FormatShardSet writes shard numbers as sorted ranges: "0-3, 7, 9-12".
func FormatShardSet(shards []int) string {
	return strings.Join(ShardRanges(shards), ", ")
}

// ShardRanges lists shard numbers as sorted ranges: ["0-3", "7", "9-12"].
func ShardRanges(shards []int) []string {
	s := slices.Clone(shards)
	slices.Sort(s)
	s = slices.Compact(s)
	var out []string
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[j-1]+1 {
			j++
		}
		if j-i == 1 {
			out = append(out, strconv.Itoa(s[i]))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", s[i], s[j-1]))
		}
		i = j
	}
	return out
}

// CheckName returns an error unless s is a valid namespace, cell id or
// region; what names it in the message ("--cells", "namespace").
func CheckName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("%s %q: want %s", what, s, nameRule)
	}
	return nil
}

// CheckFingerprint returns an error unless fp can be written as a cell's
// fingerprint=FP attribute and read back: not empty, no white space.
func CheckFingerprint(fp string) error {
	if fp == "" || strings.IndexFunc(fp, unicode.IsSpace) >= 0 {
		return fmt.Errorf("fingerprint %q: want a non-empty value without white space", fp)
	}
	return nil
}
