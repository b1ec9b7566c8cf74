package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/spf13/cobra"
)

// Progress: the one way gen, sim drive, verify, dump, reshard and upgrade
// show how far they have got, always on standard error (standard output
// carries only reports and data, byte for byte the same with or without
// it). --progress picks the form:
//
//	auto   bar on a terminal (not TERM=dumb), plain otherwise (the default)
//	bar    one line redrawn in place: what is done, a bar, count/total,
//	       rate and ETA; cleared when the command ends
//	plain  a line every plainEvery, and a last line when each phase ends
//	json   one JSON object per line (docs/schema/progress.json), at most
//	       every jsonEvery, and a last one (final) when each phase ends
//	none   nothing (what -q/--quiet asks for)
//
// The engines call back from their hot paths (every thousand runs, each
// checkpoint, each shard); an update that is not due costs a clock read
// under a mutex. The renderer is ours, on lipgloss, rather than a progress
// bar library: the same state must also come out as plain lines and JSON
// lines, with a fake clock in tests, and the terminal must stay ours for
// Ctrl-C and SIGPIPE (see Run), which the bar libraries that own the
// screen (bubbletea's) do not allow.

// Modes of --progress.
const (
	progressAuto  = "auto"
	progressBar   = "bar"
	progressPlain = "plain"
	progressJSON  = "json"
	progressNone  = "none"
)

var progressModes = []string{progressAuto, progressBar, progressPlain, progressJSON, progressNone}

// How often each form writes while a phase runs.
const (
	barEvery   = 100 * time.Millisecond
	plainEvery = 5 * time.Second
	jsonEvery  = time.Second
)

// progressMode is --progress's value; a value not in progressModes is
// refused when parsed (a usage error, exit 2).
type progressMode string

func (m *progressMode) String() string { return string(*m) }
func (m *progressMode) Type() string   { return "MODE" }
func (m *progressMode) Set(s string) error {
	for _, v := range progressModes {
		if s == v {
			*m = progressMode(s)
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(progressModes, ", "))
}

// addProgressFlag adds --progress to cmd.
func addProgressFlag(cmd *cobra.Command, mode *progressMode) {
	*mode = progressAuto
	cmd.Flags().Var(mode, "progress", "progress on stderr: auto (a bar on a terminal, else a line every few seconds), bar, plain, json (JSON lines) or none; -q means none")
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions(progressModes, cobra.ShellCompDirectiveNoFileComp))
}

// progress is one command's progress display. Its methods may be called
// from any goroutine; a nil *progress shows nothing.
type progress struct {
	mu    sync.Mutex
	mode  string    // bar, plain, json or none (auto resolved)
	cmd   string    // the command, as plain lines and JSON name it
	text  io.Writer // standard error, styled for its colour profile
	raw   io.Writer // standard error as is: cursor movement survives NO_COLOR
	now   func() time.Time
	width int // columns a bar line may use
	ios   *IO

	cur   progressState
	start time.Time // when the current phase began
	last  time.Time // when the current phase last wrote
	ended bool      // the current phase has written its last line
	drawn bool      // a bar line is on the screen
}

// progressState is what is being done and how far it has got.
type progressState struct {
	phase       string
	unit        string // what done and total count: runs, shards, batches
	done, total int64  // total 0: not known
	note        string // more, for people: "virtual 3h20m"
}

// startProgress makes cmd's progress display in the given mode (quiet
// wins: none) and makes it the one Run clears on the way out.
func (io *IO) startProgress(cmd string, mode progressMode, quiet bool) *progress {
	m := string(mode)
	switch {
	case quiet:
		m = progressNone
	case m == progressAuto && io.ErrTTY && !io.dumbTerm:
		m = progressBar
	case m == progressAuto:
		m = progressPlain
	}
	width := io.ErrWidth
	if width <= 0 {
		width = 80
	}
	p := &progress{mode: m, cmd: cmd, text: io.Err, raw: io.errRaw, now: io.clock, width: width, ios: io}
	if p.raw == nil {
		p.raw = io.Err
	}
	if p.now == nil {
		p.now = time.Now
	}
	io.active = p
	return p
}

// phaseUnits are the units of the phases that count something other than
// their command's unit: verify's reference join goes a shard at a time.
var phaseUnits = map[string]string{"join": "shards"}

// phaseFunc is the callback reshard and check take (phase, done, total),
// counting unit (or the phase's own, phaseUnits).
func (p *progress) phaseFunc(unit string) func(phase string, done, total int64) {
	if p == nil || p.mode == progressNone {
		return nil
	}
	return func(phase string, done, total int64) {
		u := unit
		if pu, ok := phaseUnits[phase]; ok {
			u = pu
		}
		p.set(progressState{phase: phase, unit: u, done: done, total: total})
	}
}

// set records s and writes it if its form is due: a new phase ends the
// one before; reaching total ends the phase.
func (p *progress) set(s progressState) {
	if p == nil || p.mode == progressNone {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if s.phase != p.cur.phase || p.start.IsZero() {
		p.endPhase(now, false)
		p.start, p.last, p.ended = now, now, false
		if p.mode == progressBar {
			p.last = time.Time{} // draw a new phase at once
		}
	} else if p.ended {
		return // a phase that reached its total has said so
	}
	if s.total > 0 && s.done > s.total {
		s.total = s.done
	}
	p.cur, p.ended = s, false
	if s.total > 0 && s.done == s.total {
		p.endPhase(now, true)
		return
	}
	every := map[string]time.Duration{progressBar: barEvery, progressPlain: plainEvery, progressJSON: jsonEvery}[p.mode]
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.write(now, false)
}

// endPhase writes the current phase's last line (plain, json), or draws
// a bar at its last state (draw), which stays up for the next phase or
// until end.
func (p *progress) endPhase(now time.Time, draw bool) {
	if p.cur.phase == "" || p.ended {
		return
	}
	p.ended = true
	if p.mode != progressBar {
		p.write(now, true)
	} else if draw {
		p.write(now, false)
	}
}

// end ends the display: the last phase's last line, and a bar cleared
// from the screen (the report or error that follows starts on a clean
// line). It is safe to call more than once.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != progressNone {
		p.endPhase(p.now(), false)
	}
	p.clearLocked()
	if p.ios != nil && p.ios.active == p {
		p.ios.active = nil
	}
}

// clear takes a bar off the screen so that another line can be written
// to standard error; the next update draws it again.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
	p.last = time.Time{}
}

func (p *progress) clearLocked() {
	if p.drawn {
		_, _ = io.WriteString(p.raw, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *progress) write(now time.Time, final bool) {
	switch p.mode {
	case progressBar:
		_, _ = io.WriteString(p.raw, "\r")
		fmt.Fprint(p.text, p.barLine(now)) // p.text applies the colour profile
		_, _ = io.WriteString(p.raw, "\x1b[K")
		p.drawn = true
	case progressPlain:
		fmt.Fprintln(p.text, p.plainLine(now, final))
	case progressJSON:
		b, _ := json.Marshal(p.event(now, final))
		fmt.Fprintf(p.text, "%s\n", b)
	}
}

// rate is done per second since the phase began (0 before any time has
// passed), and eta the time left at that rate (-1: not known).
func (p *progress) rate(now time.Time) (rate float64, eta time.Duration) {
	el := now.Sub(p.start).Seconds()
	if el <= 0 || p.cur.done <= 0 {
		return 0, -1
	}
	rate = float64(p.cur.done) / el
	if p.cur.total <= 0 {
		return rate, -1
	}
	return rate, time.Duration(float64(p.cur.total-p.cur.done) / rate * float64(time.Second))
}

// count is "1200/5000 runs" or, without a total, "1200 runs".
func (s progressState) count() string {
	if s.total > 0 {
		return fmt.Sprintf("%d/%d %s", s.done, s.total, s.unit)
	}
	return fmt.Sprintf("%d %s", s.done, s.unit)
}

// plainLine is "verify: check: 1200/5000 runs, 24%, 800 runs/s, eta 5s",
// and when the phase ended "verify: check: 5000/5000 runs done in 6.2s
// (806 runs/s)", or "stopped after" when it did not reach its total.
func (p *progress) plainLine(now time.Time, final bool) string {
	s := p.cur
	rate, eta := p.rate(now)
	parts := []string{s.count()}
	if final {
		verb := "done in"
		switch {
		case s.total == 0:
			verb = "in"
		case s.done < s.total:
			verb = "stopped after"
		}
		parts[0] += fmt.Sprintf(" %s %s", verb, seconds(now.Sub(p.start)))
		if rate > 0 {
			parts[0] += fmt.Sprintf(" (%s %s/s)", humanRate(rate), s.unit)
		}
	} else {
		if s.total > 0 {
			parts = append(parts, fmt.Sprintf("%d%%", 100*s.done/s.total))
		}
		if rate > 0 {
			parts = append(parts, fmt.Sprintf("%s %s/s", humanRate(rate), s.unit))
		}
		if eta >= 0 {
			parts = append(parts, "eta "+etaString(eta))
		}
	}
	if s.note != "" {
		parts = append(parts, s.note)
	}
	return fmt.Sprintf("%s: %s: %s", p.cmd, s.phase, strings.Join(parts, ", "))
}

// barLine is the bar form: "reshard rewrite ████░░░░ 3/8 shards  2.1 shards/s  eta 3s  note",
// cut to the width (a wrapped line could not be redrawn in place).
func (p *progress) barLine(now time.Time) string {
	s := p.cur
	rate, eta := p.rate(now)
	label := p.cmd + " " + s.phase
	tail := "  " + s.count()
	if rate > 0 {
		tail += fmt.Sprintf("  %s %s/s", humanRate(rate), s.unit)
	}
	if eta >= 0 {
		tail += "  eta " + etaString(eta)
	}
	if s.note != "" {
		tail += "  " + s.note
	}
	avail := p.width - 1 // the last column would wrap on some terminals
	bar := ""
	if s.total > 0 {
		// A steady 30 columns (fewer only on a narrow terminal), so
		// the bar does not jump as the rate and ETA come and go.
		w := min(30, avail-utf8.RuneCountInString(label)-utf8.RuneCountInString(tail)-1)
		if w >= 10 {
			filled := int(int64(w) * s.done / s.total)
			bar = " " + styleGood.Render(strings.Repeat("█", filled))
			if filled < w {
				bar += styleDim.Render(strings.Repeat("░", w-filled))
			}
		}
	}
	line := cutRunes(label, avail)
	rest := avail - utf8.RuneCountInString(line)
	if bar != "" {
		line = styleHeader.Render(line) + bar
		rest -= lipgloss.Width(bar)
	} else {
		line = styleHeader.Render(line)
	}
	return line + cutRunes(tail, max(rest, 0))
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// progressEvent is one --progress=json line (docs/schema/progress.json).
type progressEvent struct {
	Type    string   `json:"type"` // always "progress"
	Command string   `json:"command"`
	Phase   string   `json:"phase"`
	Unit    string   `json:"unit"`
	Done    int64    `json:"done"`
	Total   *int64   `json:"total"` // null: not known
	Elapsed float64  `json:"elapsed_seconds"`
	Rate    float64  `json:"rate"`        // units per second since the phase began
	ETA     *float64 `json:"eta_seconds"` // null: not known
	Final   bool     `json:"final"`       // the phase's last line
	Note    string   `json:"note"`
}

func (p *progress) event(now time.Time, final bool) progressEvent {
	s := p.cur
	rate, eta := p.rate(now)
	e := progressEvent{Type: "progress", Command: p.cmd, Phase: s.phase, Unit: s.unit, Done: s.done,
		Elapsed: round3(now.Sub(p.start).Seconds()), Rate: round3(rate), Final: final, Note: s.note}
	if s.total > 0 {
		t := s.total
		e.Total = &t
	}
	if eta >= 0 {
		v := round3(eta.Seconds())
		e.ETA = &v
	}
	return e
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// seconds is a phase's duration for people: "0.42s", "6.2s", "3m12s".
func seconds(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// etaString is the time left, rounded to what a person reads: "4s",
// "2m30s", "1h5m".
func etaString(d time.Duration) string {
	switch {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(10 * time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// humanRate is a rate for people: "2.5", "806", "12.5k", "350k", "1.25M".
func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e5:
		return fmt.Sprintf("%.0fk", r/1e3)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.3g", r)
}
