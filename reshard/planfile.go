package reshard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fusee-dev/fusee/journal/model"
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
	// included, by old shard and old number.
	Renumbered []PlannedRun `json:"renumbered"`
	// Tokens lists every pending completion token and what it becomes.
	Tokens []TokenChange `json:"token_changes"`
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
	return fmt.Sprintf("plan %s: %s; nothing was changed; make a new plan with `fusee reshard <dir> <shards> --dry-run -o FILE`", e.Path, e.Msg)
}

// StalePlanError is a plan applied to a directory that is not the one it
// was made from (or has changed since).
type StalePlanError struct {
	Dir  string
	Path string
	Diff string
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("%s is not the directory plan %s was made from (%s); nothing was changed; make a new plan and review it again",
		e.Dir, e.Path, e.Diff)
}

// MarshalPlan returns the plan file's bytes, with its checksum.
func MarshalPlan(p *Plan) ([]byte, error) {
	c := *p
	c.Checksum = ""
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	c.Checksum = hex.EncodeToString(sum[:])
	data, err = json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// ParsePlan reads a plan file's bytes (path is for messages). It refuses
// a file that is not a plan, of another version, or whose checksum does
// not match its content.
func ParsePlan(path string, data []byte) (*Plan, error) {
	var v struct {
		Version *int `json:"plan_version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, &PlanFileError{Path: path, Msg: "not a readable plan (" + err.Error() + ")"}
	}
	if v.Version == nil {
		return nil, &PlanFileError{Path: path, Msg: "not a plan: it has no plan_version"}
	}
	if *v.Version != PlanVersion {
		return nil, &PlanFileError{Path: path, Msg: fmt.Sprintf("plan version %d; this fusee reads version %d", *v.Version, PlanVersion)}
	}
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, &PlanFileError{Path: path, Msg: "damaged (" + err.Error() + ")"}
	}
	again, err := MarshalPlan(&p)
	if err != nil {
		return nil, &PlanFileError{Path: path, Msg: "damaged (" + err.Error() + ")"}
	}
	var check struct {
		Checksum string `json:"checksum"`
	}
	_ = json.Unmarshal(again, &check)
	if p.Checksum == "" || check.Checksum != p.Checksum {
		return nil, &PlanFileError{Path: path, Msg: "damaged or edited: its checksum does not match its content"}
	}
	if p.OldShards < 1 || p.NewShards < 1 || p.NewShards > 1024 || len(p.Shards) != p.NewShards || p.Identity.Shards != p.OldShards {
		return nil, &PlanFileError{Path: path, Msg: fmt.Sprintf("inconsistent: %d to %d shards with %d shard totals", p.OldShards, p.NewShards, len(p.Shards))}
	}
	return &p, nil
}

// writtenPlan makes the plan of a dry run from its pass 1 (every run in
// the run map whose number changes, each new shard's totals) and its
// report.
func (r *resharder) writtenPlan(p *plan) (*Plan, error) {
	renumbered, totals, err := r.planDetails(p)
	if err != nil {
		return nil, err
	}
	rep := r.rep
	// The plan holds every token change in memory (as its renumbered
	// runs): plan files are not bounded by the budget yet.
	tokens, err := rep.Tokens.all()
	if err != nil {
		return nil, err
	}
	for j := range totals {
		if j < len(rep.NewShardBytes) {
			totals[j].Bytes = rep.NewShardBytes[j]
		}
	}
	return &Plan{Version: PlanVersion, Dir: r.dir, OldShards: r.oldN, NewShards: r.newN, Identity: *r.fp,
		StoreGen: rep.StoreGen, Counts: rep.Counts, Renumbered: renumbered, Tokens: tokens,
		Shards: totals, SpaceNeeded: rep.SpaceNeeded}, nil
}

// planDetails walks the run map: the runs whose number changes (losers
// always get a number above every old one, so "changed" is "renumbered
// now", whatever the run's flag says about earlier reshards), and each new
// shard's runs by state.
func (r *resharder) planDetails(p *plan) ([]PlannedRun, []ShardTotals, error) {
	renumbered := []PlannedRun{}
	totals := make([]ShardTotals, r.newN)
	for j := range totals {
		totals[j] = ShardTotals{Shard: j, State: map[string]int64{}}
	}
	err := p.runs.Each(nil, func(k, v []byte) error {
		oldShard := int(binary.BigEndian.Uint16(k))
		oldNo := model.RunNo(binary.BigEndian.Uint64(k[2:]))
		m := decodeMapped(v)
		totals[m.Shard].Runs++
		totals[m.Shard].State[m.State.String()]++
		if m.No != oldNo {
			renumbered = append(renumbered, PlannedRun{WorkflowID: m.WorkflowID, Gen: m.Gen, State: m.State.String(),
				OldShard: oldShard, OldRun: uint64(oldNo), NewShard: m.Shard, NewRun: uint64(m.No),
				OldKey: fmt.Sprintf("%s/%d/", m.WorkflowID, oldNo), NewKey: fmt.Sprintf("%s/%d/", m.WorkflowID, m.No)})
		}
		return nil
	})
	return renumbered, totals, err
}

// matchPlan checks that the renumbering just computed is the one the plan
// given to apply wrote down. With the same fingerprint it always is; a
// difference is a bug, and stops the reshard before anything is switched.
func (r *resharder) matchPlan(p *plan) error {
	want := r.opts.Plan
	renumbered, totals, err := r.planDetails(p)
	if err != nil {
		return err
	}
	diff := ""
	switch {
	case p.storeGen+1 != want.StoreGen:
		diff = fmt.Sprintf("store generation %d, the plan says %d", p.storeGen+1, want.StoreGen)
	case len(renumbered) != len(want.Renumbered):
		diff = fmt.Sprintf("%d runs renumbered, the plan says %d", len(renumbered), len(want.Renumbered))
	default:
		for i := range renumbered {
			if renumbered[i] != want.Renumbered[i] {
				diff = fmt.Sprintf("%s#%d goes to %d:%d, the plan says %d:%d", renumbered[i].WorkflowID, renumbered[i].Gen,
					renumbered[i].NewShard, renumbered[i].NewRun, want.Renumbered[i].NewShard, want.Renumbered[i].NewRun)
				break
			}
		}
		for j := range totals {
			if diff == "" && totals[j].Runs != want.Shards[j].Runs {
				diff = fmt.Sprintf("new shard %d gets %d runs, the plan says %d", j, totals[j].Runs, want.Shards[j].Runs)
			}
		}
	}
	if diff != "" {
		return &CheckError{Diff: "the renumbering differs from the plan: " + diff}
	}
	return nil
}
