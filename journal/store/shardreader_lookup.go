package store

import (
	"bytes"
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/fusee-dev/fusee/journal/model"
)

// lookupCursor is what one caller of ShardReader.Run works with: a run
// iterator kept open between lookups (a seek on it is cheaper than a new
// iterator) and LoadRunKey's target.
type lookupCursor struct {
	it      *pebble.Iterator
	scratch *model.Shard
}

// lookupPool holds the cursors not in use: as many as there were callers
// at once, so lookups from several goroutines never share one.
type lookupPool struct {
	mu   sync.Mutex
	free []*lookupCursor
}

// takeCursor returns a free cursor, or a new one; put gives it back.
func (sr *ShardReader) takeCursor() (*lookupCursor, error) {
	p := &sr.lookups
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	it, err := sr.store.NewIter(&pebble.IterOptions{LowerBound: []byte{KeyRun}, UpperBound: []byte{KeyRun + 1}})
	if err != nil {
		return nil, WrapStoreError(sr.path, "reading", err)
	}
	return &lookupCursor{it: it, scratch: &model.Shard{Runs: map[model.RunNo]*model.Run{}}}, nil
}

func (p *lookupPool) put(c *lookupCursor) {
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
}

// close closes the free cursors' iterators (every cursor is free once no
// lookup runs).
func (p *lookupPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, c := range p.free {
		errs = append(errs, c.it.Close())
	}
	p.free = nil
	return errors.Join(errs...)
}

// seekExact positions c on key and returns its value (valid until the
// cursor moves) if the store holds exactly that key.
func (sr *ShardReader) seekExact(c *lookupCursor, key []byte) ([]byte, bool, error) {
	if !c.it.SeekGE(key) {
		if err := c.it.Error(); err != nil {
			return nil, false, WrapStoreError(sr.path, "reading", err)
		}
		return nil, false, nil
	}
	if !bytes.Equal(c.it.Key(), key) {
		return nil, false, nil
	}
	val, err := c.it.ValueAndErr()
	if err != nil {
		return nil, false, WrapStoreError(sr.path, "reading", err)
	}
	return val, true, nil
}

// storedEntry reads run no's entry from the store (not the overlay) on a
// cursor: a seek on an open iterator, cheaper than a Get, which builds
// one; a record of the same run read next is usually in the same block.
func (sr *ShardReader) storedEntry(c *lookupCursor, no model.RunNo) (model.RunEntry, bool, error) {
	key := RunKey(no)
	val, ok, err := sr.seekExact(c, key)
	if !ok || err != nil {
		return model.RunEntry{}, false, err
	}
	e, err := model.DecodeRunEntry(val)
	if err != nil {
		return model.RunEntry{}, false, sr.keyError(key, err)
	}
	return e, true, nil
}
