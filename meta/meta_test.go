package meta

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

func TestMarshalCanonical(t *testing.T) {
	for _, tc := range []struct {
		m    Meta
		want string
	}{
		{Meta{Format: FormatLocal, Log: 3, Shards: 8}, header + "format=local\nlog=3\nshards=8\n"},
		{Meta{Format: FormatLocal, Log: 2, Shards: 1024}, header + "format=local\nlog=2\nshards=1024\n"},
		{Meta{Format: Switching, Log: 3, Shards: 16, OldShards: 8, NewShards: 16},
			header + "format=reshard\nlog=3\nshards=16\nold_shards=8\nnew_shards=16\n"},
	} {
		got, err := tc.m.Marshal()
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", tc.m, err)
		}
		if string(got) != tc.want {
			t.Errorf("Marshal(%+v):\n got %q\nwant %q", tc.m, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		m    Meta
		want string
	}{
		{Meta{Log: 3, Shards: 8}, "invalid fusee.meta: format= is not a known format (local, reshard while a reshard switches files, or upgrade while an upgrade does); this file may come from a newer fusee"},
		{Meta{Format: FormatLocal, Shards: 8}, "invalid fusee.meta: log=0 is not a known log format (3, or the older 2); this file may come from a newer fusee"},
		{Meta{Format: FormatLocal, Log: 3}, "invalid fusee.meta: shards=0 is out of range 1..1024; a shard number is packed into 10 bits, so set a count from 1 to 1024"},
		{Meta{Format: FormatLocal, Log: 3, Shards: -1}, "invalid fusee.meta: shards=-1 is not a plain decimal number; write digits only, e.g. shards=8"},
		{Meta{Format: FormatLocal, Log: 3, Shards: 8, NewShards: 16}, "invalid fusee.meta: new_shards= is only allowed with format=reshard (an interrupted reshard); remove the line"},
		{Meta{Format: Switching, Log: 3, Shards: 16, NewShards: 16}, "invalid fusee.meta: format=reshard needs old_shards= and new_shards= (the counts the interrupted reshard switches between) and old_shards= is missing; restore it, then run fusee reshard"},
		{Meta{Format: Switching, Log: 3, Shards: 8, OldShards: 8, NewShards: 16}, "invalid fusee.meta: shards=8 but new_shards=16; while format=reshard, shards= names the new count, so they must be equal"},
	} {
		err := tc.m.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("Validate(%+v):\n got %v\nwant %s", tc.m, err, tc.want)
		}
		if _, err := tc.m.Marshal(); err == nil {
			t.Errorf("Marshal(%+v) succeeded on an invalid Meta", tc.m)
		}
	}
}

func genMeta() *rapid.Generator[Meta] {
	return rapid.Custom(func(t *rapid.T) Meta {
		m := Meta{
			Format: FormatLocal,
			Log:    rapid.SampledFrom([]int{LogPerShard, LogShared}).Draw(t, "log"),
			Shards: rapid.IntRange(1, MaxShards).Draw(t, "shards"),
		}
		switch rapid.IntRange(0, 2).Draw(t, "state") {
		case 1:
			m.Format = Switching
			m.OldShards = rapid.IntRange(1, MaxShards).Draw(t, "old")
			m.NewShards = m.Shards
		case 2:
			m.Format, m.Log = Upgrading, LogShared
		}
		return m
	})
}

// TestRoundTrip: every valid Meta survives Marshal and Parse, and the
// canonical bytes are a fixed point.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMeta().Draw(t, "meta")
		b, err := m.Marshal()
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", m, err)
		}
		got, err := Parse(testPath, b)
		if err != nil {
			t.Fatalf("Parse(Marshal(%+v)): %v", m, err)
		}
		if got != m {
			t.Fatalf("round trip: got %+v, want %+v", got, m)
		}
		again, _ := got.Marshal()
		if !bytes.Equal(again, b) {
			t.Fatalf("canonical bytes changed:\n%q\n%q", b, again)
		}
	})
}

// TestParseNeverPanics: arbitrary bytes give a Meta or a *FileError.
func TestParseNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lines := rapid.SliceOfN(rapid.OneOf(
			rapid.SampledFrom([]string{"format=local", "format=reshard", "log=3", "log=2", "shards=8", "shards=16", "old_shards=8", "new_shards=16", "# c", "", "shards=0", " x"}),
			rapid.String(),
		), 0, 8).Draw(t, "lines")
		var b bytes.Buffer
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		m, err := Parse(testPath, b.Bytes())
		if err != nil {
			if _, ok := err.(*FileError); !ok {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		if verr := m.Validate(); verr != nil {
			t.Fatalf("Parse accepted %q as %+v, which does not validate: %v", b.String(), m, verr)
		}
	})
}
