package ringfile

import (
	"fmt"
	"slices"

	"github.com/fusee-dev/fusee/idcodec"
)

// Resolution is where an id lives.
type Resolution struct {
	ID     string `json:"id"`
	Legacy bool   `json:"legacy,omitempty"`
	Epoch  int64  `json:"epoch"`
	Shard  int64  `json:"shard"`
	Status string `json:"status"` // the status of the epoch that placed it
	Cell   string `json:"cell"`
	Region string `json:"region,omitempty"`
}

// Resolve finds the cell of an id through its own epoch's ring, whatever
// that epoch's status: retirement is about work, not addressing. It fails
// closed: a namespace with no epoch, or an id of an epoch the policy does
// not have, is ErrNotReady; a shard the epoch does not place on exactly one
// cell (one its epoch's shard set lacks, say) is ErrUnplaced (never a wrap
// onto some other slot); an id labelled with a cell other than its shard's
// is ErrCellMismatch; an id of another namespace is ErrOtherNamespace. A legacy id (one that does not parse)
// goes to the genesis cell: the owner of shard 0 in epoch 0's ring.
func (p *Policy) Resolve(id string) (Resolution, error) {
	parsed := idcodec.Parse(id)
	if len(p.Epochs) == 0 {
		return Resolution{}, fmt.Errorf("%s: %w: %s has no epoch yet", id, ErrNotReady, p.Namespace)
	}
	if parsed.Legacy {
		return p.resolveLegacy(id)
	}
	if parsed.Namespace != p.Namespace {
		return Resolution{}, fmt.Errorf("%s: %w: it belongs to %q, this policy places %q", id, ErrOtherNamespace, parsed.Namespace, p.Namespace)
	}
	e := p.Epoch(parsed.Epoch)
	if e == nil {
		return Resolution{}, fmt.Errorf("%s: %w: epoch %d is not in this policy (current is %d): is the file out of date?", id, ErrNotReady, parsed.Epoch, p.Current)
	}
	slot, err := ownerOf(e, parsed.Shard)
	if err != nil {
		return Resolution{}, fmt.Errorf("%s: %w", id, err)
	}
	if parsed.Cell != "" && parsed.Cell != slot.Cell {
		return Resolution{}, fmt.Errorf("%s: %w: its label names cell %s, but epoch %d places shard %d on cell %s: the id was minted by or for another cell, or altered; do not route it by its label",
			id, ErrCellMismatch, parsed.Cell, e.Number, parsed.Shard, slot.Cell)
	}
	return Resolution{ID: id, Epoch: e.Number, Shard: parsed.Shard, Status: e.Status.String(), Cell: slot.Cell, Region: slot.Region}, nil
}

// ownerOf is the one slot that places shard in e's ring.
func ownerOf(e *Epoch, shard int64) (Slot, error) {
	var owners []Slot
	if shard < shardLimit {
		owners = e.Ring.Owners(int(shard))
	}
	switch len(owners) {
	case 1:
		return owners[0], nil
	case 0:
		return Slot{}, fmt.Errorf("%w: epoch %d places no cell on shard %d", ErrUnplaced, e.Number, shard)
	}
	return Slot{}, fmt.Errorf("%w: epoch %d places shard %d on %d slots (%s and %s)", ErrUnplaced, e.Number, shard, len(owners), owners[0].Cell, owners[1].Cell)
}

// GenesisCell is where legacy ids route: the cell owning shard 0 in epoch
// 0's ring. Without an epoch 0 (a history imported without its genesis) it
// fails closed rather than guess.
func (p *Policy) GenesisCell() (Slot, error) {
	e := p.Epoch(0)
	if e == nil {
		return Slot{}, fmt.Errorf("%w: legacy ids route to the owner of shard 0 in epoch 0, and this policy has no epoch 0", ErrNotReady)
	}
	return ownerOf(e, 0)
}

func (p *Policy) resolveLegacy(id string) (Resolution, error) {
	slot, err := p.GenesisCell()
	if err != nil {
		return Resolution{}, fmt.Errorf("%s (legacy id): %w", id, err)
	}
	return Resolution{ID: id, Legacy: true, Epoch: 0, Shard: 0, Status: p.Epoch(0).Status.String(), Cell: slot.Cell, Region: slot.Region}, nil
}

// Placement is what cell mints into now: the current epoch and the shards
// it owns there, in ring order. A cell with no shard is standby and gets
// idcodec.ErrStandby; a namespace with no epoch is ErrNotReady.
func (p *Policy) Placement(cell string) (*idcodec.Placement, error) {
	cur := p.CurrentEpoch()
	if cur == nil {
		return nil, fmt.Errorf("%w: %s has no current epoch, no cell mints", ErrNotReady, p.Namespace)
	}
	if !slices.ContainsFunc(p.Cells, func(d CellDecl) bool { return d.ID == cell }) {
		ids := make([]string, 0, len(p.Cells))
		for _, d := range p.Cells {
			if !slices.Contains(ids, d.ID) {
				ids = append(ids, d.ID)
			}
		}
		return nil, &UnknownCellError{Cell: cell, File: p.File, Cells: ids}
	}
	owned := cur.Ring.Owned(cell)
	if len(owned) == 0 {
		return nil, fmt.Errorf("cell %s in epoch %d: %w", cell, cur.Number, idcodec.ErrStandby)
	}
	return idcodec.NewPlacement(p.Namespace, cell, cur.Number, owned), nil
}
