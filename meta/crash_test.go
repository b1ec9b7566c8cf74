package meta

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// crashAt stops the world at the k-th filesystem write (1-based) after it
// is armed: just before that write it takes crash images of the memory
// filesystem underneath (nothing unsynced kept, all of it kept, and a few
// random mixes), then fails that write and every later one.
type crashAt struct {
	mem    *vfs.MemFS
	k, n   int
	armed  bool
	rng    *rand.Rand
	images []*vfs.MemFS
}

func (c *crashAt) String() string { return fmt.Sprintf("crash at write %d", c.k) }

func (c *crashAt) MaybeError(op errorfs.Op) error {
	if !c.armed || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	c.n++
	if c.n < c.k {
		return nil
	}
	if c.n == c.k {
		for _, pct := range []int{0, 100, 30, 60, 90} {
			c.images = append(c.images, c.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: c.rng}))
		}
	}
	return errorfs.ErrInjected
}

// TestWriteSurvivesCrash: Dir.Write is durable once it returns, and a
// crash at any point of it, before or after the directory's fsync, leaves
// fusee.meta old or new, whole, never torn or missing.
func TestWriteSurvivesCrash(t *testing.T) {
	base := vfs.NewCrashableMem()
	if err := base.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := Create(base, "/data", local8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(switching); err != nil {
		t.Fatal(err)
	}
	// Returned means durable: a crash that keeps nothing unsynced has it.
	image := base.CrashClone(vfs.CrashCloneCfg{})
	if m, err := ReadAny(image, "/data"); err != nil || m != switching {
		t.Fatalf("after Write and a crash: %+v, %v; want %+v", m, err, switching)
	}
	d.Close()

	for k := 1; ; k++ {
		mem := image.CrashClone(vfs.CrashCloneCfg{})
		c := &crashAt{mem: mem, k: k, rng: rand.New(rand.NewPCG(uint64(k), 1))}
		d, err := Open(errorfs.Wrap(mem, c), "/data", Options{AllowSwitching: true})
		if err != nil {
			t.Fatal(err)
		}
		c.armed = true
		err = d.Write(local8)
		if err == nil {
			// create, write, fsync, rename, fsync of the directory
			if k-1 != 5 {
				t.Fatalf("Write did %d filesystem writes, want 5", k-1)
			}
			break // k is past the write's last filesystem write
		}
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("write %d: Write = %v", k, err)
		}
		for i, img := range c.images {
			m, err := ReadAny(img, "/data")
			if err != nil || (m != switching && m != local8) {
				t.Fatalf("crash at write %d, image %d: fusee.meta is %+v, %v; want the old or the new file", k, i, m, err)
			}
			if i == 0 && m != switching {
				// Nothing unsynced kept: the rename is durable only once
				// the directory's fsync, the write's last, has returned.
				t.Errorf("crash at write %d keeps the new file with nothing unsynced, before the directory's fsync returned", k)
			}
		}
	}
}

// TestCreateSurvivesCrash: a crash at any point of Create leaves either no
// data directory (no fusee.meta) or a whole one; Create returns only once
// the new fusee.meta is durable.
func TestCreateSurvivesCrash(t *testing.T) {
	for k := 1; ; k++ {
		mem := vfs.NewCrashableMem()
		c := &crashAt{mem: mem, k: k, armed: true, rng: rand.New(rand.NewPCG(uint64(k), 2))}
		d, err := Create(errorfs.Wrap(mem, c), "/data", local8, nil)
		if err == nil {
			d.Close()
			image := mem.CrashClone(vfs.CrashCloneCfg{})
			if m, err := ReadAny(image, "/data"); err != nil || m != local8 {
				t.Fatalf("after Create and a crash: %+v, %v; want %+v", m, err, local8)
			}
			break
		}
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("write %d: Create = %v", k, err)
		}
		for i, img := range c.images {
			m, err := ReadAny(img, "/data")
			if err != nil && !errors.Is(err, iofs.ErrNotExist) || err == nil && m != local8 {
				t.Fatalf("crash at write %d, image %d: %+v, %v; want no data directory or a whole one", k, i, m, err)
			}
		}
	}
}
