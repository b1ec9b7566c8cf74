package cli

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/fusee-dev/fusee/idcodec"
)

func init() { addCommand(newIDCmd) }

func newIDCmd(ios *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Parse, build, place and mint self-routing instance ids",
		Long: `An instance id carries its own routing:

  {namespace}[.c{cell}].e{epoch}.s{shard}.{ulid}

The epoch and shard are stamped when the id is minted and read back as they
are; they are never recomputed, so an instance keeps its placement for life.
Anything that does not match this grammar is a legacy id, which routes to
the namespace's genesis cell: that is a result, not an error.

These commands work on ids alone. They read no data directory and no ring
file, and need nothing stopped.`,
		Example: `  fusee id parse orders.ccellA.e2.s5.01H8XK9ABCDEFGHJKMNPQRSTVW
  fusee id shard 01H8XK9ABCDEFGHJKMNPQRSTVW 8
  fusee id mint --namespace orders --epoch 2 --owned 3,8 --count 5`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newIDParseCmd(ios), newIDFormatCmd(ios), newIDShardCmd(ios), newIDMintCmd(ios))
	return cmd
}

// noArgs refuses arguments to a command that only groups others, so a
// mistyped subcommand is a usage error rather than silent help.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// idView is an id as parse and mint print it in JSON.
type idView struct {
	ID        string `json:"id"`
	Legacy    bool   `json:"legacy"`
	Namespace string `json:"namespace,omitempty"`
	Cell      string `json:"cell,omitempty"`
	Epoch     *int64 `json:"epoch,omitempty"`
	Shard     *int64 `json:"shard,omitempty"`
	ULID      string `json:"ulid,omitempty"`
	Minted    string `json:"minted,omitempty"` // when the rest is a ULID: its time
}

func newIDView(raw string) idView {
	id := idcodec.Parse(raw)
	if id.Legacy {
		return idView{ID: raw, Legacy: true}
	}
	return idView{
		ID:        raw,
		Namespace: id.Namespace,
		Cell:      id.Cell,
		Epoch:     &id.Epoch,
		Shard:     &id.Shard,
		ULID:      id.ULID,
		Minted:    ulidTime(id.ULID),
	}
}

// ulidTime is the time a ULID was made, or "" when s is not a ULID.
func ulidTime(s string) string {
	u, err := ulid.ParseStrict(s)
	if err != nil {
		return ""
	}
	return ulid.Time(u.Time()).UTC().Format("2006-01-02T15:04:05.000Z")
}

// --- fusee id parse ---

type idParseOptions struct{ json bool }

func newIDParseCmd(ios *IO) *cobra.Command {
	var opts idParseOptions
	cmd := &cobra.Command{
		Use:   "parse <id>",
		Short: "Show the fields of an instance id, or that it is legacy",
		Long: `Parse splits an instance id into namespace, cell (when the id names the cell
that minted it), epoch, shard and ulid, and shows when the ulid was made.

An id that does not match the grammar prints "legacy" and exits 0: legacy
ids are valid, they route to the namespace's genesis cell. Leading zeros in
the epoch and shard are accepted; an epoch or shard too large for a signed
64-bit integer makes the id legacy, as the coordinator reads it.

With --json the output is one object: id and legacy always, the other
fields for a self-routing id (cell only when present, minted only when the
rest is a ULID).`,
		Example: `  fusee id parse orders.ceu-1.e3.s17.01ARZ3NDEKTSV4RRFFQ69G5FAV
  fusee id parse --json orders.e3.s17.01ARZ3NDEKTSV4RRFFQ69G5FAV
  fusee id parse wfi_abc          # prints: legacy`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIDParse(ios, opts, args[0])
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the fields as JSON")
	return cmd
}

func runIDParse(ios *IO, opts idParseOptions, raw string) error {
	v := newIDView(raw)
	if opts.json {
		return ios.printJSON(v)
	}
	if v.Legacy {
		_, err := fmt.Fprintln(ios.Out, "legacy")
		return err
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	row := func(k, val string) { fmt.Fprintf(tw, "%s\t%s\n", k, val) }
	row("namespace", display(v.Namespace))
	if v.Cell != "" {
		row("cell", display(v.Cell))
	} else {
		row("cell", "(none)")
	}
	row("epoch", strconv.FormatInt(*v.Epoch, 10))
	row("shard", strconv.FormatInt(*v.Shard, 10))
	row("ulid", display(v.ULID))
	if v.Minted != "" {
		row("minted", v.Minted)
	}
	return tw.Flush()
}

// display quotes s when it holds anything that would not print plainly
// (control characters, line breaks, spaces at either end).
func display(s string) string {
	plain := s != "" && strings.TrimSpace(s) == s
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// --- fusee id format ---

type idFormatOptions struct {
	namespace, cell string
	epoch, shard    int64
	json            bool
}

func newIDFormatCmd(ios *IO) *cobra.Command {
	var opts idFormatOptions
	cmd := &cobra.Command{
		Use:   "format --namespace NS [--cell C] --epoch E --shard S <ulid>",
		Short: "Build an instance id from its fields",
		Long: `Format builds {namespace}[.c{cell}].e{epoch}.s{shard}.{ulid} and prints it.

It refuses (exit 2) an empty namespace or cell, or one containing '.', a
negative epoch or shard, an empty ulid or one with a line break, and an id
longer than 128 characters counted as UTF-16 code units (the coordinator's
id columns hold 128). A blank --cell (empty or only whitespace) omits the
cell segment. A ulid that is not a ULID is used as given, with a warning.

Format only builds the text: it does not check that the shard belongs to
the epoch's ring. To place a new id use "fusee id mint".

With --json the output is the object "fusee id parse --json" prints for
the new id (docs/schema/id.json).`,
		Example: `  fusee id format --namespace orders --epoch 3 --shard 17 01ARZ3NDEKTSV4RRFFQ69G5FAV
  fusee id format --namespace orders --cell eu-1 --epoch 3 --shard 17 01ARZ3NDEKTSV4RRFFQ69G5FAV`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "namespace", "epoch", "shard"); err != nil {
				return err
			}
			return runIDFormat(ios, opts, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.namespace, "namespace", "", "namespace (required; no '.')")
	f.StringVar(&opts.cell, "cell", "", "cell that minted the id (no '.'; blank omits the segment)")
	f.Int64Var(&opts.epoch, "epoch", 0, "epoch (required)")
	f.Int64Var(&opts.shard, "shard", 0, "shard (required)")
	f.BoolVar(&opts.json, "json", false, "print the new id's fields as JSON")
	return cmd
}

func runIDFormat(ios *IO, opts idFormatOptions, rest string) error {
	id, err := idcodec.Format(opts.namespace, opts.cell, opts.epoch, opts.shard, rest)
	if err != nil {
		return usagef("%v", err)
	}
	if _, err := ulid.ParseStrict(rest); err != nil {
		ios.warnf("%s is not a ULID (%v); formatting it as given", display(rest), err)
	}
	if opts.json {
		return ios.printJSON(newIDView(id))
	}
	_, err = fmt.Fprintln(ios.Out, id)
	return err
}

// requireFlags is a usage error naming the first of names not set. It is
// checked in RunE, after settings are applied, so a flag set through
// FUSEE_* or the config file counts (cobra's MarkFlagRequired checks
// before that).
func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			return usagef("--%s is required", n)
		}
	}
	return nil
}

// --- fusee id shard ---

type idShardOptions struct{ json bool }

func newIDShardCmd(ios *IO) *cobra.Command {
	var opts idShardOptions
	cmd := &cobra.Command{
		Use:   "shard <ulid> <n>",
		Short: "Print the shard a ulid lands on among n",
		Long: `Shard prints shardFor(ulid, n), the position among n a new id with this
ulid is placed at: 0 when n is 1, otherwise the 64-bit FNV-1a hash of the
string's UTF-16 code units, finished with murmur3's fmix64 and reduced with
Java's Math.floorMod. It gives, bit for bit, the coordinator's answer.

Any string may be given, not only a ULID. n is a count from 1 to
2147483647 (a Java int). When minting, the result indexes the cell's owned
shards: see "fusee id mint".

With --json it prints {"input", "n", "hash64", "shard"}.`,
		Example: `  fusee id shard 01ARZ3NDEKTSV4RRFFQ69G5FAV 8
  fusee id shard --json 01ARZ3NDEKTSV4RRFFQ69G5FAV 1024`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.ParseInt(args[1], 10, 32)
			if err != nil || n < 1 {
				return usagef("n must be a shard count from 1 to 2147483647, not %q", args[1])
			}
			return runIDShard(ios, opts, args[0], int(n))
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print input, n, hash and shard as JSON")
	return cmd
}

func runIDShard(ios *IO, opts idShardOptions, s string, n int) error {
	shard := idcodec.ShardFor(s, n)
	if opts.json {
		return ios.printJSON(struct {
			Input  string `json:"input"`
			N      int    `json:"n"`
			Hash64 int64  `json:"hash64"`
			Shard  int    `json:"shard"`
		}{s, n, idcodec.Hash64(s), shard})
	}
	_, err := fmt.Fprintln(ios.Out, shard)
	return err
}

// --- fusee id mint ---

type idMintOptions struct {
	namespace, cell string
	epoch           int64
	owned           []int64
	count           int
	json            bool
}

func newIDMintCmd(ios *IO) *cobra.Command {
	var opts idMintOptions
	cmd := &cobra.Command{
		Use:   "mint --namespace NS --epoch E --owned S[,S...] [--cell C] [--count K]",
		Short: "Mint new instance ids as a cell would",
		Long: `Mint makes new ids the way a cell does: a fresh ULID (from the system's
cryptographic random source), stamped with the epoch and with
owned[shardFor(ulid, len(owned))], where --owned lists the shards the cell
owns in the order their slots appear in the epoch's ring. A cell owning a
single shard always chooses it.

Ids minted by one run sort in the order they were minted, even within one
millisecond, when compared by their ulid.

It reads no ring: --epoch and --owned are taken as given. Use it to test
routing, or to make ids for a cell by hand. Prints one id per line, or with
--json one object per line (the fields of "fusee id parse --json").`,
		Example: `  fusee id mint --namespace orders --epoch 3 --owned 3,8
  fusee id mint --namespace orders --cell eu-1 --epoch 3 --owned 3,8 --count 10 --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "namespace", "epoch", "owned"); err != nil {
				return err
			}
			if err := opts.validate(); err != nil {
				return err
			}
			return runIDMint(cmd, ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.namespace, "namespace", "", "namespace (required; no '.')")
	f.StringVar(&opts.cell, "cell", "", "cell label to stamp in the ids (no '.'; blank omits it)")
	f.Int64Var(&opts.epoch, "epoch", 0, "epoch to stamp (required)")
	f.Int64SliceVar(&opts.owned, "owned", nil, "shards the cell owns, in ring order (required), e.g. 3,8")
	f.IntVar(&opts.count, "count", 1, "how many ids to mint")
	f.BoolVar(&opts.json, "json", false, "print one JSON object per id")
	return cmd
}

// sampleULID stands in for a fresh ULID when checking the fields before
// minting: every ULID has its length.
const sampleULID = "00000000000000000000000000"

func (o idMintOptions) validate() error {
	if o.count < 1 {
		return usagef("--count must be at least 1, not %d", o.count)
	}
	if len(o.owned) == 0 {
		return usagef("--owned lists no shard: a cell that owns none is on standby and cannot mint")
	}
	seen := make(map[int64]bool, len(o.owned))
	for _, s := range o.owned {
		if s < 0 {
			return usagef("--owned: shard %d is negative", s)
		}
		if seen[s] {
			return usagef("--owned: shard %d is listed twice; a shard has one slot in a ring", s)
		}
		seen[s] = true
	}
	// Check namespace, cell, epoch and length once, with the longest shard
	// number, so that a bad flag is a usage error and not a failed mint.
	longest := o.owned[0]
	for _, s := range o.owned {
		longest = max(longest, s)
	}
	if _, err := idcodec.Format(o.namespace, o.cell, o.epoch, longest, sampleULID); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func runIDMint(cmd *cobra.Command, ios *IO, o idMintOptions) error {
	ctx := cmd.Context()
	m := idcodec.NewMinter(idcodec.NewPlacement(o.namespace, o.cell, o.epoch, o.owned), rand.Reader, nil)
	w := bufio.NewWriter(ios.Out)
	enc := json.NewEncoder(w) // one compact object per line
	for i := range o.count {
		if i%1024 == 0 && ctx != nil {
			if err := ctx.Err(); err != nil {
				w.Flush()
				return err
			}
		}
		id, err := m.Mint()
		if err != nil {
			w.Flush()
			if errors.Is(err, idcodec.ErrStandby) {
				return usagef("%v", err)
			}
			return err
		}
		if o.json {
			err = enc.Encode(newIDView(id))
		} else {
			_, err = fmt.Fprintln(w, id)
		}
		if err != nil {
			return err
		}
	}
	return w.Flush()
}
