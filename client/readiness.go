package client

import "time"

// Level is the state of one readiness layer.
type Level uint8

const (
	// Down: the layer is not working.
	Down Level = iota
	// Pending: the layer is being established (socket dialing, first ping
	// or subscription acknowledgement not yet received).
	Pending
	// Up: the layer works.
	Up
	// Off: this configuration does not track the layer (an earlier stage);
	// it does not count against READY.
	Off
)

func (l Level) String() string {
	switch l {
	case Down:
		return "down"
	case Pending:
		return "pending"
	case Up:
		return "up"
	case Off:
		return "off"
	}
	return "invalid"
}

// State is what the client tells its embedding app about readiness.
type State struct {
	Transport Level // is the socket open?
	Protocol  Level // is the peer alive (a ping within its deadline)?
	Service   Level // has the server acknowledged the app's subscriptions (with none: the session)? Down while it refuses one (Refused)
	// Ready is true when every tracked layer is Up.
	Ready bool
	// Epoch counts sockets: it increments with every new socket the client
	// opens, tags every update and reply the app sees, and keeps its value
	// between sockets (it never drops back to 0).
	Epoch uint64
	// Online is the network's state as the platform reports it.
	Online bool
	// Attempt is the number of reconnect attempts since the backoff last
	// reset.
	Attempt int
	// Ended is the terminal state the session is in, or NotEnded (""):
	// ended, forbidden, refresh_exhausted, gave_up or stopped (Stop was
	// called: Ended == Stopped). Once ended,
	// the client dials nothing and arms no timer until Reconnect.
	Ended Terminal
	// EndCode is the close code that ended the session, if one did.
	EndCode int
	// EndReason is the reason the server closed with when it ended the
	// session ("bad token", "auth required", "forbidden", an app's
	// Disconnect reason): the server's own text, at most 123 bytes; ""
	// for none.
	EndReason string
	// LastError says why the client last lost its connection or failed to
	// get one; zero once READY.
	LastError Failure
	// Via is the transport of the current socket, or between sockets of
	// the next dial: TransportWebSocket, or at stage 8 TransportHTTP
	// after the fallback (Transport above is the transport layer's level).
	Via Transport
	// NotReadySince is when the client stopped being READY (or started,
	// if it never was); zero while READY (stage 8).
	NotReadySince time.Time
	// Degraded: not READY for Config.DegradedAfter (3 s); Offline: for
	// Config.OfflineAfter (30 s): the banners apps draw (stage 8). Offline
	// is not the opposite of Online, which is the platform's network.
	Degraded, Offline bool
	// Refused is the first topic the app asked for (in the order the
	// topics were first named) that the server refused on this connection
	// for good (forbidden, invalid_topic, too_many_subscriptions, or a
	// code of the app's own), with the server's code and message; zero
	// for none. Refusals counts them. A refusal holds the service layer
	// Down, so the client is not READY, until the app unsubscribes the
	// topic (Core.Unsubscribe); the next connection asks for it again.
	// The server's transient errors (too_many_topics, unavailable, ...)
	// are not refusals: the topic is Pending and asked for again.
	Refused  TopicError
	Refusals int
	// Follower: another tab holds the connection; the layers, READY, Via,
	// Epoch and the not-READY fields are the leader's, as the driver last
	// relayed them (LeaderState).
	Follower bool
}

func ready(t, p, s Level) bool {
	ok := func(l Level) bool { return l == Up || l == Off }
	return t == Up && ok(p) && ok(s)
}

// state computes the current State. Losing a lower layer resets the ones
// above it: protocol and service are Down whenever transport is not Up.
func (c *Core) state() State {
	if c.follower && c.ended == NotEnded {
		st := c.leaderState
		st.Follower, st.Online = true, c.rc.IsOnline()
		return st
	}
	st := State{Transport: c.transport, Protocol: Off, Service: Off, Epoch: uint64(c.nextSocket),
		Online: c.rc.IsOnline(), Attempt: c.rc.BackoffAttempt(), Ended: c.ended, EndCode: c.endCode, EndReason: c.endReason,
		Via: c.via, NotReadySince: c.notReadySince, Degraded: c.degraded, Offline: c.offline}
	if c.current == 0 {
		st.Via = c.rc.NextTransport()
	}
	if c.cfg.on.Heartbeat {
		st.Protocol = c.protocol
		if c.transport != Up {
			st.Protocol = Down
		}
	}
	if c.cfg.on.Service {
		st.Service = Down
		if c.transport == Up {
			st.Service = c.serviceLevel()
			st.Refused, st.Refusals = c.refusals()
			if c.moving {
				// A move between transports (transport.go): the old socket
				// still serves the app until the new one does.
				st.Service = Up
				st.Refused, st.Refusals = TopicError{}, 0
			}
		}
	}
	st.Ready = ready(st.Transport, st.Protocol, st.Service)
	if st.Ready {
		c.lastErr = Failure{}
	}
	st.LastError = c.lastErr
	return st
}

// noteState emits a state effect if the state changed, and starts or stops
// the readiness cooldown that resets the backoff.
func (c *Core) noteState(now time.Time) {
	st := c.state()
	if st == c.lastState && c.stateEmitted {
		return
	}
	becameReady := st.Ready && !c.lastState.Ready && !c.follower
	if becameReady {
		c.readySince = now
		c.onReady(now)
		c.reportReady(now) // before noteRecovery, which forgets when READY was lost
		c.noteRecovery(now)
		c.readyNow()
		st = c.state()
	}
	if !st.Ready && c.lastState.Ready && !c.follower {
		c.onNotReady(now)
		c.notReady(now)
		st = c.state()
	}
	c.reportSawReady(st)
	c.lastState, c.stateEmitted = st, true
	c.emit(Effect{Kind: EffState, State: st})
}

// maxRecoveries bounds the recovery samples the quantiles are taken over.
const maxRecoveries = 256

// noteRecovery counts a READY and, if READY was lost before, how long the
// client was without it; the quantiles are recomputed here, once per
// recovery, not on every Stats call.
func (c *Core) noteRecovery(now time.Time) {
	c.stats.ReadyCount++
	if c.lostReadyAt.IsZero() {
		return
	}
	d := now.Sub(c.lostReadyAt)
	c.lostReadyAt = time.Time{}
	c.stats.Recoveries++
	c.recordReady(now, d)
	if len(c.recoveries) < maxRecoveries {
		c.recoveries = append(c.recoveries, d)
	} else {
		i := (c.stats.Recoveries - 1) % maxRecoveries // the oldest: #1 is in slot 0
		c.sortedRecoveries = removeDuration(c.sortedRecoveries, c.recoveries[i])
		c.recoveries[i] = d
	}
	// The same durations kept sorted as they come (one insertion and at
	// most one removal, no sort): not slices.Sort, whose pdqsort for
	// time.Duration was code of its own in the browser client.
	c.sortedRecoveries = insertDuration(c.sortedRecoveries, d)
	sorted := c.sortedRecoveries
	c.stats.RecoveryP50 = sorted[(len(sorted)-1)*50/100]
	c.stats.RecoveryP99 = sorted[(len(sorted)-1)*99/100]
}

// insertDuration inserts d into s, which is in ascending order, after the
// values equal to it.
func insertDuration(s []time.Duration, d time.Duration) []time.Duration {
	i, j := 0, len(s)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s[h] > d {
			j = h
		} else {
			i = h + 1
		}
	}
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = d
	return s
}

// removeDuration removes one d from s, which is in ascending order and
// holds d.
func removeDuration(s []time.Duration, d time.Duration) []time.Duration {
	i, j := 0, len(s)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s[h] < d {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == len(s) || s[i] != d {
		return s // not there: cannot happen while both rings agree
	}
	return append(s[:i], s[i+1:]...)
}

// notReady starts the count of time without READY (stage 8): the
// Degraded and Offline flips are deadlines from now.
func (c *Core) notReady(now time.Time) {
	if !c.cfg.on.WhereUsersAre || c.follower {
		return // a follower's are the leader's
	}
	c.notReadySince, c.degraded, c.offline = now, false, false
	c.armNotReady(now)
}

// armNotReady arms the flips not yet made, or makes the ones already due
// (after a fresh session, or a takeover, the count goes on).
func (c *Core) armNotReady(now time.Time) {
	if c.notReadySince.IsZero() {
		return
	}
	flip := func(on *bool, d deadline, after time.Duration) {
		if *on {
			return
		}
		if at := c.notReadySince.Add(after); at.After(now) {
			c.dl[d] = at
		} else {
			*on = true
		}
	}
	flip(&c.degraded, dlDegraded, c.cfg.DegradedAfter)
	flip(&c.offline, dlOffline, c.cfg.OfflineAfter)
}

// readyNow ends the count: READY again.
func (c *Core) readyNow() {
	c.notReadySince, c.degraded, c.offline = time.Time{}, false, false
	c.dl[dlDegraded], c.dl[dlOffline] = time.Time{}, time.Time{}
}

func (c *Core) degradedNow(now time.Time) {
	c.degraded = true
	c.trace("degraded", c.current, "not READY for "+c.cfg.DegradedAfter.String())
}

func (c *Core) offlineNow(now time.Time) {
	c.offline = true
	c.trace("offline-banner", c.current, "not READY for "+c.cfg.OfflineAfter.String())
}
