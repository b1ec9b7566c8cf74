package model

// Changes records what Apply changed in a shard since its store last
// reflected it, so that a checkpoint writes only those keys. Each set names
// keys, not values: at checkpoint time the current state decides whether a
// key is written (still present) or deleted (gone). Tracking is off (nil)
// for shards that are not backed by a store: a shard built in memory, by a
// simulator or by reshard, pays nothing for it.
type Changes struct {
	// runs maps a changed run to the first position of its journal that
	// the store does not hold yet.
	Runs    map[RunNo]uint32
	IDs     map[string]struct{}   // workflow IDs whose latest run changed
	Timers  map[TimerKey]struct{} // timers added or removed
	Outbox  map[uint64]string     // outbox seq -> message ID, added or acked
	Seen    map[string]struct{}   // message IDs received
	Archive map[RunNo]struct{}    // runs archived (tombstoned)
	// Stored maps the runs of Archive whose history the store holds and
	// memory does not (a run tombstoned while evicted: Shard.Archive has
	// no entry for it) to their journal length: the checkpoint moves
	// those records into the archive key itself.
	Stored map[RunNo]uint32
}

func NewChanges() *Changes {
	return &Changes{
		Runs: map[RunNo]uint32{}, IDs: map[string]struct{}{}, Timers: map[TimerKey]struct{}{},
		Outbox: map[uint64]string{}, Seen: map[string]struct{}{}, Archive: map[RunNo]struct{}{},
		Stored: map[RunNo]uint32{},
	}
}

// TrackChanges starts (or restarts) change tracking: from now on the state
// as it is is taken to be what the store holds.
func (s *Shard) TrackChanges() { s.Changed = NewChanges() }

// PendingChanges reports how many keys the next checkpoint must write.
func (s *Shard) PendingChanges() int {
	c := s.Changed
	if c == nil {
		return 0
	}
	return len(c.Runs) + len(c.IDs) + len(c.Timers) + len(c.Outbox) + len(c.Seen) + len(c.Archive)
}

// touchRun notes that run no changed from journal position from on.
func (s *Shard) touchRun(no RunNo, from uint32) {
	if c := s.Changed; c != nil {
		if old, ok := c.Runs[no]; !ok || from < old {
			c.Runs[no] = from
		}
	}
}

func (s *Shard) addTimer(k TimerKey) {
	s.Timers[k] = struct{}{}
	if c := s.Changed; c != nil {
		c.Timers[k] = struct{}{}
	}
}

func (s *Shard) deleteTimer(k TimerKey) {
	delete(s.Timers, k)
	if c := s.Changed; c != nil {
		c.Timers[k] = struct{}{}
	}
}

func (s *Shard) setLatest(id string, no RunNo) {
	s.ByID[id] = no
	if s.back != nil {
		s.back.AddID(id)
	}
	if c := s.Changed; c != nil {
		c.IDs[id] = struct{}{}
	}
}

func (s *Shard) touchOutbox(m *Message) {
	if c := s.Changed; c != nil {
		c.Outbox[m.Seq] = m.ID
	}
}

func (s *Shard) addSeen(id, workflowID string) {
	s.Seen[id] = workflowID
	if s.back != nil {
		s.back.AddSeen(id)
	}
	if c := s.Changed; c != nil {
		c.Seen[id] = struct{}{}
	}
}

func (s *Shard) touchArchive(no RunNo) {
	if c := s.Changed; c != nil {
		c.Archive[no] = struct{}{}
	}
}
