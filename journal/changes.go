package journal

// changes records what Apply changed in a shard since its store last
// reflected it, so that a checkpoint writes only those keys. Each set names
// keys, not values: at checkpoint time the current state decides whether a
// key is written (still present) or deleted (gone). Tracking is off (nil)
// for shards that are not backed by a store: a shard built in memory, by a
// simulator or by reshard, pays nothing for it.
type changes struct {
	// runs maps a changed run to the first position of its journal that
	// the store does not hold yet.
	runs    map[RunNo]uint32
	ids     map[string]struct{}   // workflow IDs whose latest run changed
	timers  map[TimerKey]struct{} // timers added or removed
	outbox  map[uint64]string     // outbox seq -> message ID, added or acked
	seen    map[string]struct{}   // message IDs received
	archive map[RunNo]struct{}    // runs archived (tombstoned)
}

func newChanges() *changes {
	return &changes{
		runs: map[RunNo]uint32{}, ids: map[string]struct{}{}, timers: map[TimerKey]struct{}{},
		outbox: map[uint64]string{}, seen: map[string]struct{}{}, archive: map[RunNo]struct{}{},
	}
}

// trackChanges starts (or restarts) change tracking: from now on the state
// as it is is taken to be what the store holds.
func (s *Shard) trackChanges() { s.changed = newChanges() }

// pendingChanges reports how many keys the next checkpoint must write.
func (s *Shard) pendingChanges() int {
	c := s.changed
	if c == nil {
		return 0
	}
	return len(c.runs) + len(c.ids) + len(c.timers) + len(c.outbox) + len(c.seen) + len(c.archive)
}

// touchRun notes that run no changed from journal position from on.
func (s *Shard) touchRun(no RunNo, from uint32) {
	if c := s.changed; c != nil {
		if old, ok := c.runs[no]; !ok || from < old {
			c.runs[no] = from
		}
	}
}

func (s *Shard) addTimer(k TimerKey) {
	s.Timers[k] = struct{}{}
	if c := s.changed; c != nil {
		c.timers[k] = struct{}{}
	}
}

func (s *Shard) deleteTimer(k TimerKey) {
	delete(s.Timers, k)
	if c := s.changed; c != nil {
		c.timers[k] = struct{}{}
	}
}

func (s *Shard) setLatest(id string, no RunNo) {
	s.ByID[id] = no
	if s.back != nil {
		s.back.AddID(id)
	}
	if c := s.changed; c != nil {
		c.ids[id] = struct{}{}
	}
}

func (s *Shard) touchOutbox(m *Message) {
	if c := s.changed; c != nil {
		c.outbox[m.Seq] = m.ID
	}
}

func (s *Shard) addSeen(id, workflowID string) {
	s.Seen[id] = workflowID
	if s.back != nil {
		s.back.AddSeen(id)
	}
	if c := s.changed; c != nil {
		c.seen[id] = struct{}{}
	}
}

func (s *Shard) touchArchive(no RunNo) {
	if c := s.changed; c != nil {
		c.archive[no] = struct{}{}
	}
}
