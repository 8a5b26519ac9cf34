package client

import (
	"strconv"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Stats counts what a Core has seen since New.
type Stats struct {
	Dials             int   // sockets asked for (connection attempts)
	Opens             int   // open events accepted
	Closes            int   // close events accepted
	Pings             int   // pings accepted
	WatchdogFired     int   // heartbeat watchdog expiries
	StaleEvents       int   // events from replaced sockets ignored
	ForeignEvents     int   // events from replaced sockets applied (no StaleFilter)
	SubscribesSent    int   // subscribe frames sent
	Updates           int   // updates delivered to the app, every topic together (Topics() has them per topic)
	LastSeq           int64 // the first topic's cursor: Config.Topic's, or without one the first topic the app subscribed to
	SeqGaps           int   // gaps in any topic: an update past cursor+1 (one socket or across a reconnect), or a continuity loss
	MissedUpdates     int64 // updates those gaps skipped, in total (known ranges only): lost for good
	Duplicates        int   // updates at or below their topic's cursor delivered to the app (without Resume)
	DuplicatesDropped int   // the same, dropped (Resume)
	Replayed          int   // updates delivered from a replay (subscribe with since)
	ContinuityLost    int   // ContinuityLost effects: the server no longer had the start of a gap
	DroppedResponses  int   // responses matching no pending request (late or unknown)
	BadFrames         int   // frames that failed to decode
	ServerErrors      int   // error frames from the server
	Authenticated     int   // tickets the server accepted
	Welcomes          int   // welcome frames: connections the server said it serves
	TokensRequested   int   // calls of the token hook
	TokenRefreshes    int   // forced ones (after a 4001)
	TokenFailures     int   // token hook failures or timeouts
	Refreshes         int   // in-band refreshes the server took: a token's expiry moved without a reconnect (refresh.go)
	RefreshFailures   int   // in-band refreshes that failed (hook, no answer, refused); after the last try the 4001 at expiry stands
	Records           int   // reconnect decisions recorded
	// Recovery: how long the client was not READY between two READYs.
	ReadyCount          int           // times the client became READY
	Recoveries          int           // READY again after losing it
	RecoveryP50         time.Duration // over the last 256 recoveries
	RecoveryP99         time.Duration
	RetryAftersHonoured int // reconnects that waited out a server's retry-after
	// Probe before kill (stage 6): probes sent, answered (by their answer
	// or any other frame), and the smoothed round trip of the answers.
	Probes         int
	ProbesAnswered int
	ProbeRTT       time.Duration
	// Stage 8.
	ClockJumps int // timers found far late, by a Tick or as a close was heard (clock.go)
	SendStalls int // sockets closed because their sends stopped draining
	HTTPProbes int // EffProbeHTTP effects: WebSocket attempts kept failing
	Moves      int // moves from the fallback transport back to the preferred one
	Forwarded  int // requests a follower tab forwarded to its leader
	Resent     int // queued requests sent again after a reconnect, with their keys
	Reports    int // readiness reports sent (report.go)
}

// Core is the client's state machine. It is not safe for concurrent use:
// one driver goroutine (or the browser's event loop) owns it.
type Core struct {
	cfg Config
	rc  Reconnector

	started   bool
	ended     Terminal // set: the session is over (stopped included)
	endCode   int      // the close code that ended it, if one did
	endReason string   // and the server's reason with it (Cause.Reason)
	session   string   // the session ref for records: random, opaque

	nextSocket SocketID
	current    SocketID // 0: none
	transport  Level
	protocol   Level
	served     bool      // the server served this socket's session: a welcome, or an answer to a subscribe (service.go)
	via        Transport // the current socket's transport
	proven     bool      // the current socket saw its first ping (or opened, without Heartbeat)

	// Stage 8 (transport.go, sendstall.go, clock.go, tabs.go).
	cand        candidate // the preferred transport's socket beside a live fallback one
	draining    SocketID  // the socket a move left: its responses still settle its requests
	moving      bool      // a move from a READY socket whose successor is not yet serving: the old one's updates count
	follower    bool      // another tab holds the connection
	leaderState State     // a follower's: the leader's, as relayed (tabs.go)
	jumped      bool      // this Tick found the clock jumped: the watchdog probes instead of killing
	wokeAt      time.Time // the last resume, or clock jump on a visible page, not yet used or outlived (clock.go); zero: none
	jumpAt      time.Time // when the last jump was found: lateness counts from it, once (clock.go)
	buffered    int       // the current socket's last reported queued bytes
	stallProbe  uint64    // the id of the send-stall probe out, if any

	notReadySince     time.Time // the client stopped being READY then (WhereUsersAre)
	degraded, offline bool      // not READY for DegradedAfter, OfflineAfter

	// dl holds the deadlines kept in a slot (deadlines.go); zero means not
	// armed. The driver holds one timer for the earliest deadline.
	dl [numDeadlines]time.Time
	// reconnects are the scheduled dials. With StaleFilter there is at most
	// one; without it every accepted close schedules its own, as a naive
	// onclose handler does, so stale closes multiply the sockets.
	reconnects []time.Time
	armed      time.Time

	// Auth: a token is asked for (EffToken) before each dial; forceToken
	// makes the next one a forced refresh; token waits for the socket's
	// open to be sent in the auth frame, then is dropped.
	tokenWait  bool
	forceToken bool
	token      string
	rf         refreshState // the current socket's token expiry and the in-band refresh (refresh.go)

	pingInterval time.Duration
	lastPing     time.Time // when the current socket's last ping arrived (heartbeat.go)
	probing      bool      // a probe is out (heartbeat.go)
	probeID      uint64    // the id of the last probe sent
	probeSent    time.Time // when it was sent
	srtt         time.Duration
	readySince   time.Time
	lostReadyAt  time.Time
	lastErr      Failure         // cleared at READY
	recoveries   []time.Duration // ring of the last maxRecoveries
	// sortedRecoveries holds recoveries' durations in ascending order,
	// for the quantiles.
	sortedRecoveries []time.Duration

	topics  []*topicState // in the order they were first named (Config.Topic first)
	primary *topicState   // the topic Stats.LastSeq follows: Config.Topic, or the first the app subscribed to

	nextID  uint64
	pending map[uint64]*pendingRequest
	queue   []*pendingRequest // by deadline
	waiting []*pendingRequest // queued requests not sent yet, in id order (queue.go)

	out outage // since the last readiness report (report.go)

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
	c := &Core{cfg: cfg, rc: reconnectorOf(cfg), pending: map[uint64]*pendingRequest{}, follower: cfg.Follower}
	if cfg.Follower {
		c.rc.BecameFollower()
		c.leaderState = State{Via: c.rc.NextTransport()}
	}
	c.session = sessionRef(cfg.Rand)
	c.initTopics()
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

// emit queues e. It is kept out of line (go:noinline): inlined, the
// append of the large Effect was copied into every one of its callers
// (the browser client's size: docs/performance.md); one call per effect costs
// nothing next to the driver's handling of it.
//
//go:noinline
func (c *Core) emit(e Effect) { c.effects = append(c.effects, e) }

// emitClose emits an EffClose. One function builds the Effect for every
// close the core asks for: an Effect literal at each site is code of its
// own in the wasm (the literal's offsets differ per frame), not a repeat
// brotli can match.
func (c *Core) emitClose(s SocketID, code int, reason string) {
	c.emit(Effect{Kind: EffClose, Socket: s, Code: code, Reason: reason})
}

// trace emits a diagnostic event when Config.Trace is on. The check stays
// inlined (it is on the per-frame path); the emission is out of line.
func (c *Core) trace(kind string, s SocketID, detail string) {
	if c.cfg.Trace {
		c.emitTrace(kind, s, detail)
	}
}

//go:noinline
func (c *Core) emitTrace(kind string, s SocketID, detail string) {
	c.emit(Effect{Kind: EffLog, Event: Event{Kind: kind, Socket: s, Detail: detail}})
}

// Start opens the first socket (a follower tab's core opens none until
// BecameLeader).
func (c *Core) Start(now time.Time) {
	if c.started || c.ended != NotEnded {
		return
	}
	c.started = true
	c.reportStart(now)
	c.notReady(now)
	if !c.follower {
		c.dial(now)
	}
	c.after(now)
}

// Opened reports that socket s opened.
func (c *Core) Opened(s SocketID, now time.Time) {
	if c.ended != NotEnded || c.candidateOpened(s, now) || !c.accept(s, "open") {
		return
	}
	c.stats.Opens++
	c.transport = Up
	c.dl[dlConnect] = time.Time{}
	c.rc.SocketOpened()
	if !c.cfg.on.Heartbeat {
		c.provenNow(now) // nothing more to wait for
	}
	c.trace("open", s, "socket "+s.String()+" open")
	if c.token != "" {
		// The ticket goes first, before anything else, and is not kept.
		c.send(protocol.Message{Type: protocol.TypeAuth, Token: c.token})
		c.token = ""
	}
	c.heartbeatOpened(now)
	c.serviceOpened(now)
	c.after(now)
}

// Received reports a text frame that arrived on socket s.
func (c *Core) Received(s SocketID, frame []byte, now time.Time) {
	if c.ended != NotEnded || c.candidateReceived(s, frame, now) || c.drainingReceived(s, frame, now) || !c.accept(s, "message") {
		return
	}
	m, err := protocol.Decode(frame)
	if err != nil {
		c.stats.BadFrames++
		code := "bad_json"
		if de, ok := err.(*protocol.DecodeError); ok { // Decode's errors are never wrapped
			code = de.Code // a stable code: the detail may quote the peer
		}
		c.trace("bad-frame", s, "frame refused: "+code)
		return
	}
	c.heard(m, now)
	switch m.Type {
	case protocol.TypeProbeAck:
		// handled above; a late answer is harmless; the send-stall probe's
		// answer proves the send path
		c.sendProbeAnswered(m.ID, now)
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
	case protocol.TypeAuthenticated:
		c.stats.Authenticated++
		c.trace("authenticated", s, "ticket accepted")
		c.onAuthenticated(s, m, now)
	case protocol.TypeWelcome:
		c.onWelcome(s, m)
	case protocol.TypePresence:
		c.onPresence(m)
	case protocol.TypeError:
		c.stats.ServerErrors++
		c.trace("server-error", s, "error frame from the server")
		if m.ID != 0 {
			c.onResponse(m) // about one of our requests: it settles now, not at its timeout
		} else if m.Topic != "" {
			c.onTopicError(m)
		} else {
			c.refreshRefused(now)
		}
	default:
		c.stats.BadFrames++
		c.trace("bad-frame", s, "unexpected "+string(m.Type)+" from server")
	}
	c.after(now)
}

// Closed reports that socket s closed (or failed to open) with code and
// reason; 1006 when the platform gives no code. The reason is read only
// for a retry-after ("retry-after-ms=N"): it is the peer's text and is
// never kept, logged or recorded. A driver whose dial was refused over
// HTTP with a Retry-After passes it the same way.
func (c *Core) Closed(s SocketID, code int, reason string, now time.Time) {
	if c.ended != NotEnded || c.candidateClosed(s, code, now) || c.drainingClosed(s, now) || !c.accept(s, "close") {
		return
	}
	c.stats.Closes++
	c.trace("close", s, "socket "+s.String()+" closed with "+strconv.Itoa(code))
	// A frozen page hears of its socket's close before any late timer
	// fires: the socket's own deadlines, overdue, say it slept (clock.go).
	c.checkClock(now)
	c.jumped = false // the watchdog's flag: only a Tick's jump makes it probe
	if due(c.dl[dlCooldown], now) {
		// READY for the cooldown, its timer late (the page slept): the
		// backoff resets before the loss is decided, as it would have
		// awake.
		c.dl[dlCooldown] = time.Time{}
		c.cooldownDone(now)
	}
	c.connectionLost(now, causeOf(code, reason))
	c.after(now)
}

// Tick reports that the timer armed by an EffTimer fired. Calling it early
// or spuriously is harmless: only deadlines at or before now act.
func (c *Core) Tick(now time.Time) {
	if c.ended != NotEnded {
		return
	}
	c.armed = time.Time{}
	c.checkClock(now)
	for d := range numDeadlines {
		if c.ended == NotEnded && due(c.deadlineAt(d), now) {
			c.dl[d] = time.Time{}
			deadlines[d].fire(c, now)
		}
	}
	c.jumped = false
	c.after(now)
}

// Stop closes the socket with 1000, rejects every pending request with
// ErrConnectionClosed and cancels every timer. The Core does nothing after.
func (c *Core) Stop(now time.Time) {
	if c.ended == Stopped {
		return
	}
	if c.ended == NotEnded && c.current != 0 && c.transport != Down {
		c.emitClose(c.current, protocol.CloseNormal, "client stopped")
	}
	c.trace("stop", c.current, "client stopped")
	c.end(now, Stopped, 0, "")
	c.after(now)
}

// dial opens the next socket, asking for a token first when the driver has
// a token hook. A follower tab dials nothing.
func (c *Core) dial(now time.Time) {
	if c.follower {
		return
	}
	if c.cfg.Auth && !c.tokenWait && c.token == "" {
		c.tokenWait = true
		c.transport, c.protocol, c.served = Pending, Down, false
		c.dl[dlToken] = now.Add(c.cfg.TokenTimeout)
		c.stats.TokensRequested++
		if c.forceToken {
			c.stats.TokenRefreshes++
		}
		c.emit(Effect{Kind: EffToken, Force: c.forceToken})
		c.forceToken = false
		return
	}
	c.nextSocket++
	c.current = c.nextSocket
	c.transport = Pending
	c.protocol, c.served = Down, false
	c.via, c.proven, c.buffered, c.stallProbe = c.rc.NextTransport(), false, 0, 0
	c.clearScope(scopeSocket)
	c.dl[dlConnect] = now.Add(c.cfg.ConnectTimeout)
	c.stats.Dials++
	detail := "opening socket " + c.current.String() + " (attempt " + strconv.Itoa(c.rc.BackoffAttempt()) + ")"
	if c.via != TransportWebSocket {
		detail += " over " + c.via.String()
	}
	c.trace("dial", c.current, detail)
	c.emit(Effect{Kind: EffDial, Socket: c.current, Transport: c.via, Token: c.token})
}

// connectionLost handles the loss of the current socket (or of an attempt): every
// layer goes down, the registry rejects what was in flight, and the
// reconnect rules decide what comes next.
func (c *Core) connectionLost(now time.Time, cause Cause) {
	lost := c.current
	if lost != 0 {
		cause.Via, cause.Proven, cause.Opened = c.via, c.proven, c.transport == Up
	}
	c.transport = Down
	c.current = 0
	c.probing = false
	c.clearScope(scopeSocket)
	c.dropSockets(false)
	if lost != 0 {
		c.rejectOn(lost, "connection lost", false)
	}
	c.lastErr = failureOf(cause)
	c.reportLoss(cause, c.lastErr)
	c.trace("error", 0, c.lastErr.Message())
	c.scheduleReconnect(now, cause)
}

// dropSockets closes the candidate (and, ending, the draining socket): a
// move needs a live socket to move from.
func (c *Core) dropSockets(ending bool) {
	if c.cand.id != 0 {
		c.emitClose(c.cand.id, protocol.CloseNormal, "connection lost")
	}
	c.cand = candidate{}
	c.moving = false
	if ending && c.draining != 0 {
		c.emitClose(c.draining, protocol.CloseNormal, "session over")
		c.draining = 0
	}
}

// end makes the session terminal: no dial, no timer, every pending request
// rejected with ErrConnectionClosed.
func (c *Core) end(now time.Time, t Terminal, code int, reason string) {
	c.ended, c.endCode, c.endReason = t, code, reason
	c.transport = Down
	c.current = 0
	c.dropSockets(true)
	c.rejectOn(0, "session "+string(t), true)
	c.dl = [numDeadlines]time.Time{}
	c.reconnects = nil
	c.tokenWait, c.token = false, ""
	if t != Stopped {
		c.trace("ended", 0, "session ended: "+string(t))
	}
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
	c.moved()
	c.noteState(now)
	if len(c.waiting) > 0 && c.lastState.Ready && c.ended == NotEnded {
		// What waited for READY goes now, in order (queue.go).
		c.sendWaiting(now)
	}
	if len(c.waiting) > 0 && !c.lastState.Ready {
		c.failHopeless(now)
	}
	var next time.Time
	for d := range numDeadlines {
		next = earliest(next, c.deadlineAt(d))
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
