package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/wal"
	"github.com/fusee-dev/fusee/reshard"
)

// closedDirLayout returns a cleanly closed directory's last data segment,
// its close segment, and where the last batch starts.
func closedDirLayout(t *testing.T, dir string) (data, closeSeg string, last int64) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.log"))
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	var pos wal.Position
	if _, err := wal.Read(vfs.Default, filepath.Join(dir, "wal"), wal.Position{}, func(b wal.Batch) error {
		pos = b.Pos
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	data, closeSeg = segs[len(segs)-2], segs[len(segs)-1]
	if filepath.Base(data) != fmt.Sprintf("%016d.log", pos.Segment) {
		t.Fatalf("the last batch is in segment %d, not %s", pos.Segment, data)
	}
	return data, closeSeg, pos.Offset
}

var damagedAt = regexp.MustCompile(`is damaged at offset (\d+)`)

// wantDamage runs verify and checks that it exits 1 naming file and an
// offset no later than at.
func wantDamage(t *testing.T, dir, file string, at int64, what string) {
	t.Helper()
	out, errOut, code := runFusee(t, nil, "verify", dir)
	m := damagedAt.FindStringSubmatch(out)
	if code != 1 || !strings.Contains(out, file) || m == nil {
		t.Fatalf("%s: verify exit %d, want 1 naming %s and an offset:\n%s%s", what, code, file, out, errOut)
	}
	if off, _ := strconv.ParseInt(m[1], 10, 64); off > at {
		t.Fatalf("%s: damage reported at offset %d, after the change at %d:\n%s", what, off, at, out)
	}
}

// TestVerifyDamageAfterCleanClose: in a cleanly closed directory a byte
// flipped in the last batch, the last batch cut short, or the last segment
// deleted is damage: verify exits 1 naming the file and the offset (it
// used to call the first two a torn tail and say nothing acknowledged was
// lost, and not notice the third). The log package tests every byte and
// every cut; this samples them through the command.
func TestVerifyDamageAfterCleanClose(t *testing.T) {
	dir := makeDataDir(t, 2)
	if out, _, code := runFusee(t, nil, "verify", dir); code != 0 || strings.Contains(out, "log-not-closed") {
		t.Fatalf("the closed directory: exit %d\n%s", code, out)
	}
	data, closeSeg, last := closedDirLayout(t, dir)
	orig, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	end, err := endRecordOffset(closeSeg, orig) // the last batch ends there
	if err != nil {
		t.Fatal(err)
	}
	for off := last; off < end; off += 7 {
		b := append([]byte(nil), orig...)
		b[off] ^= 0x20
		if err := os.WriteFile(data, b, 0o644); err != nil {
			t.Fatal(err)
		}
		wantDamage(t, dir, data, off, fmt.Sprintf("byte %d flipped", off))
	}
	for cut := last + 1; cut < end; cut += 11 {
		if err := os.WriteFile(data, orig[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		wantDamage(t, dir, data, cut, fmt.Sprintf("cut at %d", cut))
	}
	if err := os.WriteFile(data, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(closeSeg); err != nil {
		t.Fatal(err)
	}
	wantDamage(t, dir, data, int64(len(orig)), "the last segment deleted")
	if _, _, code := runFusee(t, nil, "dump", "--logical", dir); code != 1 {
		t.Fatalf("dump of the damaged directory: exit %d", code)
	}
}

// TestVerifyTornTailToldTruly: a directory whose engine stopped while
// writing its last batch (the close segment never made, the batch cut)
// verifies with a torn-tail note that says what is dropped and does not
// claim that nothing acknowledged was lost; one that stopped after an
// intact batch gets a log-not-closed note.
func TestVerifyTornTailToldTruly(t *testing.T) {
	dir := makeDataDir(t, 2)
	data, closeSeg, last := closedDirLayout(t, dir)
	orig, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(closeSeg); err != nil {
		t.Fatal(err)
	}
	h, err := endRecordOffset(closeSeg, orig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, orig[:h], 0o644); err != nil { // no end record: stopped after the last batch
		t.Fatal(err)
	}
	out, _, code := runFusee(t, nil, "verify", dir)
	if code != 0 || !strings.Contains(out, "log-not-closed: the engine stopped without closing the log") || strings.Contains(out, "torn-tail") {
		t.Fatalf("stopped after an intact batch: exit %d\n%s", code, out)
	}
	cut := last + (h-last)/2
	if err := os.WriteFile(data, orig[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = runFusee(t, nil, "verify", dir)
	want := fmt.Sprintf("%s: dropped %d bytes from offset %d", data, cut-last, last)
	if code != 0 || !strings.Contains(out, "torn-tail: the engine stopped without closing the log") || !strings.Contains(out, want) {
		t.Fatalf("torn last batch: exit %d, want %q\n%s", code, want, out)
	}
	if strings.Contains(out, "nothing acknowledged was lost") {
		t.Fatalf("verify claims more than it can know:\n%s", out)
	}
}

// endRecordOffset is where the batches of data, the segment before
// closeSeg, end: where its end record starts.
func endRecordOffset(closeSeg string, data []byte) (int64, error) {
	// The end record is one chunk: 11-byte header, then its payload, then
	// the 11-byte trailer. Its payload starts with kind 0x04 and the log
	// id; find the last chunk header whose payload starts with 0x04 and
	// ends where the trailer starts.
	trailer := int64(len(data)) - 11
	for off := trailer - 11 - 8; off >= 0; off-- {
		n := int64(data[off+4]) | int64(data[off+5])<<8
		if data[off+6] == 5 && off+11+n == trailer && data[off+11] == 0x04 {
			return off, nil
		}
	}
	return 0, fmt.Errorf("no end record before the trailer of the segment before %s", closeSeg)
}

// The reshard report's line about a dropped tail says which bytes went and
// what the dropped batch claimed, and never that nothing was lost.
func TestDroppedTailLine(t *testing.T) {
	d := &reshard.DroppedTail{File: "d/wal/0000000000000001.log", Offset: 41235, Bytes: 49, Reason: "damaged or incomplete record",
		Batch: 292, Shards: []reshard.DroppedShard{{Shard: 1, FirstLSN: 377, LastLSN: 379}, {Shard: 4, FirstLSN: 12, LastLSN: 12}}}
	for _, c := range []struct {
		d    *reshard.DroppedTail
		dry  bool
		want string
	}{
		{d, false, "dropped the old log's torn tail, as the engine's recovery drops it: 49 bytes of d/wal/0000000000000001.log from offset 41235 (damaged or incomplete record); the engine stopped mid-write and never closed the log; the bytes start batch 292, whose readable part claims shard 1 LSNs 377-379, shard 4 LSNs 12-12"},
		{&reshard.DroppedTail{File: "f", Offset: 9, Bytes: 3, Reason: "r", Batch: 5}, true, "would drop the old log's torn tail, as the engine's recovery drops it: 3 bytes of f from offset 9 (r); the engine stopped mid-write and never closed the log; the bytes start batch 5, whose entries are unreadable"},
		{&reshard.DroppedTail{File: "f", Offset: 9, Bytes: 3, Reason: "r"}, false, "dropped the old log's torn tail, as the engine's recovery drops it: 3 bytes of f from offset 9 (r); the engine stopped mid-write and never closed the log; the bytes start no readable batch"},
	} {
		if got := droppedTailLine(c.d, c.dry); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
