//go:build etcd

// Package etcdtest starts real etcd servers in the test process (the
// server's embed package), on loopback ports and temporary data
// directories, for the tests of the etcd store and the ring commands. It
// is built only with the etcd build tag: the server takes a while to
// compile, so `go test ./...` leaves these tests out and .ci/run adds
// -tags etcd.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Member is one etcd server of a Cluster.
type Member struct {
	cfg  *embed.Config
	etcd *embed.Etcd
	// Client is the member's client URL's host:port.
	Client string
}

// Cluster is a running etcd cluster on loopback.
type Cluster struct {
	t       testing.TB
	Members []*Member
}

// Start starts an n-member cluster and waits until it has a leader. The
// members are stopped when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var initial []string
	for i := range n {
		peer, client := freeURL(t), freeURL(t)
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.InitialClusterToken = "fusee-test"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		// Quick elections keep the tests that stop members short.
		cfg.TickMs, cfg.ElectionMs = 20, 200
		initial = append(initial, cfg.Name+"="+peer.String())
		c.Members = append(c.Members, &Member{cfg: cfg, Client: client.Host})
	}
	for _, m := range c.Members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
	}
	errs := make(chan error, n)
	for _, m := range c.Members {
		go func() { errs <- m.start() }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			m.Stop()
		}
	})
	return c
}

func (m *Member) start() error {
	e, err := embed.StartEtcd(m.cfg)
	if err != nil {
		return fmt.Errorf("starting etcd member %s: %w", m.cfg.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd member %s: %w", m.cfg.Name, err)
	case <-time.After(60 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %s was not ready within a minute", m.cfg.Name)
	}
	m.etcd = e
	return nil
}

// Stop stops the member; its data directory stays, for Restart.
func (m *Member) Stop() {
	if m.etcd != nil {
		m.etcd.Close()
		m.etcd = nil
	}
}

// Restart starts a stopped member again on its data directory. With the
// other members it waits for a quorum; call it from goroutines for more
// than one.
func (m *Member) Restart() error {
	m.cfg.ClusterState = embed.ClusterStateFlagExisting
	return m.start()
}

// Endpoints lists the members' client host:port.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.Client
	}
	return out
}

// Store is the --store value for the cluster.
func (c *Cluster) Store() string { return "etcd://" + strings.Join(c.Endpoints(), ",") }

func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
