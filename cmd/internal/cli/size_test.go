package cli

import "testing"

// --memory and --scratch sizes: every unit up to TiB, and nothing that
// overflows an int64 of bytes.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"256MiB": 256 << 20, "1023GiB": 1023 << 30, "1TiB": 1 << 40, "2T": 2 << 40, "512": 512, "64K": 64 << 10,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1MiB", "lots", "8388608TiB", "9223372036854775807K"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}
