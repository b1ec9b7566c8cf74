package ringfile

import (
	"context"
	"time"
)

// Store is where one namespace's policy lives: a ring file (FileStore) or
// the reference coordinator's etcd key (package ringfile/etcdstore). Every
// command works on either through this interface, with the same checks:
// what a store adds is only how it reads, how it fences a write and how it
// names the policy in messages.
type Store interface {
	// Name names the policy in messages: a file's path, or the etcd
	// endpoints and key.
	Name() string
	// Load reads the policy without validating it. A ring file with syntax
	// errors is returned with what could be read and every error, as Parse
	// does; a store that cannot represent a partial policy refuses instead.
	Load(ctx context.Context) (*Policy, error)
	// Create writes a new policy after checking it, refusing (an error
	// wrapping fs.ErrExist) when one exists; an expected revision other
	// than 0 or AnyRevision is a *ConflictError.
	Create(ctx context.Context, p *Policy, opt WriteOptions) error
	// Update is the compare-and-set read-modify-write: it reads the
	// current policy, refuses an invalid one, checks opt's expected
	// revision, asks change for the next policy, checks it (Apply) and
	// commits it only if the stored policy has not changed since it was
	// read. A lost race is a *ConflictError; nothing is half-written.
	Update(ctx context.Context, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error)
}

// LoadValidFrom loads a policy that must be valid to act on.
func LoadValidFrom(ctx context.Context, s Store) (*Policy, error) {
	p, err := s.Load(ctx)
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

// Apply computes the next policy of a write from the current one, which
// must be valid: it checks the expected revision, calls change on a copy,
// and refuses a result that rewrites history (CheckTransition) or is
// invalid. name is the store's name for messages. Every store's Update
// runs it on what it read.
func Apply(cur *Policy, name string, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error) {
	if err := Check(cur); err != nil {
		return nil, err
	}
	if opt.ExpectRevision != AnyRevision && cur.Revision != opt.ExpectRevision {
		if opt.Stale != nil {
			if err := opt.Stale(cur); err != nil {
				return nil, err
			}
		}
		by := opt.ExpectedBy
		if by == "" {
			by = "the write"
		}
		return nil, &ConflictError{File: name, Expected: opt.ExpectRevision, Actual: cur.Revision, What: by, Noun: opt.noun()}
	}
	next, err := change(cur.Clone())
	if err != nil {
		return nil, err
	}
	next.File = name
	if err := CheckTransition(cur, next); err != nil {
		return nil, err
	}
	if err := Check(next); err != nil {
		return nil, err
	}
	return next, nil
}

// FileStore is a ring file: the policy in the text format, written under a
// lock on the file itself (see Update; no FILE.lock).
type FileStore struct {
	Path string
	// LockWait bounds the wait for another writer; WriteOptions.LockWait
	// overrides it when set. 10s when both are zero.
	LockWait time.Duration
}

func (s FileStore) Name() string { return s.Path }

func (s FileStore) Load(ctx context.Context) (*Policy, error) { return LoadContext(ctx, s.Path) }

func (s FileStore) Create(ctx context.Context, p *Policy, opt WriteOptions) error {
	if opt.LockWait == 0 {
		opt.LockWait = s.LockWait
	}
	return CreateContext(ctx, s.Path, p, opt)
}

func (s FileStore) Update(ctx context.Context, opt WriteOptions, change func(cur *Policy) (*Policy, error)) (*Policy, error) {
	if opt.LockWait == 0 {
		opt.LockWait = s.LockWait
	}
	return UpdateContext(ctx, s.Path, opt, change)
}
