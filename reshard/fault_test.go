package reshard_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/fusee-dev/fusee/internal/testtier"
)

// A fault is a failure the filesystem reports at one step of a reshard.
type fault struct {
	name  string
	errno syscall.Errno
	// at says whether the fault can happen at an operation of this kind.
	at func(errorfs.OpKind) bool
	// sticky faults fail every later operation they can happen at too:
	// a full disk stays full until the operator frees space.
	sticky bool
}

func isSync(k errorfs.OpKind) bool {
	return k == errorfs.OpFileSync || k == errorfs.OpFileSyncData || k == errorfs.OpFileSyncTo
}

func isWrite(k errorfs.OpKind) bool { return k == errorfs.OpFileWrite || k == errorfs.OpFileWriteAt }

var faults = []fault{
	{name: "ENOSPC", errno: syscall.ENOSPC, sticky: true, at: func(k errorfs.OpKind) bool {
		switch k {
		case errorfs.OpCreate, errorfs.OpLink, errorfs.OpMkdirAll, errorfs.OpFilePreallocate, errorfs.OpRename:
			return true
		}
		return isWrite(k) || isSync(k) // delayed allocation fails at fsync
	}},
	{name: "EIO-write", errno: syscall.EIO, at: isWrite},
	{name: "EIO-sync", errno: syscall.EIO, at: isSync},
	{name: "rename", errno: syscall.EIO, at: func(k errorfs.OpKind) bool { return k == errorfs.OpRename }},
}

// faultInjector fails the k-th operation the fault can happen at (and,
// for a sticky fault, every later one) the way the operating system
// would: a *os.PathError naming the operation and the file. It notes a
// file synced again after its sync failed.
type faultInjector struct {
	mu     sync.Mutex
	f      fault
	k, n   int
	off    bool
	failed *errorfs.Op // the first operation failed
	// failedOps are all the operations failed (a sticky fault fails
	// several: pebble falls back from a link to a copy, say).
	failedOps []errorfs.Op
	resync    string // a file synced again after its sync failed
	badSync   map[string]bool
}

func (fi *faultInjector) String() string {
	return fmt.Sprintf("%s at its %d-th operation", fi.f.name, fi.k)
}

func (fi *faultInjector) MaybeError(op errorfs.Op) error {
	if !isStep(op) {
		return nil
	}
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if isSync(op.Kind) && fi.badSync[op.Path] {
		fi.resync = op.Path
	}
	if fi.off || !fi.f.at(op.Kind) {
		return nil
	}
	fi.n++
	if fi.n < fi.k || fi.n > fi.k && !fi.f.sticky {
		return nil
	}
	if fi.failed == nil {
		fi.failed = &op
	}
	fi.failedOps = append(fi.failedOps, op)
	if isSync(op.Kind) {
		fi.badSync[op.Path] = true
	}
	return &os.PathError{Op: opName(op.Kind), Path: op.Path, Err: fi.f.errno}
}

// TestFaultAtEveryStep injects each fault at every operation of one
// reshard it can happen at: the reshard must end in an error naming the
// operation and the file, never a panic, an exit or a success that hid
// it; a failed fsync is never retried; and the directory must then open
// as it was (or, failed after the switch began, be finished by `fusee
// reshard <dir>`), the rerun must finish the job, verify clean, nothing
// lost.
func TestFaultAtEveryStep(t *testing.T) {
	t.Parallel() // see sample_test.go
	type config struct {
		name   string
		memory int64
		stride int // inject at every stride-th eligible operation
	}
	configs := []config{{name: "in-memory-maps", stride: 1}, {name: "spilled-maps", memory: 1, stride: 5}}
	if testtier.Long() {
		configs[1].stride = 1
	} else if testtier.Race {
		configs[0].stride, configs[1].stride = raceStride, 5*raceStride
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			start := time.Now()
			c := newCrashCase(t, 3, 5, 80, 7, cfg.memory)
			total, injected := c.faultSweep(t, cfg.stride)
			t.Logf("3->5 shards, %s: %d faults injected %v, each a clean error and a directory that opens as it was or is finished by a rerun; %v",
				cfg.name, total, injected, time.Since(start).Round(time.Millisecond))
		})
	}
}

// faultSweep injects each fault at every stride-th operation of c's
// operation it can happen at (from an offset that changes daily, see
// testtier.Offset), recovering from each; it reports failures
// with t.Error and returns how many faults it injected, in all and of
// each kind.
func (c *crashCase) faultSweep(t *testing.T, stride int) (int, map[string]int) {
	injected := map[string]int{}
	var failures []string
	first := 1 + testtier.Offset(t, stride)
	for _, f := range faults {
		for k := first; len(failures) < 10; k += stride {
			fi := &faultInjector{f: f, k: k, badSync: map[string]bool{}}
			done, err := c.faultOnce(fi)
			if done {
				break
			}
			injected[f.name]++
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s at %s %s (its %d-th): %v", f.name, opName(fi.failed.Kind), fi.failed.Path, k, err))
			}
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
	total := 0
	for _, n := range injected {
		total += n
	}
	return total, injected
}

// faultOnce runs one reshard with fi injecting its fault, then checks the
// error and recovers. done reports that the reshard never reached the
// fault's k-th operation (it succeeded untouched).
func (c *crashCase) faultOnce(fi *faultInjector) (done bool, _ error) {
	return faultScenario(c.reshardScenario(), fi)
}

// faultScenario runs s's operation once with fi injecting its fault, then
// checks the error and recovers as s says. done reports that the
// operation never reached the fault's k-th operation (it succeeded
// untouched).
func faultScenario(s crashScenario, fi *faultInjector) (done bool, _ error) {
	mem := s.start()
	err := s.run(errorfs.Wrap(guardLinks(mem), fi))
	fi.mu.Lock()
	fi.off = true
	failed, resync := fi.failed, fi.resync
	fi.mu.Unlock()
	if failed == nil {
		if err != nil {
			return true, fmt.Errorf("no fault injected, yet: %v", err)
		}
		return true, nil
	}
	if err == nil {
		if unusedLog(fi.failedOps) {
			// A scratch store has no write-ahead log in use (DisableWAL),
			// yet pebble creates one and, closing the store once its
			// data has been used, writes and syncs its end: a failure
			// there loses nothing.
			return false, nil
		}
		return false, errors.New("the operation succeeded: the failure was hidden")
	}
	if !errors.Is(err, fi.f.errno) || !namesFailure(err, fi.failedOps) {
		return false, fmt.Errorf("the error does not name the failure (%v, %s %s): %v", fi.f.errno, opName(failed.Kind), failed.Path, err)
	}
	// The operator reads the message and recovers.
	if _, rerr := s.recover(mem, nil); rerr != nil {
		return false, fmt.Errorf("after the error %q: %v", err, rerr)
	}
	if rerr := s.done(mem); rerr != nil {
		return false, fmt.Errorf("after the error %q and a rerun: %v", err, rerr)
	}
	if resync != "" {
		return false, fmt.Errorf("%s was synced again after its sync failed (%v)", resync, err)
	}
	return false, nil
}

// unusedLog reports whether every operation in ops is on the unused
// write-ahead log of a scratch store.
func unusedLog(ops []errorfs.Op) bool {
	for _, op := range ops {
		if !strings.Contains(op.Path, "/.scratch/") || !strings.HasSuffix(op.Path, ".log") {
			return false
		}
	}
	return true
}

// namesFailure reports whether err's message names one of the failed
// operations and its file, as the operating system's error does.
func namesFailure(err error, ops []errorfs.Op) bool {
	for _, op := range ops {
		if strings.Contains(err.Error(), opName(op.Kind)+" "+op.Path) {
			return true
		}
	}
	return false
}
