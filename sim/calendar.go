package sim

import "time"

// calendar orders the fleet's pending attempts by millisecond, and by
// insertion within one millisecond, so a run is deterministic. It is a
// timing wheel of wheelSlots one-millisecond buckets for what is due soon
// (every delay of the usual policies: caps of 30-60 s) and a binary heap
// for anything further out, moved into the wheel as its millisecond comes
// into range. Memory grows with the fleet, not with the horizon (a bucket
// per simulated millisecond needed about 2 GB for a 24 h horizon).
type calendar struct {
	wheel   [][]int32
	now     int64 // the millisecond being processed
	far     []event
	n       uint64 // insertion counter: the tie-break among far events
	horizon int64  // ms; events at or past it are not kept
}

const wheelSlots = 1 << 16 // 65.5 s

type event struct {
	ms int64
	n  uint64
	i  int32 // the client
}

func (a event) less(b event) bool { return a.ms < b.ms || (a.ms == b.ms && a.n < b.n) }

func newCalendar(horizon time.Duration) *calendar {
	return &calendar{wheel: make([][]int32, wheelSlots), horizon: max(1, horizon.Milliseconds())}
}

// at schedules client i at t (truncated to the millisecond, never before
// the one being processed). An event at or past the horizon is not kept,
// and at reports false for it.
func (c *calendar) at(t time.Duration, i int32) bool {
	ms := max(t.Milliseconds(), c.now)
	if ms >= c.horizon {
		return false
	}
	if ms < c.now+wheelSlots {
		s := &c.wheel[ms%wheelSlots]
		*s = append(*s, i)
		return true
	}
	c.n++
	c.far = append(c.far, event{ms: ms, n: c.n, i: i})
	for j := len(c.far) - 1; j > 0; {
		p := (j - 1) / 2
		if !c.far[j].less(c.far[p]) {
			break
		}
		c.far[j], c.far[p] = c.far[p], c.far[j]
		j = p
	}
	return true
}

// each calls fn for every event in time order, including those fn
// schedules while it runs (an event for the millisecond being processed
// runs after the ones already there).
func (c *calendar) each(fn func(ms int64, i int32)) {
	for c.now = 0; c.now < c.horizon; c.now++ {
		s := &c.wheel[c.now%wheelSlots]
		for j := 0; j < len(*s); j++ { // by index: fn may append to this slot
			fn(c.now, (*s)[j])
		}
		if cap(*s) > 1024 {
			*s = nil // a burst is over: let its array go
		} else {
			*s = (*s)[:0]
		}
		// The millisecond that now comes into the wheel's range: far
		// events for it move in, in the order they were scheduled. Nothing
		// can have been put in its slot directly yet.
		next := c.now + wheelSlots
		for len(c.far) > 0 && c.far[0].ms == next {
			s := &c.wheel[next%wheelSlots]
			*s = append(*s, c.popFar().i)
		}
	}
}

func (c *calendar) popFar() event {
	top := c.far[0]
	last := len(c.far) - 1
	c.far[0] = c.far[last]
	c.far = c.far[:last]
	for j := 0; ; {
		l := 2*j + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && c.far[r].less(c.far[l]) {
			m = r
		}
		if !c.far[m].less(c.far[j]) {
			break
		}
		c.far[j], c.far[m] = c.far[m], c.far[j]
		j = m
	}
	return top
}
