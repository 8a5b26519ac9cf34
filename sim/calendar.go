package sim

import (
	"time"
	"unsafe"
)

// calendar orders the fleet's pending attempts by millisecond, and by
// insertion within one millisecond, so a run is deterministic. It is a
// timing wheel of wheelSlots one-millisecond slots for what is due soon
// (every delay of the usual policies: caps of 30-60 s) and a binary heap
// for anything further out, moved into the wheel as its millisecond comes
// into range. Memory grows with the fleet, not with the horizon (a bucket
// per simulated millisecond needed about 2 GB for a 24 h horizon).
//
// A client has at most one pending attempt (the simulator schedules a
// client's next attempt only once it has taken the one before), so each
// slot is a first-in first-out list threaded through the clients
// themselves: a slot holds its first and last client, a client the one
// after it. Scheduling allocates nothing, however large the burst (a fixed
// 1 s policy puts 100,000 clients in one millisecond); the calendar is 4
// bytes per client and 8 per slot, allocated once, and its zero value is
// empty, so the slots a run never uses are never touched. Scheduling a
// client whose attempt is pending is a bug in the caller and panics.
//
// Once nothing is pending the calendar ends (it does not walk the empty
// milliseconds up to the horizon), and while the wheel is empty it skips
// to the millisecond at which the next far attempt comes into range.
type calendar struct {
	head, tail []int32 // per wheel slot: 1 + the first and the last client; 0: empty
	// next is per client: 1 + the client after it in its slot; last in its
	// slot, or in the far heap; or idle (no pending attempt: the zero value).
	next    []int32
	now     int64 // the millisecond being taken
	pending int   // attempts in the wheel
	far     []event
	n       uint64 // insertion counter: the tie-break among far events
	horizon int64  // ms; events at or past it are not kept
}

const (
	wheelSlots = 1 << 16 // 65.5 s
	idle       = 0       // calendar.next: the client has no pending attempt
	last       = -1      // calendar.next: the client is the last in its slot
	inFar      = -2      // calendar.next: the client's attempt is in the far heap
)

type event struct {
	ms int64
	n  uint64
	i  int32 // the client
}

func (a event) less(b event) bool { return a.ms < b.ms || (a.ms == b.ms && a.n < b.n) }

// newCalendar returns an empty calendar for clients 0..clients-1.
func newCalendar(horizon time.Duration, clients int) *calendar {
	c := &calendar{head: make([]int32, wheelSlots), tail: make([]int32, wheelSlots)}
	c.reset(horizon, clients)
	return c
}

// reset empties c for another run, keeping its memory.
func (c *calendar) reset(horizon time.Duration, clients int) {
	if c.pending > 0 {
		clear(c.head)
		clear(c.tail)
	}
	if cap(c.next) < clients {
		c.next = make([]int32, clients)
		adviseHugePages(unsafe.Pointer(unsafe.SliceData(c.next)), uintptr(clients)*4)
	} else {
		c.next = c.next[:clients]
		clear(c.next)
	}
	c.now, c.pending, c.far, c.n, c.horizon = 0, 0, c.far[:0], 0, max(1, horizon.Milliseconds())
}

// at schedules client i at t (truncated to the millisecond, never before
// the one being taken). An event at or past the horizon is not kept, and
// at reports false for it. (Small enough to be inlined: it runs once per
// attempt.)
func (c *calendar) at(t time.Duration, i int32) bool {
	if c.next[i] != idle {
		panic("sim: a client was scheduled while its attempt was pending")
	}
	ms := max(t.Milliseconds(), c.now)
	if ms >= c.horizon {
		return false
	}
	if ms >= c.now+wheelSlots {
		c.atFar(ms, i)
		return true
	}
	c.push(ms&(wheelSlots-1), i)
	return true
}

// atFar puts client i's attempt at ms, past the wheel's range, in the far
// heap.
func (c *calendar) atFar(ms int64, i int32) {
	c.next[i] = inFar
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
}

// push appends client i to wheel slot s.
func (c *calendar) push(s int64, i int32) {
	c.next[i] = last
	if t := c.tail[s]; t != 0 {
		c.next[t-1] = i + 1
	} else {
		c.head[s] = i + 1
	}
	c.tail[s] = i + 1
	c.pending++
}

// pop takes the next attempt in time order: its millisecond and client,
// or false when none is left before the horizon. An attempt scheduled for
// the millisecond being taken comes after the ones already there. (The
// common case, another attempt in the same millisecond, is small enough to
// be inlined.)
func (c *calendar) pop() (ms int64, i int32, ok bool) {
	s := c.now & (wheelSlots - 1) // c.now % wheelSlots: c.now is never negative
	h := c.head[s]
	if h == 0 {
		return c.popNext()
	}
	i = h - 1
	if n := c.next[i]; n > 0 {
		c.head[s] = n
	} else {
		c.head[s], c.tail[s] = 0, 0
	}
	c.next[i] = idle
	c.pending--
	return c.now, i, true
}

// popNext moves on from a millisecond with nothing left to the next one
// with an attempt, and takes it.
func (c *calendar) popNext() (ms int64, i int32, ok bool) {
	for c.now < c.horizon {
		// This millisecond is over. The one that now comes into the
		// wheel's range: far events for it move in, in the order they were
		// scheduled (nothing can have been put in its slot directly yet).
		in := c.now + wheelSlots
		for len(c.far) > 0 && c.far[0].ms == in {
			i := c.popFar().i
			c.next[i] = idle
			c.push(in&(wheelSlots-1), i)
		}
		c.now++
		if c.pending == 0 {
			if len(c.far) == 0 {
				c.now = c.horizon // nothing is left: the rest of the horizon is empty
				break
			}
			// Nothing happens until the first far event comes into range.
			c.now = max(c.now, c.far[0].ms-wheelSlots)
		}
		if c.now >= c.horizon {
			break
		}
		if c.head[c.now&(wheelSlots-1)] != 0 {
			return c.pop()
		}
	}
	return 0, 0, false
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
