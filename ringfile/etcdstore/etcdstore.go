package etcdstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fusee-dev/fusee/ringfile"
)

// KeyPrefix is where the reference coordinator keeps policies.
const KeyPrefix = "/wiggle/coord/policy/"

// BindingPrefix is where fusee keeps cell bindings, one key per (namespace,
// cell id): BindingPrefix + namespace + "/" + cellId, the value being the
// cell's storage fingerprint. The reference documents no etcd key for
// them; this prefix is fusee's choice, beside the policies'.
const BindingPrefix = "/wiggle/coord/cellbinding/"

// Defaults, as etcdctl has them.
const (
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = 5 * time.Second
)

// retries is how many times a write without an expected revision is
// computed before it reports losing the race: each lost race is another
// writer's win, so n writers racing at once all get in within n attempts.
const retries = 10

// Config says how to reach etcd and which policy to work on.
type Config struct {
	Endpoints          []string    // host:port, or a URL with http:// or https://
	Namespace          string      // the policy's namespace: the key's last segment
	TLS                *tls.Config // nil: plain connections
	Username, Password string
	DialTimeout        time.Duration // 0: DefaultDialTimeout
	CommandTimeout     time.Duration // each request; 0: DefaultCommandTimeout
}

// Store is one namespace's policy in etcd.
type Store struct {
	cfg      Config
	cli      *clientv3.Client
	key      string
	bindings string // the prefix of the namespace's binding keys
}

// Open makes a client for cfg. It does not wait for a connection: an
// unreachable cluster shows on the first request, as an *UnreachableError.
func Open(cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoint given")
	}
	if cfg.Namespace == "" {
		return nil, errors.New("etcd: no namespace given: the namespace names the policy's key")
	}
	if strings.Contains(cfg.Namespace, "/") {
		return nil, fmt.Errorf("etcd: namespace %q contains '/'", cfg.Namespace)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	s := &Store{cfg: cfg, key: KeyPrefix + cfg.Namespace, bindings: BindingPrefix + cfg.Namespace + "/"}
	start := time.Now()
	// With a user, New authenticates at once, bounded by the dial timeout.
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		TLS:         cfg.TLS,
		Username:    cfg.Username,
		Password:    cfg.Password,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, s.explain(err, "authenticating", start, "--dial-timeout")
	}
	s.cli = cli
	return s, nil
}

// Close closes the client.
func (s *Store) Close() error { return s.cli.Close() }

// Key is the policy's etcd key.
func (s *Store) Key() string { return s.key }

// BindingKey is the etcd key of cell's binding.
func (s *Store) BindingKey(cell string) string { return s.bindings + cell }

// Name is "etcd://ENDPOINTS/wiggle/coord/policy/NS", for messages.
func (s *Store) Name() string {
	hosts := make([]string, len(s.cfg.Endpoints))
	for i, e := range s.cfg.Endpoints {
		_, rest, ok := strings.Cut(e, "://")
		if !ok {
			rest = e
		}
		hosts[i] = rest
	}
	return "etcd://" + strings.Join(hosts, ",") + s.key
}

// stored is what one read found.
type stored struct {
	policy   *ringfile.Policy
	raw      []byte
	present  bool // the policy key exists
	version  int64
	modRev   int64
	revision int64                       // the store's revision at the read
	bound    map[string]*mvccpb.KeyValue // cell -> its binding key as read
}

// Load reads and decodes the policy; it does not validate it.
func (s *Store) Load(ctx context.Context) (*ringfile.Policy, error) {
	st, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	return st.policy, nil
}

// Raw returns the value's bytes as stored.
func (s *Store) Raw(ctx context.Context) ([]byte, error) {
	st, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	return st.raw, nil
}

// read reads the policy key and the namespace's binding keys in one
// transaction, so the two are one snapshot; each binding is declared in
// the policy as its cell's fingerprint, as a ring file declares it.
func (s *Store) read(ctx context.Context) (*stored, error) {
	st, err := s.readKeys(ctx)
	if err != nil {
		return nil, err
	}
	if !st.present {
		return nil, &AbsentError{Name: s.Name(), Namespace: s.cfg.Namespace}
	}
	p, err := Decode(st.raw, s.Name(), s.cfg.Namespace)
	if err != nil {
		return nil, err
	}
	for _, cell := range sortedCells(st.bound) {
		p.Declare(ringfile.CellDecl{ID: cell, Fingerprint: string(st.bound[cell].Value)})
	}
	st.policy = p
	return st, nil
}

// readKeys reads the policy key and the binding keys, in one transaction.
func (s *Store) readKeys(ctx context.Context) (*stored, error) {
	var resp *clientv3.TxnResponse
	err := s.do(ctx, "reading", func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(ctx).Then(clientv3.OpGet(s.key), clientv3.OpGet(s.bindings, clientv3.WithPrefix())).Commit()
		return err
	})
	if err != nil {
		return nil, err
	}
	st := &stored{revision: resp.Header.Revision, bound: map[string]*mvccpb.KeyValue{}}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		st.raw, st.present, st.version, st.modRev = kvs[0].Value, true, kvs[0].Version, kvs[0].ModRevision
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		st.bound[strings.TrimPrefix(string(kv.Key), s.bindings)] = kv
	}
	return st, nil
}

func sortedCells(m map[string]*mvccpb.KeyValue) []string {
	cells := make([]string, 0, len(m))
	for c := range m {
		cells = append(cells, c)
	}
	slices.Sort(cells)
	return cells
}

// bindingOps turns the change of bindings from what was read to next into
// the transaction's conditions and operations: a new binding is put only
// if its key is still absent (version 0: the claim of seed 000 §9), a
// removed one is deleted only if its key is as read. A binding never
// changes fingerprint in place: that is a conflict, refused.
func (s *Store) bindingOps(read map[string]*mvccpb.KeyValue, next *ringfile.Policy) ([]clientv3.Cmp, []clientv3.Op, error) {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	want := map[string]string{}
	for _, b := range next.Bindings() {
		want[b.Cell] = b.Fingerprint
		kv, ok := read[b.Cell]
		switch {
		case !ok:
			cmps = append(cmps, clientv3.Compare(clientv3.Version(s.BindingKey(b.Cell)), "=", 0))
			ops = append(ops, clientv3.OpPut(s.BindingKey(b.Cell), b.Fingerprint))
		case string(kv.Value) != b.Fingerprint:
			return nil, nil, &ringfile.BindingConflictError{Name: s.Name(), Namespace: next.Namespace, Cell: b.Cell, Bound: string(kv.Value), Claimed: b.Fingerprint}
		}
	}
	for _, cell := range sortedCells(read) {
		// A key with no value binds nothing (the policy does not show it):
		// it is left as it is.
		if _, kept := want[cell]; !kept && len(read[cell].Value) > 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.BindingKey(cell)), "=", read[cell].ModRevision))
			ops = append(ops, clientv3.OpDelete(s.BindingKey(cell)))
		}
	}
	return cmps, ops, nil
}

// Decode reads a stored value as the reference would, then as fusee does.
// Each epoch's shard set is the shards its ring names.
func Decode(value []byte, name, namespace string) (*ringfile.Policy, error) {
	if err := checkShape(value); err != nil {
		return nil, &ValueError{Name: name, Err: err}
	}
	p, err := ringfile.ImportWiggle(value, ringfile.ImportOptions{File: name, Namespace: namespace})
	if err != nil {
		return nil, &ValueError{Name: name, Err: err}
	}
	p.File = name
	return p, nil
}

// checkShape refuses what ImportWiggle accepts but the reference's etcd
// store would not read: anything but an object whose epochs is a string.
func checkShape(value []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(value, &top); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	epochs, ok := top["epochs"]
	if !ok {
		return errors.New(`no "epochs" key`)
	}
	if t := bytes.TrimSpace(epochs); len(t) == 0 || t[0] != '"' {
		return errors.New(`"epochs" is not a string holding the epochs object (the reference stores it as a JSON string)`)
	}
	return nil
}

// Encode is the value the reference writes for p: compact, no newline.
func Encode(p *ringfile.Policy) []byte {
	return bytes.TrimSuffix(ringfile.ExportWiggle(p, false), []byte("\n"))
}

// Create writes a new policy, conditioned on the key being absent.
func (s *Store) Create(ctx context.Context, p *ringfile.Policy, opt ringfile.WriteOptions) error {
	if err := ringfile.Check(p); err != nil {
		return err
	}
	if opt.ExpectRevision != ringfile.AnyRevision && opt.ExpectRevision != 0 {
		return &ringfile.ConflictError{File: s.Name(), Expected: opt.ExpectRevision, Missing: true, What: opt.ExpectedBy, Noun: "key"}
	}
	// Bindings may exist before the policy (nodes register before the
	// first epoch): the new policy's must agree with them, and they are
	// kept.
	st, err := s.readKeys(ctx)
	if err != nil {
		return err
	}
	if st.present {
		return s.exists()
	}
	withBound := p.Clone()
	for _, cell := range sortedCells(st.bound) {
		withBound.Declare(ringfile.CellDecl{ID: cell, Fingerprint: string(st.bound[cell].Value)})
	}
	cmps, ops, err := s.bindingOps(st.bound, withBound)
	if err != nil {
		return err
	}
	if opt.DryRun {
		return nil
	}
	var resp *clientv3.TxnResponse
	err = s.do(ctx, "creating", func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(ctx).
			If(append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.key), "=", 0)}, cmps...)...).
			Then(append([]clientv3.Op{clientv3.OpPut(s.key, string(Encode(p)))}, ops...)...).
			Commit()
		return err
	})
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		now, err := s.readKeys(ctx)
		if err == nil && !now.present {
			return fmt.Errorf("%s: a cell binding changed while the policy was being created; nothing written: retry", s.Name())
		}
		return s.exists()
	}
	return nil
}

func (s *Store) exists() error {
	return fmt.Errorf("%s already exists: refusing to overwrite a policy (%w)", s.Name(), fs.ErrExist)
}

// Update is the compare-and-set read-modify-write (see ringfile.Store).
func (s *Store) Update(ctx context.Context, opt ringfile.WriteOptions, change func(cur *ringfile.Policy) (*ringfile.Policy, error)) (*ringfile.Policy, error) {
	opt.Noun = "key"
	for attempt := 1; ; attempt++ {
		cur, err := s.read(ctx)
		if err != nil {
			return nil, err
		}
		next, err := ringfile.Apply(cur.policy, s.Name(), opt, change)
		if err != nil {
			return nil, err
		}
		if opt.DryRun {
			if _, _, err := s.bindingOps(cur.bound, next); err != nil {
				return nil, err
			}
			return next, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cmps, ops, err := s.bindingOps(cur.bound, next)
		if err != nil {
			return nil, err
		}
		var resp *clientv3.TxnResponse
		err = s.do(ctx, "writing", func(ctx context.Context) (err error) {
			resp, err = s.cli.Txn(ctx).
				If(append([]clientv3.Cmp{clientv3.Compare(clientv3.Version(s.key), "=", cur.version),
					clientv3.Compare(clientv3.ModRevision(s.key), "=", cur.modRev)}, cmps...)...).
				Then(append([]clientv3.Op{clientv3.OpPut(s.key, string(Encode(next)))}, ops...)...).
				Commit()
			return err
		})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return next, nil
		}
		// Someone wrote between the read and the transaction.
		if opt.ExpectRevision == ringfile.AnyRevision && attempt < retries {
			continue
		}
		now, err := s.read(ctx)
		if err != nil {
			return nil, err
		}
		expected, by := opt.ExpectRevision, opt.ExpectedBy
		if expected == ringfile.AnyRevision {
			expected, by = cur.policy.Revision, fmt.Sprintf("the write (recomputed %d times)", attempt)
		}
		if by == "" {
			by = "the write"
		}
		return nil, &ringfile.ConflictError{File: s.Name(), Expected: expected, Actual: now.policy.Revision, What: by, Noun: "key"}
	}
}

// Put writes raw bytes as the value, conditioned on the key being absent:
// for tests and fixtures that stand for what the reference wrote.
func (s *Store) Put(ctx context.Context, value []byte) error {
	var resp *clientv3.TxnResponse
	err := s.do(ctx, "writing", func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(s.key), "=", 0)).
			Then(clientv3.OpPut(s.key, string(value))).
			Commit()
		return err
	})
	if err == nil && !resp.Succeeded {
		err = s.exists()
	}
	return err
}

// do runs one request bounded by the command timeout and turns what etcd
// answers into errors an operator can act on.
func (s *Store) do(ctx context.Context, what string, req func(ctx context.Context) error) error {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	err := req(rctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: the caller's, not the cluster's
	}
	if rctx.Err() != nil {
		err = errors.Join(err, context.DeadlineExceeded)
	}
	return s.explain(err, what, start, "--command-timeout")
}

// explain turns what etcd answered into an error an operator can act on.
// timeout names the setting that bounded the wait.
func (s *Store) explain(err error, what string, start time.Time, timeout string) error {
	switch {
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return &DeniedError{Name: s.Name(), Key: s.key, Bindings: s.bindings, User: s.cfg.Username, What: what, Err: err}
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrUserEmpty),
		errors.Is(err, rpctypes.ErrAuthNotEnabled), errors.Is(err, rpctypes.ErrInvalidAuthToken):
		return &DeniedError{Name: s.Name(), Key: s.key, Bindings: s.bindings, User: s.cfg.Username, What: "authenticating", Err: err}
	case errors.Is(err, context.DeadlineExceeded) || isUnavailable(err):
		return &UnreachableError{Endpoints: s.cfg.Endpoints, Elapsed: time.Since(start), What: what, Key: s.key, Timeout: timeout, Err: err}
	}
	return fmt.Errorf("%s: %s %s: %w", s.Name(), what, s.key, err)
}

// Client is the store's etcd client, for tests that look at the keys.
func (s *Store) Client() *clientv3.Client { return s.cli }
