package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/fusee-dev/fusee/ringfile"
	"github.com/fusee-dev/fusee/ringfile/etcdstore"
)

// ringStoreFlags choose where a ring command finds the policy: a FILE
// argument, or --store etcd://HOST:PORT[,HOST:PORT...] with --namespace NS,
// the reference coordinator's key /wiggle/coord/policy/NS. The connection
// flags are named as etcdctl names them. The endpoints and credentials may
// come from FUSEE_* variables or the config file; the namespace, which
// chooses what is written, only from the command line.
type ringStoreFlags struct {
	store          string
	namespace      *string
	ownNamespace   string
	cacert, cert   string
	key            string
	user, password string
	dialTimeout    time.Duration
	commandTimeout time.Duration
	cmd            *cobra.Command
}

// add defines the flags on cmd. namespace is the command's own --namespace
// (init and import have one), or nil to define it here.
func (s *ringStoreFlags) add(cmd *cobra.Command, namespace *string) {
	s.cmd = cmd
	f := cmd.Flags()
	f.StringVar(&s.store, "store", "", "work on the policy in etcd instead of a file: etcd://HOST:PORT[,HOST:PORT...]")
	if namespace == nil {
		namespace = &s.ownNamespace
		f.StringVar(namespace, "namespace", "", "with --store: the namespace whose policy to use (key /wiggle/coord/policy/NS)")
	}
	s.namespace = namespace
	f.StringVar(&s.cacert, "cacert", "", "with --store: verify etcd's certificate with this CA bundle (TLS)")
	f.StringVar(&s.cert, "cert", "", "with --store: client certificate for etcd (TLS)")
	f.StringVar(&s.key, "key", "", "with --store: client certificate's key for etcd (TLS)")
	f.StringVar(&s.user, "user", "", "with --store: etcd user, NAME or NAME:PASSWORD")
	f.StringVar(&s.password, "password", "", "with --store: etcd password (else taken from --user NAME:PASSWORD)")
	f.DurationVar(&s.dialTimeout, "dial-timeout", etcdstore.DefaultDialTimeout, "with --store: how long to wait for a connection to etcd")
	f.DurationVar(&s.commandTimeout, "command-timeout", etcdstore.DefaultCommandTimeout, "with --store: how long each etcd request may take")
	markCLIOnly(cmd, "namespace")
}

// ringStoreHelp is the paragraph every ring command's help ends with.
const ringStoreHelp = `

With --store etcd://HOST:PORT[,HOST:PORT...] --namespace NS the command
works on the policy the reference coordinator keeps in etcd, under the key
/wiggle/coord/policy/NS, instead of a FILE (give one or the other): the
same checks, output and exit codes, and every write is one etcd
transaction fenced on the key's version (docs/rings.md, "The policy in
etcd"). TLS: --cacert, --cert, --key; auth: --user, --password; timeouts:
--dial-timeout, --command-timeout. These may also come from FUSEE_STORE,
FUSEE_USER... or the config file; --namespace only from the command line.`

// etcd reports whether the policy is in etcd.
func (s *ringStoreFlags) etcd() bool { return s.store != "" }

// open splits args into the store and the remaining arguments: with
// --store every argument is left; without, the first is FILE. min and max
// bound the arguments left (max < 0: no bound). The caller closes the
// store with the returned function.
func (s *ringStoreFlags) open(args []string, min, max int) (ringfile.Store, []string, func(), error) {
	none := func() {}
	if !s.etcd() {
		// The connection flags are ignored: they may come from the
		// environment for the commands that do use etcd.
		if s.namespace == &s.ownNamespace && *s.namespace != "" {
			return nil, nil, none, usagef("--namespace goes with --store: a ring file names its own namespace")
		}
		if len(args) == 0 {
			return nil, nil, none, usagef("give the ring FILE, or --store etcd://HOST:PORT --namespace NS")
		}
		rest := args[1:]
		if err := ringCountArgs(rest, min, max); err != nil {
			return nil, nil, none, err
		}
		return ringfile.FileStore{Path: args[0]}, rest, none, nil
	}
	if err := ringCountArgs(args, min, max); err != nil {
		if len(args) > 0 && min == 0 {
			return nil, nil, none, usagef("%q: give FILE or --store, not both (--store may come from FUSEE_STORE or the config file)", args[0])
		}
		return nil, nil, none, err
	}
	st, err := s.openEtcd()
	if err != nil {
		return nil, nil, none, err
	}
	return st, args, func() { _ = st.Close() }, nil
}

// run opens the store the flags and args name (FILE, or --store and no
// argument), runs fn on it and closes it: the body of every ring command
// that takes nothing but the policy as its argument.
func (s *ringStoreFlags) run(args []string, fn func(st ringfile.Store) error) error {
	st, _, done, err := s.open(args, 0, 0)
	if err != nil {
		return err
	}
	defer done()
	return fn(st)
}

// openEtcd makes the etcd store the flags describe.
func (s *ringStoreFlags) openEtcd() (*etcdstore.Store, error) {
	rest, ok := strings.CutPrefix(s.store, "etcd://")
	if !ok || rest == "" {
		return nil, usagef("--store %q: want etcd://HOST:PORT[,HOST:PORT...]", s.store)
	}
	var endpoints []string
	for _, ep := range strings.Split(strings.TrimSuffix(rest, "/"), ",") {
		if ep == "" || strings.ContainsAny(ep, "/?#") {
			return nil, usagef("--store %q: endpoint %q: want HOST:PORT", s.store, ep)
		}
		endpoints = append(endpoints, ep)
	}
	if *s.namespace == "" {
		return nil, usagef("--store needs --namespace NS: it names the policy's key /wiggle/coord/policy/NS (on the command line only)")
	}
	cfg := etcdstore.Config{Endpoints: endpoints, Namespace: *s.namespace,
		DialTimeout: s.dialTimeout, CommandTimeout: s.commandTimeout}
	cfg.Username, cfg.Password = s.user, s.password
	if name, pw, ok := strings.Cut(s.user, ":"); ok {
		if s.password != "" {
			return nil, usagef("give the password in --user NAME:PASSWORD or in --password, not both")
		}
		cfg.Username, cfg.Password = name, pw
	}
	if cfg.Password != "" && cfg.Username == "" {
		return nil, usagef("--password needs --user")
	}
	if (s.cert == "") != (s.key == "") {
		return nil, usagef("--cert and --key go together")
	}
	if s.cacert != "" || s.cert != "" {
		info := transport.TLSInfo{TrustedCAFile: s.cacert, CertFile: s.cert, KeyFile: s.key}
		tlsCfg, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd TLS settings: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	return etcdstore.Open(cfg)
}

func ringCountArgs(args []string, min, max int) error {
	switch {
	case len(args) < min:
		return usagef("want at least %d argument%s after FILE (or with --store), got %d", min, ringPlural(min), len(args))
	case max >= 0 && len(args) > max:
		return usagef("unexpected argument %q", args[max])
	}
	return nil
}

// ringLoad loads a policy that must be valid to act on.
func ringLoad(ctx context.Context, st ringfile.Store) (*ringfile.Policy, error) {
	p, err := ringfile.LoadValidFrom(ctx, st)
	return p, ringExplainInvalidIn(st, err)
}

// ringExplainInvalidIn points an invalid-policy error at validate.
func ringExplainInvalidIn(st ringfile.Store, err error) error {
	if !errors.Is(err, ringfile.ErrInvalid) {
		return err
	}
	return fmt.Errorf("%w\nrun `fusee ring validate %s` to see every finding", err, ringTargetArgs(st))
}

// ringExists reports whether the store holds a policy (possibly one that
// does not parse).
func ringExists(ctx context.Context, st ringfile.Store) (bool, error) {
	_, err := st.Load(ctx)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, etcdstore.ErrAbsent):
		return false, nil
	case errors.Is(err, context.Canceled), errors.Is(err, etcdstore.ErrUnreachable), errors.Is(err, etcdstore.ErrDenied):
		return false, err
	}
	return true, nil // there, but unreadable: the write will say why
}

// ringSameStored reports whether two policies would be stored alike in st:
// a ring file holds every declaration; etcd holds the value and the cell
// bindings, not the declarations of unbound cells no ring names.
func ringSameStored(st ringfile.Store, a, b *ringfile.Policy) bool {
	if _, ok := st.(ringfile.FileStore); ok {
		return string(ringfile.Format(a)) == string(ringfile.Format(b))
	}
	return string(ringfile.ExportWiggle(a, false)) == string(ringfile.ExportWiggle(b, false)) &&
		slices.Equal(a.Bindings(), b.Bindings())
}

// ringTargetArgs is what to give a ring command to work on st again.
func ringTargetArgs(st ringfile.Store) string {
	if es, ok := st.(*etcdstore.Store); ok {
		return fmt.Sprintf("--store %s --namespace %s", strings.TrimSuffix(es.Name(), es.Key()), strings.TrimPrefix(es.Key(), etcdstore.KeyPrefix))
	}
	return st.Name()
}
