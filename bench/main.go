// Command bench times `fusee reshard` against the two baselines it is
// judged by, on generated directories, and prints a table and JSON.
//
//	go run ./bench -runs 100000 -pairs 5 -json bench/results/100k.json
//
// -runs may list several sizes (-runs 100000,1000000,10000000): every
// case is then timed at each, and a round times every size and case in
// turn, so that the reshard's CPU a run is compared across sizes measured
// alike (the "flatness" lines and JSON). Before each timed command, and
// untimed, the fresh copy (if any) is made and `sync` writes back what the
// copy and the command before left dirty.
//
// For each case (old -> new shard count) and each round it runs, in this
// order and alternating so that a slow spell of a shared machine hits
// every command alike:
//
//   - copy:    `cp -a <src> <dst> && sync`, the physical floor;
//   - floor:   the rewrite floor, every old store iterated and written
//     unchanged as sstables and ingested, two stores at a time
//     (BenchmarkRewriteFloor in reshard/bench_test.go, one iteration);
//   - reshard: `fusee reshard <copy> <new> --json` on a fresh copy (the
//     copy is not timed; the report gives its phases' times);
//   - dry-run: `fusee reshard <copy> <new> --dry-run`;
//   - reshard-1p: the reshard with GOMAXPROCS=1 (one core: how it
//     scales with cores);
//   - reshard-16m: the reshard with --memory 16MiB (the run map's
//     pressure of about 16M runs under the default budget);
//   - reshard-nocgo: the reshard by a binary built with CGO_ENABLED=0,
//     as the releases are (pebble's caches on the Go heap: peak RSS).
//
// On a machine with more than two cores every command is pinned to the
// first two (taskset -c 0,1), the machine the targets are set for. The
// load average is recorded before and after.
//
// With -readers (the default) it also times, on each case's source
// directory and alternating in the same way, the commands an operator runs
// before and after: `fusee inspect`, `fusee verify` and `fusee dump
// --logical` (output to /dev/null), and says how many runs each reads per
// wall minute. With -gen it times `fusee gen` itself, into a fresh
// directory every round. With -src an existing directory is used for
// every case instead of a generated one (its shard count must be each
// case's old count): this is how a 10M-run directory made once, over an
// hour or two, is measured.
//
// -commands times a subset of these (a 10M round of all of them takes
// most of an hour); a ratio is given only when both of its commands
// were timed, and is left out of the JSON otherwise.
//
// Every command runs under /usr/bin/time -v for its peak RSS. The
// generated directories are cached under $FUSEE_BENCH_CACHE (default
// ~/.cache/fusee-bench), keyed by shard count, runs and seed: delete it
// after a change to the on-disk format. The binaries are built from this
// checkout into the cache on every run.
//
// bench owns nothing in the repository's packages: it runs the built
// binaries (reading only a directory's fusee.meta through package meta),
// and must never be imported.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

type sample struct {
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"` // user + system
	RSSKiB     int64   `json:"peak_rss_kib"`
	// Phases are a reshard's phase times (wall seconds), from its --json
	// report: where the time goes, for a model of how it scales.
	Phases map[string]float64 `json:"phases,omitempty"`
}

type measure struct {
	Samples       []sample `json:"samples"`
	MedianSeconds float64  `json:"median_seconds"`
	MedianCPU     float64  `json:"median_cpu_seconds"`
	MedianRSSMiB  float64  `json:"median_peak_rss_mib"`
	MaxRSSMiB     float64  `json:"max_peak_rss_mib"`
	MBPerSecond   float64  `json:"mb_per_second"`
	// MedianPhases is each phase's median time, for commands that say.
	MedianPhases map[string]float64 `json:"median_phases,omitempty"`
}

type caseResult struct {
	Case      string              `json:"case"`
	Runs      int                 `json:"runs"`
	OldShards int                 `json:"old_shards"`
	NewShards int                 `json:"new_shards"`
	Bytes     int64               `json:"bytes"`
	Commands  map[string]*measure `json:"commands"`
	// Runs read per wall minute by each reading command (and made per
	// wall minute by gen), from its median.
	RunsPerMinute    map[string]float64 `json:"runs_per_minute,omitempty"`
	ReshardOverFloor float64            `json:"reshard_over_floor,omitempty"`
	ReshardOverCopy  float64            `json:"reshard_over_copy,omitempty"`
	FloorOverCopy    float64            `json:"floor_over_copy,omitempty"`
	ReshardOverDry   float64            `json:"reshard_over_dry_run,omitempty"`
	// The same ratios of CPU time (user + system): on a machine shared
	// with other work, wall time stretches with the load, CPU time much
	// less.
	CPUReshardOverFloor float64 `json:"cpu_reshard_over_floor,omitempty"`
	CPUReshardOverDry   float64 `json:"cpu_reshard_over_dry_run,omitempty"`
	// Issue 30's: the wall on every core over the wall on one, the CPU
	// under --memory 16MiB over the default budget's, and the reshard's
	// CPU per run.
	WallOverOneCore float64 `json:"wall_over_one_core,omitempty"`
	CPU16MiBOverDef float64 `json:"cpu_16mib_over_default,omitempty"`
	CPUMicrosPerRun float64 `json:"cpu_us_per_run,omitempty"`
	NoCgoPeakRSSMiB float64 `json:"nocgo_peak_rss_mib,omitempty"`
	CgoPeakRSSMiB   float64 `json:"cgo_peak_rss_mib,omitempty"`
	CPUNoCgoOverCgo float64 `json:"cpu_nocgo_over_cgo,omitempty"`
}

type machine struct {
	CPUs      int    `json:"nproc"`
	Pinned    bool   `json:"pinned_to_2_cores"`
	LoadStart string `json:"loadavg_start"`
	LoadEnd   string `json:"loadavg_end"`
	MemTotal  string `json:"mem_total"`
	Disk      string `json:"disk"`
	GoVersion string `json:"go_version"`
	Kernel    string `json:"kernel"`
	CPUModel  string `json:"cpu_model"`
	Date      string `json:"date"`
}

type result struct {
	Machine machine      `json:"machine"`
	Pairs   int          `json:"pairs"`
	Seed    int          `json:"seed"`
	Cases   []caseResult `json:"cases"`
	Gen     *genResult   `json:"gen,omitempty"`
	// Flatness is, for each case timed at more than one size, the
	// reshard's CPU a run at each size and the largest over the smallest.
	Flatness []flatResult `json:"flatness,omitempty"`
}

// flatResult is one case's reshard CPU a run across the sizes timed.
type flatResult struct {
	Case          string    `json:"case"`
	Runs          []int     `json:"runs"`
	CPUMicrosRun  []float64 `json:"cpu_us_per_run"`
	MaxOverMinRun float64   `json:"max_over_min"`
}

// flatness gathers each case's CPU a run over the sizes it was timed at.
func flatness(cases []caseResult) []flatResult {
	var out []flatResult
	at := map[string]int{}
	for _, c := range cases {
		if c.CPUMicrosPerRun == 0 {
			continue
		}
		i, ok := at[c.Case]
		if !ok {
			i = len(out)
			at[c.Case] = i
			out = append(out, flatResult{Case: c.Case})
		}
		out[i].Runs = append(out[i].Runs, c.Runs)
		out[i].CPUMicrosRun = append(out[i].CPUMicrosRun, c.CPUMicrosPerRun)
	}
	out = slices.DeleteFunc(out, func(f flatResult) bool { return len(f.Runs) < 2 })
	for i := range out {
		out[i].MaxOverMinRun = slices.Max(out[i].CPUMicrosRun) / slices.Min(out[i].CPUMicrosRun)
	}
	return out
}

// genResult is `fusee gen` timed from nothing to a closed directory.
type genResult struct {
	Runs          int      `json:"runs"`
	Shards        int      `json:"shards"`
	Gen           *measure `json:"gen"`
	RunsPerMinute float64  `json:"runs_per_minute"`
}

var (
	commandOrder = []string{"copy", "floor", "reshard", "dry-run", "reshard-1p", "reshard-16m", "reshard-nocgo"}
	readerOrder  = []string{"inspect", "verify", "dump"}
)

type options struct {
	runs           []int // the directories' sizes, each timed with every case
	pairs, seed    int
	cases, jsonOut string
	commands       []string // the subset of commandOrder to time
	src            string   // an existing directory for every case
	readers, gen   bool
}

func main() {
	runs := flag.String("runs", "100000", "comma-separated `LIST` of directory sizes in runs; every case is timed at each, alternating")
	pairs := flag.Int("pairs", 5, "rounds of every command (at least 5 for a median worth quoting)")
	cases := flag.String("cases", "8:3,8:16,7:12", "comma-separated old:new shard counts")
	seed := flag.Int("seed", 1, "gen seed")
	jsonOut := flag.String("json", "", "also write the JSON result to `FILE`")
	src := flag.String("src", "", "use the existing directory `DIR` (made with -runs runs) for every case instead of generating one")
	readers := flag.Bool("readers", true, "also time inspect, verify and dump --logical on each source directory")
	gen := flag.Bool("gen", false, "also time fusee gen of -runs runs into a fresh directory, every round")
	commands := flag.String("commands", strings.Join(commandOrder, ","), "comma-separated `LIST` of the commands to time (ratios need both of their commands)")
	flag.Parse()
	opt := options{pairs: *pairs, seed: *seed, cases: *cases, jsonOut: *jsonOut, src: *src, readers: *readers, gen: *gen}
	for _, c := range strings.Split(*commands, ",") {
		if !slices.Contains(commandOrder, c) {
			fmt.Fprintf(os.Stderr, "bench: -commands: %q is not one of %s\n", c, strings.Join(commandOrder, ","))
			os.Exit(2)
		}
	}
	for _, r := range strings.Split(*runs, ",") {
		n, err := strconv.Atoi(r)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bench: -runs: %q is not a count of runs\n", r)
			os.Exit(2)
		}
		opt.runs = append(opt.runs, n)
	}
	if *src != "" && len(opt.runs) != 1 {
		fmt.Fprintln(os.Stderr, "bench: -src is one directory: give -runs its single size")
		os.Exit(2)
	}
	// Timed in commandOrder's order whatever the list's, so that a round
	// alternates its commands as a full round does.
	for _, c := range commandOrder {
		if slices.Contains(strings.Split(*commands, ","), c) {
			opt.commands = append(opt.commands, c)
		}
	}
	if err := run(opt); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(opt options) error {
	pairs, seed := opt.pairs, opt.seed
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return fmt.Errorf("needs /usr/bin/time (GNU time, for peak RSS): %w", err)
	}
	cache := os.Getenv("FUSEE_BENCH_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		cache = filepath.Join(home, ".cache", "fusee-bench")
	}
	bin := filepath.Join(cache, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	fusee, floorBin := filepath.Join(bin, "fusee"), filepath.Join(bin, "reshard.test")
	nocgo := filepath.Join(bin, "fusee-nocgo")
	if err := sh("go", "build", "-o", fusee, "./cmd/fusee"); err != nil {
		return fmt.Errorf("building fusee (run from the repository's root): %w", err)
	}
	build := exec.Command("go", "build", "-o", nocgo, "./cmd/fusee")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building fusee with CGO_ENABLED=0: %w", err)
	}
	if err := sh("go", "test", "-c", "-o", floorBin, "./reshard"); err != nil {
		return fmt.Errorf("building the rewrite floor: %w", err)
	}
	res := result{Machine: describe(cache), Pairs: pairs, Seed: seed}
	pin = runtime.NumCPU() > 2
	if pin {
		if _, err := exec.LookPath("taskset"); err != nil {
			return fmt.Errorf("needs taskset to pin the commands to two of the %d cores: %w", runtime.NumCPU(), err)
		}
	}
	res.Machine.Pinned = pin
	// Every (size, case) is a cell, prepared first; then each round times
	// every cell's commands in turn, so that a slow spell of the machine
	// hits every size and case alike (the cost a run is compared across
	// sizes: issue 30's flatness).
	type cell struct {
		cr    caseResult
		src   string
		names []string
	}
	var cells []*cell
	readSrc := map[string]bool{}
	for _, runs := range opt.runs {
		for _, c := range strings.Split(opt.cases, ",") {
			oldN, newN, ok := strings.Cut(c, ":")
			o, err1 := strconv.Atoi(oldN)
			n, err2 := strconv.Atoi(newN)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("-cases %q: want old:new pairs such as 8:3", c)
			}
			src := filepath.Join(cache, fmt.Sprintf("src-%d-shards-%d-runs-seed-%d", o, runs, seed))
			if opt.src != "" {
				src = opt.src
				if got, err := shardCount(src); err != nil {
					return err
				} else if got != o {
					return fmt.Errorf("-cases %q: %s has %d shards, not %d", c, src, got, o)
				}
			} else if _, err := os.Stat(src); err != nil {
				fmt.Fprintf(os.Stderr, "generating %s\n", src)
				if err := sh(fusee, "gen", src, "--shards", strconv.Itoa(o), "--runs", strconv.Itoa(runs), "--seed", strconv.Itoa(seed)); err != nil {
					return err
				}
			}
			size, err := dirSize(src)
			if err != nil {
				return err
			}
			cl := &cell{src: src, cr: caseResult{Case: fmt.Sprintf("%d->%d", o, n), Runs: runs, OldShards: o, NewShards: n, Bytes: size,
				Commands: map[string]*measure{}}}
			// The reading commands depend only on the source directory:
			// they are timed with the first case that reads it.
			cl.names = slices.Clone(opt.commands)
			if opt.readers && !readSrc[src] {
				readSrc[src] = true
				cl.names = append(cl.names, readerOrder...)
				cl.cr.RunsPerMinute = map[string]float64{}
			}
			for _, name := range cl.names {
				cl.cr.Commands[name] = &measure{}
			}
			cells = append(cells, cl)
		}
	}
	work, copyDst, floorOut := filepath.Join(cache, "work"), filepath.Join(cache, "copy"), filepath.Join(cache, "floor")
	for round := range pairs {
		for _, cl := range cells {
			cr, src, n := &cl.cr, cl.src, cl.cr.NewShards
			cmds := map[string][]string{
				"copy":          {"sh", "-c", `cp -a "$1" "$2" && sync`, "sh", src, copyDst},
				"floor":         {floorBin, "-test.run", "^$", "-test.bench", "^BenchmarkRewriteFloor$", "-test.benchtime", "1x"},
				"reshard":       {fusee, "reshard", work, strconv.Itoa(n), "--json"},
				"dry-run":       {fusee, "reshard", work, strconv.Itoa(n), "--dry-run", "--scratch", cache},
				"reshard-1p":    {"env", "GOMAXPROCS=1", fusee, "reshard", work, strconv.Itoa(n), "--json"},
				"reshard-16m":   {fusee, "reshard", work, strconv.Itoa(n), "--memory", "16MiB", "--json"},
				"reshard-nocgo": {nocgo, "reshard", work, strconv.Itoa(n), "--json"},
				"inspect":       {fusee, "inspect", src},
				"verify":        {fusee, "verify", src, "--scratch", cache},
				"dump":          {fusee, "dump", src, "--logical", "--scratch", cache},
			}
			env := []string{"FUSEE_BENCH_DIR=" + src, "FUSEE_BENCH_OUT=" + floorOut}
			for _, name := range cl.names {
				for _, d := range []string{copyDst, floorOut} {
					if err := os.RemoveAll(d); err != nil {
						return err
					}
				}
				if strings.HasPrefix(name, "reshard") || name == "dry-run" {
					if err := fresh(src, work); err != nil {
						return err
					}
				}
				// Untimed: what the last command and the copy left to
				// write back is written now, not while this one runs (an
				// operator's directory was synced long before).
				if err := sh("sync"); err != nil {
					return err
				}
				s, err := timed(cmds[name], env)
				if err != nil {
					return fmt.Errorf("%s at %d runs, round %d, %s: %w", cr.Case, cr.Runs, round+1, name, err)
				}
				cr.Commands[name].Samples = append(cr.Commands[name].Samples, s)
				fmt.Fprintf(os.Stderr, "%s %d runs round %d %-13s %7.3f s (CPU %6.2f s) %6.1f MiB %v\n", cr.Case, cr.Runs, round+1, name, s.Seconds, s.CPUSeconds, float64(s.RSSKiB)/1024, s.Phases)
			}
		}
	}
	for _, d := range []string{work, copyDst, floorOut} {
		_ = os.RemoveAll(d)
	}
	for _, cl := range cells {
		cr, runs := cl.cr, cl.cr.Runs
		for _, m := range cr.Commands {
			m.summarize(cr.Bytes)
		}
		cm := cr.Commands
		wall := func(a, b string) float64 { return ratio(cm, a, b, false) }
		cpu := func(a, b string) float64 { return ratio(cm, a, b, true) }
		cr.ReshardOverFloor, cr.ReshardOverCopy = wall("reshard", "floor"), wall("reshard", "copy")
		cr.FloorOverCopy, cr.ReshardOverDry = wall("floor", "copy"), wall("reshard", "dry-run")
		cr.CPUReshardOverFloor, cr.CPUReshardOverDry = cpu("reshard", "floor"), cpu("reshard", "dry-run")
		cr.WallOverOneCore, cr.CPU16MiBOverDef = wall("reshard", "reshard-1p"), cpu("reshard-16m", "reshard")
		cr.CPUNoCgoOverCgo = cpu("reshard-nocgo", "reshard")
		if m := cm["reshard"]; m != nil {
			cr.CPUMicrosPerRun, cr.CgoPeakRSSMiB = m.MedianCPU/float64(runs)*1e6, m.MaxRSSMiB
		}
		if m := cm["reshard-nocgo"]; m != nil {
			cr.NoCgoPeakRSSMiB = m.MaxRSSMiB
		}
		if cr.RunsPerMinute != nil {
			for _, name := range readerOrder {
				cr.RunsPerMinute[name] = float64(runs) / cm[name].MedianSeconds * 60
			}
		}
		res.Cases = append(res.Cases, cr)
	}
	res.Flatness = flatness(res.Cases)
	if opt.gen {
		g, err := timeGen(fusee, cache, opt)
		if err != nil {
			return err
		}
		res.Gen = g
	}
	res.Machine.LoadEnd = loadavg()
	printTable(res)
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	os.Stdout.Write(data)
	if opt.jsonOut != "" {
		return os.WriteFile(opt.jsonOut, data, 0o644)
	}
	return nil
}

func (m *measure) summarize(size int64) {
	secs := make([]float64, len(m.Samples))
	cpu := make([]float64, len(m.Samples))
	rss := make([]float64, len(m.Samples))
	for i, s := range m.Samples {
		secs[i], cpu[i], rss[i] = s.Seconds, s.CPUSeconds, float64(s.RSSKiB)/1024
	}
	m.MedianSeconds, m.MedianCPU, m.MedianRSSMiB, m.MaxRSSMiB = median(secs), median(cpu), median(rss), slices.Max(rss)
	m.MBPerSecond = float64(size) / 1e6 / m.MedianSeconds
	for _, s := range m.Samples {
		for name := range s.Phases {
			if m.MedianPhases == nil {
				m.MedianPhases = map[string]float64{}
			}
			var v []float64
			for _, t := range m.Samples {
				v = append(v, t.Phases[name])
			}
			m.MedianPhases[name] = median(v)
		}
	}
}

// ratio is command a's median over command b's (CPU or wall), or 0 when
// either was not timed (-commands).
func ratio(cm map[string]*measure, a, b string, cpu bool) float64 {
	ma, mb := cm[a], cm[b]
	if ma == nil || mb == nil {
		return 0
	}
	if cpu {
		return ma.MedianCPU / mb.MedianCPU
	}
	return ma.MedianSeconds / mb.MedianSeconds
}

// times prints a ratio, or n/a for one that was not measured.
func times(r float64) string {
	if r == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", r)
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printTable(res result) {
	fmt.Printf("%-6s %8s %8s %-13s %9s %8s %8s %9s\n", "case", "runs", "MB", "command", "median s", "MB/s", "CPU s", "RSS MiB")
	for _, c := range res.Cases {
		for _, name := range commandOrder {
			m, ok := c.Commands[name]
			if !ok {
				continue
			}
			fmt.Printf("%-6s %8d %8.1f %-13s %9.3f %8.1f %8.2f %9.1f\n", c.Case, c.Runs, float64(c.Bytes)/1e6, name,
				m.MedianSeconds, m.MBPerSecond, m.MedianCPU, m.MaxRSSMiB)
		}
		fmt.Printf("%-6s wall: reshard/floor %s  reshard/copy %s  floor/copy %s  reshard/dry-run %s\n",
			c.Case, times(c.ReshardOverFloor), times(c.ReshardOverCopy), times(c.FloorOverCopy), times(c.ReshardOverDry))
		fmt.Printf("%-6s CPU:  reshard/floor %s  reshard/dry-run %s\n", c.Case, times(c.CPUReshardOverFloor), times(c.CPUReshardOverDry))
		fmt.Printf("%-6s wall every core/one core %s  CPU --memory 16MiB/default %s  CPU %.1f us/run  RSS cgo %.0f MiB, CGO_ENABLED=0 %.0f MiB (CPU %s)\n",
			c.Case, times(c.WallOverOneCore), times(c.CPU16MiBOverDef), c.CPUMicrosPerRun, c.CgoPeakRSSMiB, c.NoCgoPeakRSSMiB, times(c.CPUNoCgoOverCgo))
		for _, name := range readerOrder {
			if m, ok := c.Commands[name]; ok {
				fmt.Printf("%-6s %8d %8.1f %-13s %9.3f %8.1f %8.2f %9.1f  %.2fM runs/min\n", c.Case, c.Runs, float64(c.Bytes)/1e6, name,
					m.MedianSeconds, m.MBPerSecond, m.MedianCPU, m.MaxRSSMiB, c.RunsPerMinute[name]/1e6)
			}
		}
	}
	for _, f := range res.Flatness {
		var at []string
		for i, r := range f.Runs {
			at = append(at, fmt.Sprintf("%d: %.2f", r, f.CPUMicrosRun[i]))
		}
		fmt.Printf("%-6s reshard CPU us a run by size (%s): largest/smallest %.2fx\n", f.Case, strings.Join(at, ", "), f.MaxOverMinRun)
	}
	if g := res.Gen; g != nil {
		fmt.Printf("%-6s %8d %8s %-13s %9.3f %8s %8.2f %9.1f  %.2fM runs/min (%d shards)\n", "gen", g.Runs, "", "gen",
			g.Gen.MedianSeconds, "", g.Gen.MedianCPU, g.Gen.MaxRSSMiB, g.RunsPerMinute/1e6, g.Shards)
	}
}

// timeGen times `fusee gen` of the first -runs size, with the first case's old
// shard count, into a fresh directory every round.
func timeGen(fusee, cache string, opt options) (*genResult, error) {
	oldN, _, _ := strings.Cut(strings.Split(opt.cases, ",")[0], ":")
	shards, err := strconv.Atoi(oldN)
	if err != nil {
		return nil, fmt.Errorf("-cases %q: want old:new pairs such as 8:3", opt.cases)
	}
	g := &genResult{Runs: opt.runs[0], Shards: shards, Gen: &measure{}}
	dst := filepath.Join(cache, "gen-work")
	argv := []string{fusee, "gen", dst, "--shards", oldN, "--runs", strconv.Itoa(opt.runs[0]), "--seed", strconv.Itoa(opt.seed)}
	for round := range opt.pairs {
		if err := os.RemoveAll(dst); err != nil {
			return nil, err
		}
		s, err := timed(argv, nil)
		if err != nil {
			return nil, fmt.Errorf("gen, round %d: %w", round+1, err)
		}
		g.Gen.Samples = append(g.Gen.Samples, s)
		fmt.Fprintf(os.Stderr, "gen round %d %7.3f s (CPU %6.2f s) %6.1f MiB\n", round+1, s.Seconds, s.CPUSeconds, float64(s.RSSKiB)/1024)
	}
	size, err := dirSize(dst)
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dst)
	g.Gen.summarize(size)
	g.RunsPerMinute = float64(opt.runs[0]) / g.Gen.MedianSeconds * 60
	return g, nil
}

// shardCount reads the shard count from dir's fusee.meta.
func shardCount(dir string) (int, error) {
	m, err := meta.Read(vfs.Default, dir)
	if err != nil {
		return 0, fmt.Errorf("-src: %w", err)
	}
	return m.Shards, nil
}

var (
	maxRSS  = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)
	cpuTime = regexp.MustCompile(`(User|System) time \(seconds\): ([0-9.]+)`)
)

// timed runs argv under /usr/bin/time -v and returns its wall time and
// peak RSS. The command's own output is discarded unless it fails.
func timed(argv, env []string) (sample, error) {
	if pin {
		argv = append([]string{"taskset", "-c", "0,1"}, argv...)
	}
	cmd := exec.Command("/usr/bin/time", append([]string{"-v"}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	el := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%v: %s", err, tail(stderr.String()))
	}
	m := maxRSS.FindStringSubmatch(stderr.String())
	if m == nil {
		return sample{}, fmt.Errorf("no peak RSS in /usr/bin/time's output: %s", tail(stderr.String()))
	}
	kib, _ := strconv.ParseInt(m[1], 10, 64)
	var cpu float64
	for _, c := range cpuTime.FindAllStringSubmatch(stderr.String(), -1) {
		v, _ := strconv.ParseFloat(c[2], 64)
		cpu += v
	}
	s := sample{Seconds: el.Seconds(), CPUSeconds: cpu, RSSKiB: kib}
	if slices.Contains(argv, "--json") {
		var rep struct {
			Phases []struct {
				Name    string  `json:"name"`
				Seconds float64 `json:"seconds"`
			} `json:"phases"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			return sample{}, fmt.Errorf("reading the report of %v: %w", argv, err)
		}
		s.Phases = map[string]float64{}
		for _, p := range rep.Phases {
			s.Phases[p.Name] = p.Seconds
		}
	}
	return s, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// fresh makes dst a copy of src (not timed).
func fresh(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return sh("cp", "-a", src, dst)
}

func sh(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// pin says whether commands run pinned to two cores (taskset -c 0,1).
var pin bool

// loadavg is the machine's load average (1, 5 and 15 minutes).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// describe says what machine the figures come from.
func describe(cache string) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339), LoadStart: loadavg()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("df", "-hT", cache).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		m.Disk = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
	}
	return m
}
