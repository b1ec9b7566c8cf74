package check

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/store"
)

// Spill map keys sort as the tuples they encode: a string is its bytes
// with 0x00 escaped as 0x00 0xff and ended by 0x00 0x01 (so "a" sorts
// before "a\x00" and "ab"), numbers are big-endian, signed ones with the
// sign bit flipped.

func appendStr(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0, 0xff)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, 0, 1)
}

// cutStr decodes a string appendStr wrote at the start of b and returns
// it and the rest of b.
func cutStr(b []byte) (string, []byte, error) {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == 0xff {
			out = append(out, 0)
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] == 1 {
			return string(out), b[i+2:], nil
		}
		break
	}
	return "", nil, errors.New("check: a damaged spill key")
}

// strEnd is the length of the string appendStr wrote at the start of b,
// terminator included.
func strEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == 0 {
			if b[i+1] == 1 {
				return i + 2
			}
			i++
		}
	}
	return len(b)
}

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }
func appendI64(b []byte, v int64) []byte  { return appendU64(b, uint64(v)^(1<<63)) }

// spills holds the spill maps of one command, each with its share of the
// budget (Options.Memory), in one scratch directory removed at the end.
type spills struct {
	dir   string
	done  func()
	share int64
	// sealEvery: Options.sealEvery
	sealEvery int64
	maps      []*store.SpillMap
	made      int // maps made so far: names each map's directory
}

func newSpills(opts Options, n int) (*spills, error) {
	dir, done, err := opts.scratchDir()
	if err != nil {
		return nil, err
	}
	// The maps together hold at most half the budget: the garbage
	// collector lets the heap grow to about twice what is live.
	return &spills{dir: dir, done: done, share: max(opts.budget()/int64(2*n), 1), sealEvery: opts.sealEvery}, nil
}

func (s *spills) new(name string) *store.SpillMap {
	m := store.NewSpillMap(vfs.Default, filepath.Join(s.dir, fmt.Sprintf("%s-%d", name, s.made)), s.share)
	if s.sealEvery > 0 {
		m.SealEvery(s.sealEvery)
	}
	s.made++
	s.maps = append(s.maps, m)
	return m
}

// drop closes a map made by new before the others.
func (s *spills) drop(m *store.SpillMap) error {
	for i, x := range s.maps {
		if x == m {
			s.maps = append(s.maps[:i], s.maps[i+1:]...)
			return m.Close()
		}
	}
	return nil
}

func (s *spills) close() error {
	var errs []error
	for _, m := range s.maps {
		errs = append(errs, m.Close())
	}
	s.maps = nil
	s.done()
	return errors.Join(errs...)
}
