package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testProgress is a progress display in mode on a buffer, with a fake
// clock and env's colour settings.
func testProgress(mode string, env []string) (*progress, *bytes.Buffer, *fakeClock) {
	var out, errb bytes.Buffer
	ios := newIO(nil, &out, &errb, env)
	clk := newFakeClock()
	ios.clock = clk.now
	ios.ErrWidth = 80
	return ios.startProgress("verify", progressMode(mode), false), &errb, clk
}

var (
	escapeRE = regexp.MustCompile("\x1b")
	csiRE    = regexp.MustCompile("\x1b\\[[0-9;?]*[a-zA-Z]")
)

// Plain: a line every 5 s while a phase runs (none before), rate and ETA
// from the fake clock, and a last line when the phase reaches its total;
// no escape codes.
func TestProgressPlainEveryFewSeconds(t *testing.T) {
	p, errb, clk := testProgress(progressPlain, []string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"})
	for i := int64(1); i <= 12; i++ { // 100 runs a second for 12 s, of 1200
		clk.advance(time.Second)
		p.set(progressState{phase: "check", unit: "runs", done: 100 * i, total: 1200})
	}
	p.end()
	p.end() // twice: nothing more
	// The phase began at the first update (100 runs): lines 5 and 10 s later.
	want := "verify: check: 600/1200 runs, 50%, 120 runs/s, eta 5s\n" +
		"verify: check: 1100/1200 runs, 91%, 110 runs/s, eta <1s\n" +
		"verify: check: 1200/1200 runs done in 11.0s (109 runs/s)\n"
	if got := errb.String(); got != want {
		t.Errorf("plain lines:\n%s\nwant:\n%s", got, want)
	}
	if escapeRE.MatchString(errb.String()) {
		t.Errorf("escape codes in plain lines: %q", errb.String())
	}
}

// Plain, phase by phase: a new phase ends the one before with its last
// line, a phase without a total says "in", and one stopped short says so.
func TestProgressPlainPhases(t *testing.T) {
	p, errb, clk := testProgress(progressPlain, nil)
	p.set(progressState{phase: "plan", unit: "shards", done: 1, total: 3})
	clk.advance(2 * time.Second)
	p.set(progressState{phase: "plan", unit: "shards", done: 3, total: 3})
	p.set(progressState{phase: "plan", unit: "shards", done: 3, total: 3}) // repeated: nothing
	p.set(progressState{phase: "run", unit: "batches", done: 10, note: "virtual 1m0s"})
	clk.advance(500 * time.Millisecond)
	p.set(progressState{phase: "run", unit: "batches", done: 20, note: "virtual 2m0s"})
	p.set(progressState{phase: "write", unit: "shards", done: 1, total: 5})
	clk.advance(time.Second)
	p.end()
	want := "verify: plan: 3/3 shards done in 2.00s (1.5 shards/s)\n" +
		"verify: run: 20 batches in 0.50s (40 batches/s), virtual 2m0s\n" +
		"verify: write: 1/5 shards stopped after 1.00s (1 shards/s)\n"
	if got := errb.String(); got != want {
		t.Errorf("plain lines:\n%s\nwant:\n%s", got, want)
	}
}

func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "..", "docs", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validateJSONLines checks that every line of s is a JSON object valid
// against sch, and returns them decoded.
func validateJSONLines(t *testing.T, sch *jsonschema.Schema, s string) []progressEvent {
	t.Helper()
	var evs []progressEvent
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.Text()))
		if err != nil {
			t.Fatalf("not JSON: %v: %q", err, sc.Text())
		}
		if err := sch.Validate(doc); err != nil {
			t.Fatalf("does not match docs/schema/progress.json: %v\n%s", err, sc.Text())
		}
		var e progressEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs
}

// JSON: at most one object a second while a phase runs, a final one at
// its end; every line valid against docs/schema/progress.json; total and
// eta null when not known.
func TestProgressJSONLines(t *testing.T) {
	sch := compileSchema(t, "progress.json")
	p, errb, clk := testProgress(progressJSON, nil)
	for i := int64(1); i <= 10; i++ { // every 300 ms
		p.set(progressState{phase: "check", unit: "runs", done: 10 * i, total: 100})
		clk.advance(300 * time.Millisecond)
	}
	p.set(progressState{phase: "run", unit: "batches", done: 0})
	clk.advance(2 * time.Second)
	p.set(progressState{phase: "run", unit: "batches", done: 7, note: "n"})
	p.end()
	evs := validateJSONLines(t, sch, errb.String())
	var got []string
	for _, e := range evs {
		total, eta := "null", "null"
		if e.Total != nil {
			total = fmt.Sprint(*e.Total)
		}
		if e.ETA != nil {
			eta = fmt.Sprint(*e.ETA)
		}
		got = append(got, fmt.Sprintf("%s %d/%s %.1fs rate %g eta %s final %v %q", e.Phase, e.Done, total, e.Elapsed, e.Rate, eta, e.Final, e.Note))
	}
	want := []string{
		"check 50/100 1.2s rate 41.667 eta 1.2 final false \"\"", // the first update due 1 s after the phase began
		"check 90/100 2.4s rate 37.5 eta 0.267 final false \"\"",
		"check 100/100 2.7s rate 37.037 eta 0 final true \"\"",
		"run 7/null 2.0s rate 3.5 eta null final false \"n\"",
		"run 7/null 2.0s rate 3.5 eta null final true \"n\"",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("json lines:\n%s\nwant:\n%s\nraw:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), errb.String())
	}
}

// Bar: drawn at once, redrawn at most every 100 ms, each time from the
// line's start and erasing what is left of the last; never wider than the
// width; cleared at the end. Under NO_COLOR the bar keeps its cursor
// movement and loses its colours.
func TestProgressBarDrawsAndClears(t *testing.T) {
	for _, env := range [][]string{{"CLICOLOR_FORCE=1", "TERM=xterm-256color"}, {"CLICOLOR_FORCE=1", "TERM=xterm-256color", "NO_COLOR=1"}} {
		p, errb, clk := testProgress(progressBar, env)
		p.set(progressState{phase: "rewrite", unit: "shards", done: 1, total: 8})
		clk.advance(50 * time.Millisecond)
		p.set(progressState{phase: "rewrite", unit: "shards", done: 2, total: 8}) // not due
		clk.advance(60 * time.Millisecond)
		p.set(progressState{phase: "rewrite", unit: "shards", done: 3, total: 8})
		p.end()
		out := errb.String()
		draws := strings.Split(strings.TrimSuffix(out, "\r\x1b[K"), "\r")[1:]
		if !strings.HasSuffix(out, "\x1b[K\r\x1b[K") || len(draws) != 2 {
			t.Fatalf("env %v: want two draws and a clear, got %q", env, out)
		}
		for i, d := range draws {
			if !strings.HasSuffix(d, "\x1b[K") {
				t.Errorf("draw %d does not erase the rest of the line: %q", i, d)
			}
			text := csiRE.ReplaceAllString(d, "")
			if w := utf8.RuneCountInString(text); w > 79 {
				t.Errorf("draw %d is %d columns wide, over 79: %q", i, w, text)
			}
			if !strings.HasPrefix(text, "verify rewrite █") {
				t.Errorf("draw %d: %q", i, text)
			}
		}
		last := csiRE.ReplaceAllString(draws[1], "")
		if !strings.Contains(last, " 3/8 shards  27.3 shards/s  eta <1s") {
			t.Errorf("last draw lacks count, rate or eta: %q", last)
		}
		colour := regexp.MustCompile("\x1b\\[[0-9;]*m").MatchString(out)
		if noColor(env) == colour {
			t.Errorf("env %v: colour escapes present = %v: %q", env, colour, out)
		}
	}
}

// A warning printed while a bar is up goes on a line of its own: the bar
// is cleared first and drawn again by the next update.
func TestProgressBarMakesRoomForWarnings(t *testing.T) {
	p, errb, clk := testProgress(progressBar, nil)
	p.set(progressState{phase: "check", unit: "runs", done: 1, total: 8})
	p.ios.warnf("careful")
	clk.advance(time.Millisecond)
	p.set(progressState{phase: "check", unit: "runs", done: 2, total: 8})
	p.end()
	if !strings.Contains(errb.String(), "\r\x1b[Kwarning: careful\n\r") {
		t.Errorf("warning not on a line of its own: %q", errb.String())
	}
}

// none (and a nil display) writes nothing and gives the engines no
// callback at all.
func TestProgressNoneWritesNothing(t *testing.T) {
	p, errb, _ := testProgress(progressNone, nil)
	if p.phaseFunc("runs") != nil || simProgress(p, nil) != nil {
		t.Error("none gives the engines a callback")
	}
	p.set(progressState{phase: "check", unit: "runs", done: 5, total: 5})
	p.end()
	var nilp *progress
	nilp.set(progressState{phase: "check"})
	nilp.end()
	if errb.Len() != 0 {
		t.Errorf("none wrote %q", errb.String())
	}
}

// Through the commands: stdout is the same byte for byte in every mode;
// stderr has plain lines when piped (auto), JSON lines valid against the
// schema with --progress=json, nothing with none or -q, and a bar drawn
// and cleared with --progress=bar.
func TestProgressModesThroughCommands(t *testing.T) {
	sch := compileSchema(t, "progress.json")
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), "test", args, strings.NewReader(""), &out, &errb, nil); code != 0 {
			t.Fatalf("fusee %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		return out.String(), errb.String()
	}
	_, genErr := run("gen", data, "--shards", "3", "--runs", "1200", "--seed", "3")
	// A line every 5 s (a slow machine, -race), then the last one.
	if !regexp.MustCompile(`^(gen: generate: [0-9]+/1200 runs, [0-9]+%, .*\n)*gen: generate: 1200/1200 runs done in [0-9.]+s( \([0-9.k]+ runs/s\))?, virtual \S+\n(gen: census: .*\n)*gen: census: 3/3 shards done in [0-9.]+s.*\n$`).MatchString(genErr) {
		t.Errorf("gen piped: stderr %q", genErr)
	}
	for _, cmd := range [][]string{{"verify", data}, {"dump", data}, {"sim", "drive", data, "--json"}} {
		name := strings.Join(cmd[:len(cmd)-1], " ")
		if cmd[0] == "sim" {
			name = "sim drive"
		}
		plainOut, plainErr := run(cmd...)
		if plainErr == "" || escapeRE.MatchString(plainErr) {
			t.Errorf("%s piped: stderr %q, want plain lines", name, plainErr)
		}
		for _, l := range strings.Split(strings.TrimSuffix(plainErr, "\n"), "\n") {
			if !strings.HasPrefix(l, name+": ") {
				t.Errorf("%s piped: stderr line %q", name, l)
			}
		}
		if cmd[0] == "sim" {
			continue // drive changes the directory: its stdout differs from run to run
		}
		for _, mode := range []string{"none", "json", "bar", "plain"} {
			out, errs := run(append(cmd, "--progress="+mode)...)
			if out != plainOut {
				t.Errorf("%s --progress=%s: stdout differs from the default's", name, mode)
			}
			switch mode {
			case "none":
				if errs != "" {
					t.Errorf("%s --progress=none: stderr %q", name, errs)
				}
			case "json":
				evs := validateJSONLines(t, sch, errs)
				if len(evs) == 0 || !evs[len(evs)-1].Final || evs[len(evs)-1].Command != name {
					t.Errorf("%s --progress=json: %q", name, errs)
				}
			case "bar":
				if !strings.HasPrefix(errs, "\r") || !strings.HasSuffix(errs, "\r\x1b[K") {
					t.Errorf("%s --progress=bar: not drawn and cleared: %q", name, errs)
				}
			}
		}
	}
	if _, errs := run("verify", data, "-q", "--progress=json"); errs != "" {
		t.Errorf("verify -q --progress=json: stderr %q, want nothing (-q wins)", errs)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), "test", []string{"verify", data}, strings.NewReader(""), &out, &errb, []string{"FUSEE_PROGRESS=none"}); code != 0 || errb.Len() != 0 {
		t.Errorf("FUSEE_PROGRESS=none: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := Run(context.Background(), "test", []string{"verify", data, "--progress=fancy"}, strings.NewReader(""), &out, &errb, nil); code != ExitUsage ||
		!strings.Contains(errb.String(), `invalid argument "fancy" for "--progress" flag: want one of auto, bar, plain, json, none`) {
		t.Errorf("--progress=fancy: exit %d, stderr %q", code, errb.String())
	}
}

// Ctrl-C and a closed stdout in the middle of a bar: the line is cleared
// before the message that follows (Run's net under every way out).
func TestProgressBarClearedWhenInterrupted(t *testing.T) {
	dir := t.TempDir()
	for _, cause := range []error{context.Canceled, errOutputClosed} {
		ctx, cancel := context.WithCancelCause(context.Background())
		errw := &cancelOnWrite{trigger: "gen generate", cancel: func() { cancel(cause) }}
		var out bytes.Buffer
		code := Run(ctx, "test", []string{"gen", filepath.Join(dir, fmt.Sprint(cause)), "--shards", "2", "--runs", "20000", "--progress=bar"}, strings.NewReader(""), &out, errw, nil)
		cancel(nil)
		s := errw.buf.String()
		want := ExitCancelled
		if cause == errOutputClosed {
			want = ExitOutputClosed
		}
		if code != want {
			t.Fatalf("%v: exit %d, want %d: %q", cause, code, want, s)
		}
		i := strings.LastIndex(s, "\r\x1b[K")
		if i < 0 || !strings.HasPrefix(s[i:], "\r\x1b[Kfusee: ") || strings.Count(s[i:], "\n") != 1 {
			t.Errorf("%v: the bar is not cleared before the message: %q", cause, s)
		}
	}
}

// Rates and times read as a person would write them, never in exponent
// notation, at every magnitude.
func TestProgressNumbersForPeople(t *testing.T) {
	for r, want := range map[float64]string{0.5: "0.5", 2.25: "2.25", 99.96: "100", 806.4: "806", 9999.4: "9999", 12345: "12.3k",
		99960: "100.0k", 350000: "350k", 999999: "1000k", 1.25e6: "1.25M", 1e9: "1000.00M"} {
		if got := humanRate(r); got != want {
			t.Errorf("humanRate(%g) = %q, want %q", r, got, want)
		}
	}
	for d, want := range map[time.Duration]string{420 * time.Millisecond: "0.42s", 12100 * time.Millisecond: "12.1s", 192 * time.Second: "3m12s"} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%s) = %q, want %q", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{400 * time.Millisecond: "<1s", 4400 * time.Millisecond: "4s", 151 * time.Second: "2m30s", 65*time.Minute + 20*time.Second: "1h5m"} {
		if got := etaString(d); got != want {
			t.Errorf("etaString(%s) = %q, want %q", d, got, want)
		}
	}
}
