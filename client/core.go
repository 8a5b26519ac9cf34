package client

import (
	"strconv"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Stats counts what a Core has seen since New.
type Stats struct {
	Dials            int   // sockets asked for (connection attempts)
	Opens            int   // open events accepted
	Closes           int   // close events accepted
	Pings            int   // pings accepted
	WatchdogFired    int   // heartbeat watchdog expiries
	StaleEvents      int   // events from replaced sockets ignored
	ForeignEvents    int   // events from replaced sockets applied (no StaleFilter)
	SubscribesSent   int   // subscribe frames sent
	Updates          int   // feed updates delivered
	LastSeq          int64 // seq of the last update
	SeqGaps          int   // updates whose seq skipped past LastSeq+1, on one socket or across a reconnect
	MissedUpdates    int64 // updates skipped by those gaps, in total
	DroppedResponses int   // responses matching no pending request (late or unknown)
	BadFrames        int   // frames that failed to decode
	ServerErrors     int   // error frames from the server
}

// Core is the client's state machine. It is not safe for concurrent use:
// one driver goroutine (or the browser's event loop) owns it.
type Core struct {
	cfg     Config
	backoff Backoff

	started, stopped bool
	online           bool

	nextSocket SocketID
	current    SocketID // 0: none
	transport  Level
	protocol   Level
	service    Level

	// Deadlines; zero means not armed. The driver holds one timer for the
	// earliest of them (and of the request deadlines).
	connectAt time.Time
	// reconnects are the scheduled dials. With StaleFilter there is at most
	// one; without it every accepted close schedules its own, as a naive
	// onclose handler does, so stale closes multiply the sockets.
	reconnects  []time.Time
	watchdogAt  time.Time
	subscribeAt time.Time
	resetAt     time.Time
	armed       time.Time

	pingInterval time.Duration
	readySince   time.Time

	nextID  uint64
	pending map[uint64]*pendingRequest
	queue   []*pendingRequest // by deadline (all requests share one timeout)

	lastState    State
	stateEmitted bool
	stats        Stats
	effects      []Effect
}

// New returns a Core for cfg. It does nothing until Start.
func New(cfg Config) (*Core, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Core{cfg: cfg, online: true, pending: map[uint64]*pendingRequest{}}
	if cfg.Features.Backoff {
		c.backoff = Backoff{Policy: cfg.Policy, Cooldown: cfg.Cooldown}
	} else {
		c.backoff = Backoff{Policy: Fixed{D: cfg.NaiveDelay}}
	}
	return c, nil
}

// Config returns the configuration with defaults filled in.
func (c *Core) Config() Config { return c.cfg }

// State returns the current readiness.
func (c *Core) State() State { return c.state() }

// Stats returns the counters.
func (c *Core) Stats() Stats { return c.stats }

// Effects returns what the driver must do next, in order, and forgets them.
// The returned slice is valid until the next call into the Core.
func (c *Core) Effects() []Effect {
	e := c.effects
	c.effects = c.effects[:0]
	return e
}

func (c *Core) emit(e Effect) { c.effects = append(c.effects, e) }

func (c *Core) trace(kind string, s SocketID, detail string) {
	if c.cfg.Trace {
		c.emit(Effect{Kind: EffLog, Event: Event{Kind: kind, Socket: s, Detail: detail}})
	}
}

// Start opens the first socket.
func (c *Core) Start(now time.Time) {
	if c.started || c.stopped {
		return
	}
	c.started = true
	c.dial(now)
	c.after(now)
}

// Opened reports that socket s opened.
func (c *Core) Opened(s SocketID, now time.Time) {
	if c.stopped || !c.accept(s, "open") {
		return
	}
	c.stats.Opens++
	c.transport = Up
	c.connectAt = time.Time{}
	c.backoff.Opened()
	c.trace("open", s, "socket "+utoa(s)+" open")
	c.heartbeatOpened(now)
	c.serviceOpened(now)
	c.after(now)
}

// Received reports a text frame that arrived on socket s.
func (c *Core) Received(s SocketID, frame []byte, now time.Time) {
	if c.stopped || !c.accept(s, "message") {
		return
	}
	m, err := protocol.Decode(frame)
	if err != nil {
		c.stats.BadFrames++
		c.trace("bad-frame", s, err.Error())
		return
	}
	switch m.Type {
	case protocol.TypePing:
		c.onPing(m, now)
	case protocol.TypeSubscribed:
		c.onSubscribed(s, m)
	case protocol.TypeUnsubscribed:
		c.onUnsubscribed(s, m, now)
	case protocol.TypeUpdate:
		c.onUpdate(s, m)
	case protocol.TypeResponse:
		c.onResponse(m)
	case protocol.TypeError:
		c.stats.ServerErrors++
		c.trace("server-error", s, "error frame with code "+m.Error.Code)
		if m.ID != 0 {
			c.onResponse(m) // about one of our requests: it settles now, not at its timeout
		}
	default:
		c.stats.BadFrames++
		c.trace("bad-frame", s, "unexpected "+string(m.Type)+" from server")
	}
	c.after(now)
}

// Closed reports that socket s closed (or failed to open) with code and
// reason; 1006 when the platform gives no code.
func (c *Core) Closed(s SocketID, code int, reason string, now time.Time) {
	if c.stopped || !c.accept(s, "close") {
		return
	}
	c.stats.Closes++
	c.trace("close", s, "socket "+utoa(s)+" closed: "+strconv.Itoa(code)+" "+reason)
	c.lost(now, false)
	c.after(now)
}

// Tick reports that the timer armed by an EffTimer fired. Calling it early
// or spuriously is harmless: only deadlines at or before now act.
func (c *Core) Tick(now time.Time) {
	if c.stopped {
		return
	}
	c.armed = time.Time{}
	if due(c.connectAt, now) {
		c.connectAt = time.Time{}
		c.trace("connect-timeout", c.current, "socket "+utoa(c.current)+" did not open within "+c.cfg.ConnectTimeout.String())
		c.emit(Effect{Kind: EffClose, Socket: c.current, Code: protocol.CloseNormal, Reason: "connect timeout"})
		c.lost(now, false)
	}
	if due(c.watchdogAt, now) {
		c.watchdogFired(now)
	}
	if due(c.subscribeAt, now) {
		c.subscribeTimedOut(now)
	}
	c.expireRequests(now)
	if due(c.resetAt, now) {
		c.cooldownDone()
	}
	c.dialDue(now)
	c.after(now)
}

// Stop closes the socket with 1000, rejects every pending request with
// ErrConnectionClosed and cancels every timer. The Core does nothing after.
func (c *Core) Stop(now time.Time) {
	if c.stopped {
		return
	}
	c.stopped = true
	if c.current != 0 && c.transport != Down {
		c.emit(Effect{Kind: EffClose, Socket: c.current, Code: protocol.CloseNormal, Reason: "client stopped"})
	}
	c.transport = Down
	c.rejectAll("client stopped", true)
	c.connectAt, c.watchdogAt, c.subscribeAt, c.resetAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	c.reconnects = nil
	c.trace("stop", c.current, "client stopped")
	c.after(now)
}

func (c *Core) dial(now time.Time) {
	c.nextSocket++
	c.current = c.nextSocket
	c.transport = Pending
	c.protocol, c.service = Down, Down
	c.connectAt = now.Add(c.cfg.ConnectTimeout)
	c.watchdogAt, c.subscribeAt = time.Time{}, time.Time{}
	c.stats.Dials++
	c.trace("dial", c.current, "opening socket "+utoa(c.current)+" (attempt "+strconv.Itoa(c.backoff.Attempt())+")")
	c.emit(Effect{Kind: EffDial, Socket: c.current})
}

// lost handles the loss of the current socket: every layer goes down, the
// registry rejects what was in flight, and a reconnect is scheduled.
func (c *Core) lost(now time.Time, watchdog bool) {
	c.transport = Down
	c.current = 0
	c.connectAt, c.watchdogAt, c.subscribeAt = time.Time{}, time.Time{}, time.Time{}
	c.rejectAll("connection lost", false)
	c.scheduleReconnect(now, watchdog)
}

func (c *Core) send(m protocol.Message) {
	if c.current == 0 {
		return
	}
	c.emit(Effect{Kind: EffSend, Socket: c.current, Frame: protocol.Encode(m)})
}

// after finishes every step: publish the state if it changed, then arm the
// timer for the earliest deadline.
func (c *Core) after(now time.Time) {
	c.noteState(now)
	next := earliest(earliest(earliest(c.connectAt, c.watchdogAt), earliest(c.subscribeAt, c.resetAt)), c.nextRequestDeadline())
	for _, t := range c.reconnects {
		next = earliest(next, t)
	}
	if !next.Equal(c.armed) {
		c.armed = next
		c.emit(Effect{Kind: EffTimer, At: next})
	}
}

// earliest returns the earlier of two deadlines; zero means unset.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func due(t, now time.Time) bool { return !t.IsZero() && !t.After(now) }

func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
