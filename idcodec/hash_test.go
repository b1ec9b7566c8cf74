package idcodec

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// vectorNs are the shard counts of hash_vectors.txt, in column order.
var vectorNs = []int{1, 2, 3, 7, 8, 1024}

type hashVector struct {
	line   int
	input  string
	hash   int64
	shards []int // ShardFor(input, vectorNs[i])
}

// readVectors reads testdata/hash_vectors.txt, printed by
// testdata/HashVectors.java: the Java reference's own arithmetic.
func readVectors(t *testing.T) []hashVector {
	t.Helper()
	f, err := os.Open("testdata/hash_vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []hashVector
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", len(vectorNs)+2)
		if len(fields) != len(vectorNs)+2 {
			t.Fatalf("hash_vectors.txt:%d: %d fields, want %d", n, len(fields), len(vectorNs)+2)
		}
		v := hashVector{line: n, input: fields[len(fields)-1]}
		if v.hash, err = strconv.ParseInt(fields[0], 10, 64); err != nil {
			t.Fatalf("hash_vectors.txt:%d: %v", n, err)
		}
		for _, f := range fields[1 : len(fields)-1] {
			s, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("hash_vectors.txt:%d: %v", n, err)
			}
			v.shards = append(v.shards, s)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHashVectors(t *testing.T) {
	vectors := readVectors(t)
	for _, v := range vectors {
		if got := Hash64(v.input); got != v.hash {
			t.Errorf("line %d: Hash64(%q) = %d, Java says %d", v.line, v.input, got, v.hash)
		}
		for i, n := range vectorNs {
			if got := ShardFor(v.input, n); got != v.shards[i] {
				t.Errorf("line %d: ShardFor(%q, %d) = %d, Java says %d", v.line, v.input, n, got, v.shards[i])
			}
		}
	}
}

// TestHashVectorsCover checks the vector file still covers what makes the
// hash easy to get wrong, so a regenerated file cannot quietly lose it.
func TestHashVectorsCover(t *testing.T) {
	var empty, bmp, astral, ulids, negative, floorDiffers int
	for _, v := range readVectors(t) {
		switch {
		case v.input == "":
			empty++
		case strings.ContainsFunc(v.input, func(r rune) bool { return r > 0xffff }):
			astral++
		case !isASCII(v.input):
			bmp++
		}
		if _, err := ulid.ParseStrict(v.input); err == nil {
			ulids++
		}
		if v.hash >= 0 {
			continue
		}
		negative++
		// The reason for FloorMod: on a negative hash, reducing the
		// unsigned value gives another shard whenever n does not divide 2^64.
		for i, n := range vectorNs {
			if n > 1 && uint64(v.hash)%uint64(n) != uint64(v.shards[i]) {
				floorDiffers++
			}
		}
	}
	for _, c := range []struct {
		what     string
		got, min int
	}{
		{"empty-string", empty, 1},
		{"non-ASCII BMP", bmp, 3},
		{"astral (surrogate pair)", astral, 3},
		{"ulid", ulids, 50},
		{"negative-hash", negative, 10},
		{"floorMod-differs-from-unsigned-mod", floorDiffers, 10},
	} {
		if c.got < c.min {
			t.Errorf("hash_vectors.txt has %d %s vectors, want at least %d", c.got, c.what, c.min)
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func TestFloorMod(t *testing.T) {
	for _, tc := range []struct{ x, n, want int64 }{
		{7, 3, 1},
		{-7, 3, 2},
		{7, -3, -2},
		{-7, -3, -1},
		{-6, 3, 0},
		{0, 5, 0},
		{math.MinInt64, 7, 6}, // Java: Math.floorMod(Long.MIN_VALUE, 7) == 6
		{math.MaxInt64, 7, 0}, // 2^63-1 = 7 * 1317624576693539401
		{-1, 1024, 1023},
	} {
		if got := FloorMod(tc.x, tc.n); got != tc.want {
			t.Errorf("FloorMod(%d, %d) = %d, want %d", tc.x, tc.n, got, tc.want)
		}
	}
}

func TestShardForSmallN(t *testing.T) {
	for _, n := range []int{-1, 0, 1} {
		if got := ShardFor("01ARZ3NDEKTSV4RRFFQ69G5FAV", n); got != 0 {
			t.Errorf("ShardFor(_, %d) = %d, want 0", n, got)
		}
	}
}
