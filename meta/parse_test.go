package meta

import (
	"errors"
	"strings"
	"testing"
)

const testPath = "/d/fusee.meta"

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Meta
	}{
		{"local", "format=local\nlog=3\nshards=8\n", Meta{Format: FormatLocal, Log: 3, Shards: 8}},
		{"older log", "format=local\nlog=2\nshards=1\n", Meta{Format: FormatLocal, Log: 2, Shards: 1}},
		{"max shards", "format=local\nlog=3\nshards=1024\n", Meta{Format: FormatLocal, Log: 3, Shards: 1024}},
		{"any key order", "shards=4\nlog=3\nformat=local\n", Meta{Format: FormatLocal, Log: 3, Shards: 4}},
		{"comments and blank lines", "# header\n\nformat=local\n#log=2\nlog=3\n\n# trailing = not a key\nshards=16\n\n", Meta{Format: FormatLocal, Log: 3, Shards: 16}},
		{"switching", "format=reshard\nlog=3\nshards=16\nold_shards=8\nnew_shards=16\n", Meta{Format: Switching, Log: 3, Shards: 16, OldShards: 8, NewShards: 16}},
		{"upgrading", "format=upgrade\nlog=3\nshards=5\n", Meta{Format: Upgrading, Log: 3, Shards: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(testPath, []byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got != tc.want {
				t.Errorf("Parse = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestParseErrors pins every refusal, with the line it names and its fix.
func TestParseErrors(t *testing.T) {
	const ok = "format=local\nlog=3\nshards=8\n"
	for _, tc := range []struct {
		name string
		in   string
		want string
	}{
		{"empty file", "",
			"/d/fusee.meta: the file is empty; it should hold format=, log= and shards= lines (was it truncated? restore it from a backup)"},
		{"cut short", "format=local\nlog=3\nshards=1",
			`/d/fusee.meta:3: the last line has no newline at its end, so the file may be cut short; if "shards=1" is whole, end the line with a newline`},
		{"crlf", "format=local\r\nlog=3\r\nshards=8\r\n",
			`/d/fusee.meta:1: the line ends with a carriage return (\r); save the file with Unix (LF) line endings`},
		{"no equals", "format=local\nlog 3\nshards=8\n",
			`/d/fusee.meta:2: "log 3" is not key=value, a comment (#...) or an empty line`},
		{"spaces around equals", "format=local\nlog=3\nshards = 8\n",
			`/d/fusee.meta:3: "shards = 8" has spaces around the key or value; write shards=8 with none`},
		{"trailing space", "format=local \nlog=3\nshards=8\n",
			`/d/fusee.meta:1: "format=local " has spaces around the key or value; write format=local with none`},
		{"indented", ok + "  # comment\n",
			`/d/fusee.meta:4: "  # comment" is not key=value, a comment (#...) or an empty line`},
		{"blank line with spaces", "format=local\n \nlog=3\nshards=8\n",
			`/d/fusee.meta:2: " " is not key=value, a comment (#...) or an empty line`},
		{"uppercase key", "FORMAT=local\nlog=3\nshards=8\n",
			`/d/fusee.meta:1: "FORMAT" is not a valid key (lowercase letters and '_' only); write key=value`},
		{"empty key", "=local\nlog=3\nshards=8\n",
			`/d/fusee.meta:1: "" is not a valid key (lowercase letters and '_' only); write key=value`},
		{"unknown key", ok + "colour=blue\n",
			`/d/fusee.meta:4: unknown key "colour"; known keys are format, log, shards, old_shards, new_shards (this file may come from a newer fusee)`},
		{"duplicate key", "format=local\nshards=8\nlog=3\nshards=8\n",
			"/d/fusee.meta:4: shards= appears again (first on line 2); keep only one"},
		{"unknown format", "format=remote\nlog=3\nshards=8\n",
			"/d/fusee.meta:1: format=remote is not a known format (local, reshard while a reshard switches files, or upgrade while an upgrade does); this file may come from a newer fusee"},
		{"empty format", "format=\nlog=3\nshards=8\n",
			"/d/fusee.meta:1: format= is not a known format (local, reshard while a reshard switches files, or upgrade while an upgrade does); this file may come from a newer fusee"},
		{"unknown log", "format=local\nlog=4\nshards=8\n",
			"/d/fusee.meta:2: log=4 is not a known log format (3, or the older 2); this file may come from a newer fusee"},
		{"log zero", "format=local\nlog=0\nshards=8\n",
			"/d/fusee.meta:2: log=0 is not a known log format (3, or the older 2); this file may come from a newer fusee"},
		{"log not a number", "format=local\nlog=three\nshards=8\n",
			"/d/fusee.meta:2: log=three is not a plain decimal number; write digits only, e.g. log=8"},
		{"empty number", "format=local\nlog=3\nshards=\n",
			"/d/fusee.meta:3: shards= has no value; write a number, e.g. shards=8"},
		{"shards zero", "format=local\nlog=3\nshards=0\n",
			"/d/fusee.meta:3: shards=0 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"},
		{"shards too many", "format=local\nlog=3\nshards=2000\n",
			"/d/fusee.meta:3: shards=2000 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"},
		{"shards one too many", "format=local\nlog=3\nshards=1025\n",
			"/d/fusee.meta:3: shards=1025 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"},
		{"shards overflow", "format=local\nlog=3\nshards=99999999999999999999999\n",
			"/d/fusee.meta:3: shards=99999999999999999999999 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"},
		{"negative", "format=local\nlog=3\nshards=-8\n",
			"/d/fusee.meta:3: shards=-8 is not a plain decimal number; write digits only, e.g. shards=8"},
		{"plus sign", "format=local\nlog=3\nshards=+8\n",
			"/d/fusee.meta:3: shards=+8 is not a plain decimal number; write digits only, e.g. shards=8"},
		{"leading zero", "format=local\nlog=3\nshards=08\n",
			"/d/fusee.meta:3: shards=08 has a leading zero; write shards=8"},
		{"hex", "format=local\nlog=3\nshards=0x8\n",
			"/d/fusee.meta:3: shards=0x8 is not a plain decimal number; write digits only, e.g. shards=8"},
		{"first bad line wins", "format=local\nlog=9\nshards=2000\n",
			"/d/fusee.meta:2: log=9 is not a known log format (3, or the older 2); this file may come from a newer fusee"},
		{"only comments", "# nothing here\n",
			"/d/fusee.meta: missing format=; every fusee.meta has format=, log= and shards= lines: add the missing one"},
		{"missing log", "format=local\nshards=8\n",
			"/d/fusee.meta: missing log=; every fusee.meta has format=, log= and shards= lines: add the missing one"},
		{"missing shards", "format=local\nlog=3\n",
			"/d/fusee.meta: missing shards=; every fusee.meta has format=, log= and shards= lines: add the missing one"},
		{"old_shards outside a reshard", ok + "old_shards=4\n",
			"/d/fusee.meta:4: old_shards= is only allowed with format=reshard (an interrupted reshard); remove the line"},
		{"new_shards outside a reshard", ok + "new_shards=16\n",
			"/d/fusee.meta:4: new_shards= is only allowed with format=reshard (an interrupted reshard); remove the line"},
		{"upgrade with log=2", "format=upgrade\nlog=2\nshards=5\n",
			"/d/fusee.meta:2: format=upgrade needs log=3 (the format the interrupted upgrade switches to), not log=2; restore it, then run fusee upgrade"},
		{"upgrade with old_shards", "format=upgrade\nlog=3\nshards=5\nold_shards=4\n",
			"/d/fusee.meta:4: old_shards= is only allowed with format=reshard (an interrupted reshard); remove the line"},
		{"reshard without old_shards", "format=reshard\nlog=3\nshards=16\nnew_shards=16\n",
			"/d/fusee.meta: format=reshard needs old_shards= and new_shards= (the counts the interrupted reshard switches between) and old_shards= is missing; restore it, then run fusee reshard"},
		{"reshard without new_shards", "format=reshard\nlog=3\nshards=16\nold_shards=8\n",
			"/d/fusee.meta: format=reshard needs old_shards= and new_shards= (the counts the interrupted reshard switches between) and new_shards= is missing; restore it, then run fusee reshard"},
		{"reshard shards not the new count", "format=reshard\nlog=3\nshards=8\nold_shards=8\nnew_shards=16\n",
			"/d/fusee.meta:3: shards=8 but new_shards=16; while format=reshard, shards= names the new count, so they must be equal"},
		{"reshard old_shards out of range", "format=reshard\nlog=3\nshards=16\nold_shards=4096\nnew_shards=16\n",
			"/d/fusee.meta:4: old_shards=4096 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(testPath, []byte(tc.in))
			if err == nil {
				t.Fatalf("Parse = %+v, want error %q", m, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != testPath {
				t.Errorf("error %T is not a *FileError for %s", err, testPath)
			}
		})
	}
}

func TestFileErrorLine(t *testing.T) {
	_, err := Parse(testPath, []byte("format=local\nlog=3\nshards=2000\n"))
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want *FileError", err)
	}
	if fe.Line != 3 || !strings.HasPrefix(fe.Msg, "shards=2000 is out of range 1..1024") {
		t.Errorf("FileError = %+v", fe)
	}
}
