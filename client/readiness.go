package client

import (
	"slices"
	"time"
)

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
	Service   Level // has the server acknowledged the app's subscriptions (with none: the session)?
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
	// LastError says why the client last lost its connection or failed to
	// get one; zero once READY.
	LastError Failure
}

func ready(t, p, s Level) bool {
	ok := func(l Level) bool { return l == Up || l == Off }
	return t == Up && ok(p) && ok(s)
}

// state computes the current State. Losing a lower layer resets the ones
// above it: protocol and service are Down whenever transport is not Up.
func (c *Core) state() State {
	st := State{Transport: c.transport, Protocol: Off, Service: Off, Epoch: uint64(c.nextSocket),
		Online: c.rc.IsOnline(), Attempt: c.rc.Attempt(), Ended: c.ended, EndCode: c.endCode}
	if c.cfg.Features.Heartbeat {
		st.Protocol = c.protocol
		if c.transport != Up {
			st.Protocol = Down
		}
	}
	if c.cfg.Features.Service {
		st.Service = Down
		if c.transport == Up {
			st.Service = c.serviceLevel()
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
	if st.Ready && !c.lastState.Ready {
		c.readySince = now
		c.onReady(now)
		c.noteRecovery(now)
	}
	if !st.Ready && c.lastState.Ready {
		c.onNotReady(now)
	}
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
	if len(c.recoveries) < maxRecoveries {
		c.recoveries = append(c.recoveries, d)
	} else {
		c.recoveries[c.stats.Recoveries%maxRecoveries] = d
	}
	sorted := slices.Clone(c.recoveries)
	slices.Sort(sorted)
	c.stats.RecoveryP50 = sorted[(len(sorted)-1)*50/100]
	c.stats.RecoveryP99 = sorted[(len(sorted)-1)*99/100]
}
