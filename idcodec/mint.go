package idcodec

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
)

// ErrStandby is returned when a cell that owns no shard is asked to mint.
var ErrStandby = errors.New("cell owns no shard in the current epoch (standby): it cannot mint ids until an epoch places a shard on it")

// Placement is one immutable snapshot of what a cell mints into: the epoch
// and the shards it owns, in the order their slots appear in that epoch's
// ring. A Placement is never modified after NewPlacement returns it.
type Placement struct {
	namespace string
	cell      string
	epoch     int64
	owned     []int64
}

// NewPlacement copies owned so later changes to the caller's slice cannot
// reach the snapshot.
func NewPlacement(namespace, cell string, epoch int64, owned []int64) *Placement {
	return &Placement{namespace: namespace, cell: cell, epoch: epoch, owned: append([]int64(nil), owned...)}
}

// Epoch is the epoch new ids are stamped with.
func (p *Placement) Epoch() int64 { return p.epoch }

// Owned returns a copy of the owned shards in ring order.
func (p *Placement) Owned() []int64 { return append([]int64(nil), p.owned...) }

// Stamp picks the shard for a ulid: owned[ShardFor(ulid, len(owned))]. A
// single owned shard is always chosen; none is ErrStandby.
func (p *Placement) Stamp(ulidText string) (epoch, shard int64, err error) {
	if len(p.owned) == 0 {
		return 0, 0, ErrStandby
	}
	return p.epoch, p.owned[ShardFor(ulidText, len(p.owned))], nil
}

// Format stamps ulidText and builds the whole id.
func (p *Placement) Format(ulidText string) (string, error) {
	epoch, shard, err := p.Stamp(ulidText)
	if err != nil {
		return "", err
	}
	return Format(p.namespace, p.cell, epoch, shard, ulidText)
}

// Minter mints ids for one cell. Its placement can be re-pointed at any
// time; every mint reads the placement through one atomic load, so an id
// never pairs one placement's epoch with another's shard.
type Minter struct {
	current atomic.Pointer[Placement]

	mu      sync.Mutex // guards entropy, which is not safe for concurrent use
	entropy *ulid.MonotonicEntropy
	now     func() time.Time
}

// NewMinter returns a minter with monotonic ulid entropy drawn from r (use
// crypto/rand.Reader in production, a seeded source in tests) and the clock
// now (time.Now when nil).
func NewMinter(p *Placement, r io.Reader, now func() time.Time) *Minter {
	if now == nil {
		now = time.Now
	}
	m := &Minter{entropy: ulid.Monotonic(r, 0), now: now}
	m.current.Store(p)
	return m
}

// Repoint swaps the placement new mints use.
func (m *Minter) Repoint(p *Placement) { m.current.Store(p) }

// NewULID returns a fresh ulid; ulids made within one millisecond still sort
// in the order they were made.
func (m *Minter) NewULID() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := ulid.New(ulid.Timestamp(m.now()), m.entropy)
	if err != nil {
		return "", fmt.Errorf("minting ulid: %w", err)
	}
	return u.String(), nil
}

// Mint returns a new id: a fresh ulid stamped by the current placement.
func (m *Minter) Mint() (string, error) {
	p := m.current.Load() // the one read of the placement for this mint
	u, err := m.NewULID()
	if err != nil {
		return "", err
	}
	return p.Format(u)
}
