package model

// Pending is what a run still waits for, derived from its journal.
type Pending struct {
	Timers   []uint32 // positions of timers (and retries) that have not fired
	Waits    []uint32 // positions of waits not yet ended
	Children []uint32 // positions of child requests without a result
	Updates  []uint32 // positions of accepted updates without a result
	Asyncs   []uint32 // positions of async completions not yet answered
	Signals  []uint32 // positions of buffered signals no wait has consumed
}

// PendingOf derives a run's open work from its journal.
func PendingOf(r *Run) Pending {
	var p Pending
	closed := map[uint32]bool{}
	consumed := map[string]bool{}
	for i := range r.Journal {
		rec := &r.Journal[i]
		if completes(rec.Kind) {
			closed[rec.Ref] = true
		}
		if rec.Kind == KindWaited && rec.MsgID != "" {
			consumed[rec.MsgID] = true
		}
	}
	for i := range r.Journal {
		rec := &r.Journal[i]
		pos := uint32(i)
		switch rec.Kind {
		case KindTimer:
			if !closed[pos] {
				p.Timers = append(p.Timers, pos)
			}
		case KindAttempt:
			if rec.Time != 0 && !closed[pos] {
				p.Timers = append(p.Timers, pos)
			}
		case KindWait:
			if !closed[pos] {
				p.Waits = append(p.Waits, pos)
			}
		case KindChild:
			if !closed[pos] {
				p.Children = append(p.Children, pos)
			}
		case KindUpdate:
			if !closed[pos] {
				p.Updates = append(p.Updates, pos)
			}
		case KindAsync:
			if !closed[pos] {
				p.Asyncs = append(p.Asyncs, pos)
			}
		case KindSignal:
			if !consumed[rec.MsgID] {
				p.Signals = append(p.Signals, pos)
			}
		}
	}
	return p
}
