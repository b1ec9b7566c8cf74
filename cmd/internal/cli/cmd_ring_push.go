package cli

import (
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/ringfile"
)

type ringPushOptions struct {
	write ringWriteFlags
	store ringStoreFlags
}

func newRingPushCmd(ios *IO) *cobra.Command {
	var opts ringPushOptions
	cmd := &cobra.Command{
		Use:   "push FILE --store etcd://HOST:PORT[,...] --namespace NS [--expect-revision R]",
		Short: "Write a ring file's policy to the coordinator's etcd key",
		Long: `Push writes the policy in FILE to etcd, as the reference coordinator stores
it, under /wiggle/coord/policy/NS. FILE must be valid and its namespace must
be NS. If the key does not exist it is created (the transaction is
conditioned on its absence); if it exists, the push must move it forward as
an import must (a newer revision, every epoch and ring kept, no status
going back), and the transaction is conditioned on the key's version as
read, so a coordinator or operator writing in between makes it exit 5.

The push carries FILE's cell bindings (its cells' fingerprints) to etcd's
binding keys: each new one is claimed in the same transaction, on the
key's absence; a cell etcd binds to another fingerprint is refused, naming
both (two databases would share one cell id), and nothing is written.
Bindings etcd holds and FILE lacks (nodes that registered) are kept.
--expect-revision R refers to the revision in etcd.` + ringStoreHelp,
		Example: `  fusee ring push orders.ring --store etcd://10.0.0.1:2379 --namespace orders
  fusee ring push orders.ring --store etcd://10.0.0.1:2379 --namespace orders --expect-revision 6 --dry-run`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !opts.store.etcd() {
				return usagef("push needs --store etcd://HOST:PORT and --namespace NS")
			}
			p, err := loadRing(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if p.Namespace != *opts.store.namespace {
				return usagef("%s holds namespace %s, not %s", args[0], p.Namespace, *opts.store.namespace)
			}
			st, _, done, err := opts.store.open(nil, 0, 0)
			if err != nil {
				return err
			}
			defer done()
			return ringPut(cmd.Context(), ios, st, p, &opts.write, ringPutHow{verb: "pushed", from: args[0], keepCells: true})
		},
	}
	opts.write.add(cmd)
	opts.store.add(cmd, nil)
	return cmd
}

type ringPullOptions struct {
	write ringWriteFlags
	store ringStoreFlags
}

func newRingPullCmd(ios *IO) *cobra.Command {
	var opts ringPullOptions
	cmd := &cobra.Command{
		Use:   "pull --store etcd://HOST:PORT[,...] --namespace NS FILE",
		Short: "Write the coordinator's etcd policy to a ring file",
		Long: `Pull reads the policy of namespace NS from etcd and writes it to FILE. The
policy must be valid. If FILE does not exist it is created; if it exists,
the pull must move it forward as an import must. The cell bindings etcd
holds become the cells' fingerprints in FILE; FILE's own declarations are
kept, and a cell bound to another fingerprint in FILE than in etcd is
refused, naming both.

Each epoch's shard set is the shards its ring names. --expect-revision R
refers to FILE's revision.` + ringStoreHelp,
		Example: `  fusee ring pull --store etcd://10.0.0.1:2379 --namespace orders orders.ring
  fusee ring pull --store etcd://10.0.0.1:2379 --namespace orders orders.ring --dry-run`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !opts.store.etcd() {
				return usagef("pull needs --store etcd://HOST:PORT and --namespace NS")
			}
			es, err := opts.store.openEtcd()
			if err != nil {
				return err
			}
			defer es.Close()
			p, err := ringLoad(cmd.Context(), es)
			if err != nil {
				return err
			}
			return ringPut(cmd.Context(), ios, ringfile.FileStore{Path: args[0]}, p, &opts.write,
				ringPutHow{verb: "pulled", from: es.Name(), keepCells: true})
		},
	}
	opts.write.add(cmd)
	opts.store.add(cmd, nil)
	return cmd
}
