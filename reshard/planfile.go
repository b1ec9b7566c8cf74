package reshard

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/journal/model"
	"github.com/fusee-dev/fusee/meta"
	"github.com/fusee-dev/fusee/reshard/internal/plan"
)

// PlanVersion is the version of the plan file's JSON schema
// (docs/reshard.md §10). A plan of another version is refused, never
// guessed at.
const PlanVersion = 1

// Plan is a reshard written down before it is done: the directory it was
// made from (its fingerprint), the count it goes to, and everything the
// renumbering will do. `fusee reshard --dry-run -o FILE` writes it;
// `--plan FILE` applies exactly it, and refuses if the directory is no
// longer the one it was made from; `--verify-plan FILE` checks a
// resharded directory against it. Its JSON field names are documented in
// docs/reshard.md; a change of meaning changes PlanVersion.
type Plan struct {
	Version   int    `json:"plan_version"`
	Dir       string `json:"dir"`
	OldShards int    `json:"old_shards"`
	NewShards int    `json:"new_shards"`
	// Identity is the fingerprint of the directory the plan was made from.
	Identity Fingerprint `json:"identity"`
	// StoreGen is the generation the new stores will have.
	StoreGen uint64 `json:"store_generation"`
	// Counts are the dry run's counts (as in the report).
	Counts Counts `json:"counts"`
	// Renumbered lists every run whose number changes, finished ones
	// included, by old shard and old number. Like the report's lists it
	// spills past its share of the budget (List).
	Renumbered *List[PlannedRun] `json:"renumbered"`
	// Tokens lists every pending completion token and what it becomes.
	Tokens *List[TokenChange] `json:"token_changes"`
	// Shards are the totals of each new shard.
	Shards      []ShardTotals `json:"new_shard_totals"`
	SpaceNeeded int64         `json:"space_needed_bytes"`
	// Checksum is the SHA-256 (hex) of the file with this field empty: a
	// damaged or hand-edited plan is refused.
	Checksum string `json:"checksum"`
}

// PlannedRun is a run whose number the plan changes.
type PlannedRun struct {
	WorkflowID string `json:"workflow_id"`
	Gen        uint32 `json:"generation"`
	State      string `json:"state"`
	OldShard   int    `json:"old_shard"`
	OldRun     uint64 `json:"old_run"`
	NewShard   int    `json:"new_shard"`
	NewRun     uint64 `json:"new_run"`
	OldKey     string `json:"old_key_prefix"`
	NewKey     string `json:"new_key_prefix"`
}

// ShardTotals are what one new shard will hold.
type ShardTotals struct {
	Shard int              `json:"shard"`
	Runs  int64            `json:"runs"`
	State map[string]int64 `json:"runs_by_state"`
	// Bytes is the key and value bytes of its store (headers aside).
	Bytes int64 `json:"bytes"`
}

// PlanFileError is a plan file that cannot be used: not JSON, damaged,
// or of another version.
type PlanFileError struct {
	Path string
	Msg  string
}

func (e *PlanFileError) Error() string {
	return fmt.Sprintf("plan %s: %s; nothing was changed", e.Path, e.Msg)
}

// PlanMismatchError is a plan whose fingerprint matches the directory but
// whose renumbering or totals do not: the plan was edited and its checksum
// made to match, or it was made by another fusee.
type PlanMismatchError struct {
	Dir  string
	Path string
	Diff string
}

func (e *PlanMismatchError) Error() string {
	return fmt.Sprintf("plan %s does not match the directory %s (%s): the plan was edited after the dry run wrote it, or another fusee made it; nothing was changed",
		e.Path, e.Dir, e.Diff)
}

// StalePlanError is a plan applied to a directory that is not the one it
// was made from (or has changed since).
type StalePlanError struct {
	Dir  string
	Path string
	Diff string
	// Switching: what differs is that a switch is interrupted (Diff
	// says between which counts); it must be finished first.
	Switching bool
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("%s is not the directory plan %s was made from (%s); nothing was changed",
		e.Dir, e.Path, e.Diff)
}

// WritePlan writes the plan file, with its checksum: the plan as
// json.MarshalIndent(p, "", "  ") renders it, with "checksum" the SHA-256
// of that rendering with "checksum" empty, and a newline. Its lists are
// streamed (WriteJSON), twice: once into the checksum, once to w.
func WritePlan(w io.Writer, p *Plan) error {
	sum, err := planChecksum(p)
	if err != nil {
		return err
	}
	return writePlan(w, p, sum, "\n")
}

// MarshalPlan returns the plan file's bytes (WritePlan), in memory.
func MarshalPlan(p *Plan) ([]byte, error) {
	var b bytes.Buffer
	if err := WritePlan(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// planChecksum is the SHA-256 (hex) of p's rendering with "checksum"
// empty.
func planChecksum(p *Plan) (string, error) {
	h := sha256.New()
	if err := writePlan(h, p, "", ""); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writePlan writes p with checksum sum, then end.
func writePlan(w io.Writer, p *Plan, sum, end string) error {
	shell := *p
	shell.Checksum = sum
	if shell.Renumbered != nil {
		shell.Renumbered = &List[PlannedRun]{}
	}
	if shell.Tokens != nil {
		shell.Tokens = &List[TokenChange]{}
	}
	return writeIndented(w, &shell, end, func(bw *bufio.Writer, doc []byte) ([]byte, error) {
		rest, err := streamList(bw, doc, "renumbered", p.Renumbered)
		if err != nil {
			return nil, err
		}
		return streamList(bw, rest, "token_changes", p.Tokens)
	})
}

// Close deletes the scratch stores of the plan's lists, if they spilled.
func (p *Plan) Close() error {
	return errors.Join(p.Renumbered.Close(), p.Tokens.Close())
}

// ParsePlan reads a plan file's bytes (path is for messages), its lists
// in memory; ReadPlan reads a file of any size.
func ParsePlan(path string, data []byte) (*Plan, error) {
	return decodePlan(path, bytes.NewReader(data), vfs.NewMem(), "", 1<<62)
}

// ReadPlan reads the plan file at path, its lists spilling under scratch
// ("": the system temporary directory) past their share of budget, as a
// reshard's do. It refuses a file that is not a plan, of another version,
// or whose checksum does not match its content. Close the plan when done.
func ReadPlan(fs vfs.FS, path, scratch string, budget int64) (*Plan, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	defer f.Close()
	return decodePlan(path, f, fs, listStem(fs, scratch)+"-plan", budget/mapShare/listShare)
}

// decodePlan reads a plan from r: the top-level object a field at a
// time, the lists an element at a time into lists spilling under stem
// past budget bytes each; then it checks the checksum by rendering the
// plan again (planChecksum).
func decodePlan(path string, r io.Reader, fs vfs.FS, stem string, budget int64) (_ *Plan, err error) {
	fail := func(msg string, err error) error { return planFileFail(path, msg, err) }
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	dec.DisallowUnknownFields()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("it starts with %v, not an object", t)
		}
		return nil, fail("not a readable plan", err)
	}
	p := &Plan{}
	defer func() {
		if err != nil {
			_ = p.Close()
		}
	}()
	// The fields but the lists, gathered and decoded together (they are
	// small): unknown or mistyped ones are refused as a whole decode
	// refuses them.
	rest := map[string]json.RawMessage{}
	version := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fail("damaged", err)
		}
		key, _ := t.(string)
		switch {
		case key == "renumbered" && p.Renumbered == nil:
			p.Renumbered, err = decodeList[PlannedRun](dec, fs, stem+"-renumbered", budget)
		case key == "token_changes" && p.Tokens == nil:
			p.Tokens, err = decodeList[TokenChange](dec, fs, stem+"-tokens", budget)
		case key == "renumbered" || key == "token_changes":
			err = fmt.Errorf("%q twice", key)
		default:
			var raw json.RawMessage
			if err = dec.Decode(&raw); err == nil {
				rest[key] = raw
			}
		}
		if err != nil {
			return nil, fail("damaged", err)
		}
		if key == "plan_version" {
			// Checked as soon as it is read: a plan of another version
			// is refused for that, whatever else it holds.
			if err := checkPlanVersion(path, rest[key], fail); err != nil {
				return nil, err
			}
			version = true
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail("damaged", err)
	}
	if !version {
		return nil, &PlanFileError{Path: path, Msg: "not a plan: it has no plan_version"}
	}
	shell, err := json.Marshal(rest)
	if err != nil {
		return nil, fail("damaged", err)
	}
	sd := json.NewDecoder(bytes.NewReader(shell))
	sd.DisallowUnknownFields()
	if err := sd.Decode(p); err != nil { // leaves the lists as they are
		return nil, fail("damaged", err)
	}
	sum, err := planChecksum(p)
	if err != nil {
		return nil, fail("damaged", err)
	}
	if p.Checksum == "" || sum != p.Checksum {
		return nil, &PlanFileError{Path: path, Msg: "damaged or edited: its checksum does not match its content"}
	}
	if p.OldShards < 1 || p.NewShards < 1 || p.NewShards > meta.MaxShards || len(p.Shards) != p.NewShards || p.Identity.Shards != p.OldShards {
		return nil, &PlanFileError{Path: path, Msg: fmt.Sprintf("inconsistent: %d to %d shards with %d shard totals", p.OldShards, p.NewShards, len(p.Shards))}
	}
	return p, nil
}

// planFileFail is the PlanFileError for err, met reading the plan at path:
// msg, or "not a readable plan" when it is not JSON or is cut short.
func planFileFail(path, msg string, err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "not a readable plan" // not JSON, or cut short
	}
	return &PlanFileError{Path: path, Msg: msg + " (" + err.Error() + ")"}
}

// checkPlanVersion refuses a plan_version other than PlanVersion.
func checkPlanVersion(path string, raw json.RawMessage, fail func(string, error) error) error {
	var v int
	if err := json.Unmarshal(raw, &v); err != nil {
		return fail("not a readable plan", err)
	}
	if v != PlanVersion {
		return &PlanFileError{Path: path, Msg: fmt.Sprintf("plan version %d; this fusee reads version %d", v, PlanVersion)}
	}
	return nil
}

// decodeList reads a JSON array from dec, an element at a time, into a
// list spilling at dir past budget bytes (null: a nil list).
func decodeList[T any](dec *json.Decoder, fs vfs.FS, dir string, budget int64) (*List[T], error) {
	t, err := dec.Token()
	if err != nil || t == nil {
		return nil, err
	}
	if t != json.Delim('[') {
		return nil, fmt.Errorf("a list is %v, not an array", t)
	}
	l := newList[T](fs, dir, budget)
	for dec.More() {
		var item T
		err = dec.Decode(&item)
		if err == nil {
			err = l.add(nil, item)
		}
		if err != nil {
			_ = l.Close()
			return nil, err
		}
	}
	if _, err = dec.Token(); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// writtenPlan makes the plan of a dry run from its pass 1 (every run in
// the run map whose number changes, each new shard's totals) and its
// report, whose token changes it shares.
func (r *resharder) writtenPlan(p *plan.Plan) (_ *Plan, err error) {
	renumbered := newList[PlannedRun](r.fs, listStem(r.fs, r.opts.Scratch)+"-plan", r.budget/mapShare/listShare)
	defer func() {
		if err != nil {
			_ = renumbered.Close()
		}
	}()
	totals, err := r.planDetails(p, func(pr *PlannedRun) error { return renumbered.add(nil, *pr) })
	if err != nil {
		return nil, err
	}
	rep := r.rep
	for j := range totals {
		if j < len(rep.NewShardBytes) {
			totals[j].Bytes = rep.NewShardBytes[j]
		}
	}
	return &Plan{Version: PlanVersion, Dir: r.dir, OldShards: r.oldN, NewShards: r.newN, Identity: *r.fp,
		StoreGen: rep.StoreGen, Counts: rep.Counts, Renumbered: renumbered, Tokens: rep.Tokens,
		Shards: totals, SpaceNeeded: rep.SpaceNeeded}, nil
}

// planDetails walks the run map: fn gets the runs whose number changes
// (losers always get a number above every old one, so "changed" is
// "renumbered now", whatever the run's flag says about earlier reshards),
// by old shard and old number; it returns each new shard's runs by state.
func (r *resharder) planDetails(p *plan.Plan, fn func(*PlannedRun) error) ([]ShardTotals, error) {
	totals := make([]ShardTotals, r.newN)
	for j := range totals {
		totals[j] = ShardTotals{Shard: j, State: map[string]int64{}}
	}
	err := p.EachRun(func(oldShard int, oldNo model.RunNo, m plan.Mapped) error {
		totals[m.Shard].Runs++
		totals[m.Shard].State[m.State.String()]++
		if m.No == oldNo {
			return nil
		}
		return fn(&PlannedRun{WorkflowID: m.WorkflowID, Gen: m.Gen, State: m.State.String(),
			OldShard: oldShard, OldRun: uint64(oldNo), NewShard: m.Shard, NewRun: uint64(m.No),
			OldKey: fmt.Sprintf("%s/%d/", m.WorkflowID, oldNo), NewKey: fmt.Sprintf("%s/%d/", m.WorkflowID, m.No)})
	})
	return totals, err
}

// matchPlan checks that the renumbering just computed is the one the plan
// given to apply wrote down. With the same fingerprint and the plan as a
// dry run wrote it, it always is; a difference means the plan was edited
// (its checksum recomputed to match), and stops the reshard before
// anything is switched.
// The plan's list is read alongside the run map, an entry at a time.
func (r *resharder) matchPlan(p *plan.Plan) error {
	want := r.opts.Plan
	next, stop := iter.Pull2(want.Renumbered.items())
	defer stop()
	var n int64
	elem := ""
	totals, err := r.planDetails(p, func(got *PlannedRun) error {
		n++
		w, err, ok := next()
		if err != nil {
			return err
		}
		if ok && elem == "" && *got != *w {
			elem = fmt.Sprintf("%s#%d goes to %d:%d, the plan says %d:%d", got.WorkflowID, got.Gen,
				got.NewShard, got.NewRun, w.NewShard, w.NewRun)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err, _ := next(); err != nil {
		return err
	}
	diff := ""
	switch {
	case p.StoreGen+1 != want.StoreGen:
		diff = fmt.Sprintf("store generation %d, the plan says %d", p.StoreGen+1, want.StoreGen)
	case n != want.Renumbered.Len():
		diff = fmt.Sprintf("%d runs renumbered, the plan says %d", n, want.Renumbered.Len())
	default:
		diff = elem
		for j := range totals {
			if diff == "" && totals[j].Runs != want.Shards[j].Runs {
				diff = fmt.Sprintf("new shard %d gets %d runs, the plan says %d", j, totals[j].Runs, want.Shards[j].Runs)
			}
		}
	}
	if diff != "" {
		return &PlanMismatchError{Dir: r.dir, Path: r.opts.PlanPath, Diff: diff}
	}
	return nil
}
