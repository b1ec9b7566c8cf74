package ringfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"golang.org/x/sys/unix"
)

// AnyRevision means a write carries no expectation about the revision.
const AnyRevision int64 = -1

// WriteOptions control one write of a ring file.
type WriteOptions struct {
	// ExpectRevision refuses the write (a *ConflictError) unless the file
	// is at this revision when the lock is held. AnyRevision skips it.
	ExpectRevision int64
	// ExpectedBy names what carried the expectation, for the message.
	ExpectedBy string
	// DryRun computes and checks the new policy but writes nothing.
	DryRun bool
	// LockWait bounds the wait for another writer; 10s when zero.
	LockWait time.Duration
	// Noun is what the policy is held in, for a conflict's message: "file"
	// when empty.
	Noun string
}

func (o WriteOptions) noun() string {
	if o.Noun == "" {
		return "file"
	}
	return o.Noun
}

// Load reads and parses a ring file. On a syntax error it returns what it
// could read along with every error; it does not validate.
func Load(path string) (*Policy, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext is Load that stops when ctx is done.
func LoadContext(ctx context.Context, path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading ring file: %w", err)
	}
	return ParseContext(ctx, path, data)
}

// LoadValid loads a ring file and refuses it (an *InvalidError) if
// Validate finds an error: commands must not act on an invalid policy.
func LoadValid(path string) (*Policy, error) {
	return LoadValidContext(context.Background(), path)
}

// LoadValidContext is LoadValid that stops when ctx is done.
func LoadValidContext(ctx context.Context, path string) (*Policy, error) {
	p, err := LoadContext(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := Check(p); err != nil {
		return nil, err
	}
	return p, nil
}

// resolveLink follows the symbolic links path names, if any, to the file
// they end at (which may not exist yet). A write renames a new file over
// its target: done on the link it would replace the link with a copy, and
// the link's old target and the new file would then place the same ids on
// different cells. Locking the target, not the link, also makes two
// writers reaching one file by different names exclude each other.
// Directories on the way need no care: a rename through them lands in the
// real directory.
func resolveLink(path string) (string, error) {
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if hops == 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
}

// Create writes a new ring file, refusing to replace one that exists: the
// compare-and-set of a create, which expects no file (an expected revision
// other than 0 is a *ConflictError, as there is nothing at that revision).
func Create(path string, p *Policy, opt WriteOptions) error {
	return CreateContext(context.Background(), path, p, opt)
}

// CreateContext is Create that gives up, writing nothing, once ctx is done.
// A path that is a symbolic link creates the file it points at.
func CreateContext(ctx context.Context, path string, p *Policy, opt WriteOptions) error {
	if err := Check(p); err != nil {
		return err
	}
	if opt.ExpectRevision != AnyRevision && opt.ExpectRevision != 0 {
		return &ConflictError{File: path, Expected: opt.ExpectRevision, Missing: true, What: opt.ExpectedBy, Noun: opt.noun()}
	}
	target, err := resolveLink(path)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", path, err)
	}
	return withLock(ctx, target, opt.LockWait, func() error {
		if _, err := os.Lstat(target); err == nil {
			return fmt.Errorf("%s already exists: refusing to overwrite a ring file (%w)", path, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if opt.DryRun {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return writeDurably(target, Format(p))
	})
}

// Update is the one read-modify-write of a ring file. Holding an exclusive
// lock on the sidecar file <path>.lock, it re-reads the file, refuses an
// invalid one, checks the expected revision, asks change for the new
// policy, checks that it only moves history forward (CheckTransition) and
// is valid, then replaces the file atomically and durably. Two processes
// updating one file are serialised by the lock, so one of two writers that
// expected the same revision loses with a *ConflictError. A path that is a
// symbolic link is resolved once: the target is locked, read and replaced,
// and the link stays a link.
func Update(path string, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error) {
	return UpdateContext(context.Background(), path, opt, change)
}

// UpdateContext is Update that gives up, writing nothing, once ctx is done
// before the new file is renamed into place.
func UpdateContext(ctx context.Context, path string, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error) {
	target, err := resolveLink(path)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", path, err)
	}
	var next *Policy
	err = withLock(ctx, target, opt.LockWait, func() error {
		cur, err := LoadValidContext(ctx, target)
		if err != nil {
			return err
		}
		cur.File = path
		if next, err = Apply(cur, path, opt, change); err != nil {
			return err
		}
		if opt.DryRun {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return writeDurably(target, Format(next))
	})
	if err != nil {
		return nil, err
	}
	return next, nil
}

// withLock runs fn holding an exclusive flock on <path>.lock. The lock
// file is left in place: removing it would let a waiter lock a file that a
// third process can no longer see. Waiting stops when ctx is done.
func withLock(ctx context.Context, path string, wait time.Duration, fn func() error) error {
	if wait == 0 {
		wait = 10 * time.Second
	}
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("opening lock file: %w", err)
	}
	defer f.Close()
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("locking %s.lock: %w", path, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w (waited %s)", path, ErrLocked, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it anyway
	return fn()
}

// WriteFile writes data to path atomically and durably; used for plan
// files and exports, which are not compare-and-set.
func WriteFile(path string, data []byte) error {
	return writeDurably(path, data)
}

// writeDurably replaces path with data: renameio writes a temporary file
// beside it, syncs and renames it over path; then the directory is synced
// so the rename itself survives a crash.
func writeDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory of %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory of %s: %w", path, err)
	}
	return nil
}
