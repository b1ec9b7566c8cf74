//go:build etcd

package etcdstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/fusee-dev/fusee/ringfile"
	"github.com/fusee-dev/fusee/ringfile/etcdstore"
	"github.com/fusee-dev/fusee/ringfile/etcdstore/etcdtest"
	"github.com/fusee-dev/fusee/ringfile/ringtest"
)

func open(t *testing.T, c *etcdtest.Cluster, ns string, timeout time.Duration) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints(), Namespace: ns,
		DialTimeout: time.Second, CommandTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func genesis(t *testing.T, ns string, shards int, cells ...string) *ringfile.Policy {
	t.Helper()
	p, err := ringfile.OpenEpoch(&ringfile.Policy{Namespace: ns, Current: ringfile.NoEpoch}, ringfile.EvenRing(shards, cells), ringfile.ShardChange{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ringWith puts shard k on cell b and every other shard on a: a ring that
// differs for each k.
func ringWith(shards, k int) ringfile.Ring {
	ring := ringfile.EvenRing(shards, []string{"a"})
	ring[k].Cell = "b"
	return ring
}

func openEpoch(ring ringfile.Ring) func(*ringfile.Policy) (*ringfile.Policy, error) {
	return func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		return ringfile.OpenEpoch(cur, ring, ringfile.ShardChange{}, ringfile.CellDecl{ID: "b"})
	}
}

// One cluster serves the single-member tests, each on its own namespace.
var (
	oneOnce sync.Once
	one     *etcdtest.Cluster
)

func single(t *testing.T) *etcdtest.Cluster {
	oneOnce.Do(func() { one = etcdtest.Start(&keepAlive{t}, 1) })
	return one
}

// keepAlive lets the shared cluster outlive the test that started it; the
// process exit stops it.
type keepAlive struct{ *testing.T }

func (k *keepAlive) Cleanup(func()) {}

func (k *keepAlive) TempDir() string {
	dir, err := os.MkdirTemp("", "fusee-etcd-")
	if err != nil {
		k.Fatal(err)
	}
	return dir
}

// A value in the reference's shape reads back bit for bit, and a write
// through the store stays in that shape.
func TestReferenceValueReadsBackBitForBit(t *testing.T) {
	s := open(t, single(t), "payments", 5*time.Second)
	ctx := context.Background()
	fixture, err := os.ReadFile("../../testdata/ring/payments.wiggle.json")
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.TrimSuffix(fixture, []byte("\n")) // the reference writes no newline
	if err := s.Put(ctx, value); err != nil {
		t.Fatal(err)
	}
	p, err := ringfile.LoadValidFrom(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := etcdstore.Encode(p); !bytes.Equal(got, value) {
		t.Fatalf("read back differs:\n got %s\nwant %s", got, value)
	}
	raw, err := s.Raw(ctx)
	if err != nil || !bytes.Equal(raw, value) {
		t.Fatalf("stored bytes differ (%v)", err)
	}
	// The same policy as the ring file made from that JSON.
	file, err := ringfile.Load("../../testdata/ring/payments.ring")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ringfile.Format(file), ringfile.Format(p)) {
		t.Fatalf("etcd and the ring file disagree:\n%s\n%s", ringfile.Format(p), ringfile.Format(file))
	}
	next, err := s.Update(ctx, ringfile.WriteOptions{ExpectRevision: p.Revision}, openEpoch(ringWith(len(p.CurrentEpoch().Ring), 0)))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = s.Raw(ctx)
	if !bytes.Equal(raw, etcdstore.Encode(next)) || bytes.HasSuffix(raw, []byte("\n")) {
		t.Fatalf("written value is not the reference's encoding: %s", raw)
	}
}

func TestAbsentKeyAndUnreadableValue(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	_, err := open(t, c, "nobody", 5*time.Second).Load(ctx)
	if !errors.Is(err, etcdstore.ErrAbsent) || !strings.Contains(err.Error(), "namespace nobody is not coordinated yet") {
		t.Fatalf("absent key: %v", err)
	}
	for i, bad := range []string{
		`{"currentEpoch":0,"revision":1,"epochs":{"0":{"status":"OPEN","ring":[]}}}`, // epochs not a string
		`{"currentEpoch":0,"revision":1}`,
		`not json`,
		`{"currentEpoch":0,"revision":1,"epochs":"{\"0\":{\"status\":\"OPEN\",\"ring\":[{\"shard\":0,\"cellId\":\"a\",\"region\":null}]}}","extra":1}`,
	} {
		s := open(t, c, fmt.Sprintf("bad%d", i), 5*time.Second)
		if err := s.Put(ctx, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Load(ctx)
		if !errors.Is(err, etcdstore.ErrBadValue) || !strings.Contains(err.Error(), "would read") {
			t.Errorf("value %s: %v", bad, err)
		}
		_, err = s.Update(ctx, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}, openEpoch(ringWith(1, 0)))
		if !errors.Is(err, etcdstore.ErrBadValue) {
			t.Errorf("an update over value %s: %v", bad, err)
		}
		raw, _ := s.Raw(ctx)
		if raw != nil {
			t.Errorf("Raw of an unreadable value: %s", raw)
		}
	}
}

func TestCreateIsConditionedOnAbsence(t *testing.T) {
	s := open(t, single(t), "created", 5*time.Second)
	ctx := context.Background()
	p := genesis(t, "created", 8, "a")
	if err := s.Create(ctx, p, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, p, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second create: %v", err)
	}
}

// Six writers race to open an epoch from the same revision, three times
// over: each time exactly one wins, the others lose with a conflict, and
// no epoch is lost. Then six writers without an expectation all get their
// epoch in, one after another.
func TestConcurrentOpenEpochExactlyOneWinsPerVersion(t *testing.T) {
	const writers, shards = 6, 32 // every ringWith of the test differs
	s := open(t, single(t), "race", 5*time.Second)
	ctx := context.Background()
	if err := s.Create(ctx, genesis(t, "race", shards, "a"), ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		cur, err := s.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		results := race(writers, func(i int) error {
			w := open(t, single(t), "race", 5*time.Second) // a client each, as separate processes have
			_, err := w.Update(ctx, ringfile.WriteOptions{ExpectRevision: cur.Revision, ExpectedBy: "--expect-revision"}, openEpoch(ringWith(shards, round*writers+i)))
			return err
		})
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case errors.Is(err, ringfile.ErrConflict):
				if !strings.Contains(err.Error(), fmt.Sprintf("expects revision %d but the key is at revision %d: it moved on", cur.Revision, cur.Revision+1)) {
					t.Errorf("writer %d: %v", i, err)
				}
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		}
		after, err := ringfile.LoadValidFrom(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if won != 1 || after.Revision != cur.Revision+1 || len(after.Epochs) != len(cur.Epochs)+1 {
			t.Fatalf("round %d: %d won; revision %d -> %d, epochs %d -> %d", round, won, cur.Revision, after.Revision, len(cur.Epochs), len(after.Epochs))
		}
	}
	cur, _ := s.Load(ctx)
	results := race(writers, func(i int) error {
		w := open(t, single(t), "race", 5*time.Second)
		_, err := w.Update(ctx, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}, func(p *ringfile.Policy) (*ringfile.Policy, error) {
			// A ring unlike the current one, whatever it is by now.
			ring := append(ringfile.Ring(nil), p.CurrentEpoch().Ring...)
			for j := range ring {
				ring[j].Cell = "a"
			}
			ring[(int(p.Current)+1+i)%shards].Cell = "b"
			if ring.SamePlacement(p.CurrentEpoch().Ring) {
				ring[(int(p.Current)+2+i)%shards].Cell = "b"
			}
			return ringfile.OpenEpoch(p, ring, ringfile.ShardChange{})
		})
		return err
	})
	for i, err := range results {
		if err != nil {
			t.Errorf("writer %d without an expectation: %v", i, err)
		}
	}
	after, _ := ringfile.LoadValidFrom(ctx, s)
	if after.Revision != cur.Revision+writers || len(after.Epochs) != len(cur.Epochs)+writers {
		t.Fatalf("without expectations: revision %d -> %d, epochs %d -> %d: an update was lost", cur.Revision, after.Revision, len(cur.Epochs), len(after.Epochs))
	}
}

func race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// On a three-member cluster a write succeeds with one member down; with
// two down it fails within the command timeout with an error naming the
// endpoints, and once the members are back the key holds the last
// committed policy, whole.
func TestThreeMembersOneDownThenTwo(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx := context.Background()
	s := open(t, c, "orders", 2*time.Second)
	if err := s.Create(ctx, genesis(t, "orders", 8, "a"), ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	c.Members[0].Stop()
	next, err := s.Update(ctx, ringfile.WriteOptions{ExpectRevision: 1}, openEpoch(ringWith(8, 1)))
	if err != nil {
		t.Fatalf("with one member of three down: %v", err)
	}
	before, _ := s.Raw(ctx)
	if !bytes.Equal(before, etcdstore.Encode(next)) {
		t.Fatal("the write with one member down is not what was read back")
	}

	// Reading needs a quorum too: with two members down it times out.
	c.Members[1].Stop()
	start := time.Now()
	_, err = s.Load(ctx)
	if !errors.Is(err, etcdstore.ErrUnreachable) || !strings.Contains(err.Error(), "did not answer reading") || time.Since(start) > 5*time.Second {
		t.Fatalf("reading with two members of three down: %v after %v", err, time.Since(start))
	}
	if err := c.Members[1].Restart(); err != nil {
		t.Fatal(err)
	}
	// The write's transaction meets two members down: the second stops
	// after the read, while the next policy is computed.
	_, err = s.Update(ctx, ringfile.WriteOptions{ExpectRevision: next.Revision}, func(cur *ringfile.Policy) (*ringfile.Policy, error) {
		c.Members[1].Stop()
		start = time.Now()
		return openEpoch(ringWith(8, 2))(cur)
	})
	took := time.Since(start)
	var unreachable *etcdstore.UnreachableError
	if !errors.As(err, &unreachable) {
		t.Fatalf("with two members of three down: %v, want an UnreachableError", err)
	}
	for _, ep := range c.Endpoints() {
		if !strings.Contains(err.Error(), ep) {
			t.Errorf("the error does not name endpoint %s: %v", ep, err)
		}
	}
	if !strings.Contains(err.Error(), "did not answer writing") || took > 10*time.Second {
		t.Errorf("after %v: %v", took, err)
	}
	t.Logf("two members down: %v after %v", err, took.Round(time.Millisecond))

	var wg sync.WaitGroup
	for _, m := range c.Members[:2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Restart(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s2 := open(t, c, "orders", 10*time.Second)
	after, err := s2.Raw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, before) {
		// A write that timed out may still have committed; then it must be
		// the whole policy that was written, never a part of it.
		p, err := etcdstore.Decode(after, "after", "orders")
		if err != nil || ringfile.Check(p) != nil || p.Revision != next.Revision+1 {
			t.Fatalf("after the outage the key holds neither the last policy nor the next one: %s (%v)", after, err)
		}
	}
}

// With auth on, a user who may only read is told which key and role to
// fix, and a wrong password is told as such.
func TestPermissionDeniedAndBadPassword(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	admin, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	steps := []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "ops", "opspw"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "reader"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "reader", etcdstore.KeyPrefix, clientv3.GetPrefixRangeEnd(etcdstore.KeyPrefix), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "reader", etcdstore.BindingPrefix, clientv3.GetPrefixRangeEnd(etcdstore.BindingPrefix), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "old", "oldpw"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "policy-only"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "policy-only", etcdstore.KeyPrefix, clientv3.GetPrefixRangeEnd(etcdstore.KeyPrefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserGrantRole(ctx, "old", "policy-only"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "ops", "reader"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}
	as := func(user, pw string) *etcdstore.Store {
		// Checking a password is slow on purpose (bcrypt), slower still under -race.
		s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints(), Namespace: "orders", Username: user, Password: pw,
			DialTimeout: 20 * time.Second, CommandTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	err = as("ops", "opspw").Create(ctx, genesis(t, "orders", 4, "a"), ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision})
	if !errors.Is(err, etcdstore.ErrDenied) || !strings.Contains(err.Error(), "denied creating /wiggle/coord/policy/orders (with the cell bindings under /wiggle/coord/cellbinding/orders/) to user ops") {
		t.Errorf("a reader writing: %v", err)
	}
	if _, err := as("ops", "opspw").Load(ctx); !errors.Is(err, etcdstore.ErrAbsent) {
		t.Errorf("a reader reading: %v", err)
	}
	// A role made before bindings had keys reads the policy only: it is
	// told to grant the binding prefix too.
	if _, err := as("old", "oldpw").Load(ctx); !errors.Is(err, etcdstore.ErrDenied) ||
		!strings.Contains(err.Error(), "(with the cell bindings under /wiggle/coord/cellbinding/orders/) to user old") ||
		!strings.Contains(err.Error(), "the same for /wiggle/coord/cellbinding/") {
		t.Errorf("a policy-only role reading: %v", err)
	}
	_, err = etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints(), Namespace: "orders", Username: "ops", Password: "wrong", DialTimeout: 20 * time.Second})
	if !errors.Is(err, etcdstore.ErrDenied) || !strings.Contains(err.Error(), "etcd refused user ops") {
		t.Errorf("a wrong password: %v", err)
	}
}

// One history, two stores: random histories of open-epoch with grown,
// shrunk and moved shard sets run on a ring file and on etcd at once; the
// two must answer every write alike and hold the same policy after each
// step, and every id minted in any epoch resolves to the cell its own
// epoch's ring names on both.
func TestShardSetHistoriesOnAFileAndOnEtcd(t *testing.T) {
	c := single(t)
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		ns := fmt.Sprintf("hist%d", run)
		file := ringfile.FileStore{Path: filepath.Join(dir, ns+".ring")}
		s, err := etcdstore.Open(etcdstore.Config{Endpoints: c.Endpoints(), Namespace: ns, DialTimeout: time.Second, CommandTimeout: 10 * time.Second})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		ringtest.Run(rt, ns, file, s)
	})
}

// The reference's cell binding scenario on etcd: one key per binding,
// claimed on the key's absence.
func TestCellBindingScenarioOnEtcd(t *testing.T) {
	c := single(t)
	ringtest.BindingScenario(t, "bind-", func(ns string) ringfile.Store { return open(t, c, ns, 10*time.Second) })
	// The keys are where docs/rings.md says, the value the fingerprint.
	s := open(t, c, "bind-orders", 10*time.Second)
	resp, err := s.Client().Get(context.Background(), etcdstore.BindingPrefix+"bind-orders/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var kvs []string
	for _, kv := range resp.Kvs {
		kvs = append(kvs, string(kv.Key)+"="+string(kv.Value))
	}
	if want := "/wiggle/coord/cellbinding/bind-orders/cellA=db-5 /wiggle/coord/cellbinding/bind-orders/standby=db-3"; strings.Join(kvs, " ") != want {
		t.Errorf("binding keys %v, want %s", kvs, want)
	}
}

// Racing claimers on a real etcd, each with its own client: 16 with
// fingerprint A, 16 with B; exactly one fingerprint wins and every
// claimer of it succeeds.
func TestCellBindingRaceOnEtcd(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	if err := open(t, c, "race-bind", 10*time.Second).Create(ctx, genesis(t, "race-bind", 4, "a"), ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	ringtest.BindingRace(t, 16, func() ringfile.Store { return open(t, c, "race-bind", 20*time.Second) })
}

// Nodes register (and bind their cell ids) before the first epoch: a
// create keeps those bindings, and refuses a policy that binds one of
// those cells to another fingerprint, writing nothing.
func TestCreateKeepsAndChecksEarlierBindings(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	s := open(t, c, "early", 10*time.Second)
	if _, err := s.Client().Put(ctx, s.BindingKey("a"), "db-1"); err != nil {
		t.Fatal(err)
	}
	p := genesis(t, "early", 4, "a")
	p.Declare(ringfile.CellDecl{ID: "a", Fingerprint: "db-2"})
	var conflict *ringfile.BindingConflictError
	if err := s.Create(ctx, p, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); !errors.As(err, &conflict) || conflict.Bound != "db-1" || conflict.Claimed != "db-2" {
		t.Fatalf("creating over a binding to another fingerprint: %v", err)
	}
	if _, err := s.Load(ctx); !errors.Is(err, etcdstore.ErrAbsent) {
		t.Fatalf("the refused create wrote the policy: %v", err)
	}
	q := genesis(t, "early", 4, "a")
	q.Declare(ringfile.CellDecl{ID: "b", Fingerprint: "db-b"})
	if err := s.Create(ctx, q, ringfile.WriteOptions{ExpectRevision: ringfile.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bs := got.Bindings(); len(bs) != 2 || bs[0].Fingerprint != "db-1" || bs[1].Fingerprint != "db-b" {
		t.Fatalf("bindings after the create: %+v", bs)
	}
}
