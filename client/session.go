package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The session contract (stage 6), the core's side of it: tokens before
// every dial, the reconnect window as a deadline, terminal states, a fresh
// session on demand, no reconnect while the page is hidden, and one
// sanitized Record per reconnect decision. The decisions themselves are the
// Reconnector's (reconnector_budget.go for the budget, the window and
// the terminal states); the classification is classify.go's.

// Record is one reconnect decision, for logs, the demo's event list and an
// operator's replay (records.go). It holds no token, no payload and none
// of the peer's text: every field is a time, a number, a bounded enum, the
// random session ref or the app's own topic names.
type Record struct {
	At         time.Time     // when it was observed: the instant of the event the decision followed
	Session    string        // random, opaque: which client session
	Epoch      uint64        // the last socket's number
	Attempt    int           // the backoff's attempt count after this decision
	Class      Class         // what the disconnect meant
	By         By            // who ended the connection or attempt
	Code       int           // its close code (1006: none)
	Admission  Admission     // what the server made of the lost attempt: admitted, refused, unreached
	Cap        time.Duration // the backoff's cap in force (the policy's, as the cap growth raised it); 0: none known
	Delay      time.Duration // the delay chosen before the next dial
	RetryAfter time.Duration // the server's retry-after; 0 for none
	BudgetLeft int           // attempts left in this run; -1: unbounded
	WindowLeft time.Duration // time left in this run; -1: unbounded
	Acked      []TopicSeq    // the last event delivered per topic, in the order first named; nil: none yet
	Outcome    Outcome       // reconnect, refresh, wait_online, wait_visible, wait_leader, ready, or the terminal state
	// Recovered is, for OutcomeReady (the record that ends a run of
	// failures: READY again), how long the client was not READY.
	Recovered time.Duration
}

func (c *Core) record(r Record) {
	c.stats.Records++
	r.Acked = c.acked()
	c.emit(Effect{Kind: EffRecord, Record: r})
}

// sessionRef draws an opaque session reference from the config's random
// source (the core has none of its own).
func sessionRef(rand func() float64) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 12)
	for i := range b {
		b[i] = hex[int(rand()*16)&15]
	}
	return string(b)
}

// TokenReady reports the token hook's answer to an EffToken: the core dials
// now and sends the token in the socket's first frame, or, for an in-band
// refresh (Effect.Refresh), sends it on the live socket (refresh.go).
func (c *Core) TokenReady(token string, now time.Time) {
	if c.ended != NotEnded {
		return
	}
	if c.cand.tokenAsk {
		// For the re-probe's socket (transport.go).
		c.cand.tokenAsk = false
		if token == "" || len(token) > protocol.MaxTokenBytes {
			c.dropCandidate(now, false)
		} else {
			c.cand.token = token
			c.dialCandidate(now)
		}
		c.after(now)
		return
	}
	if !c.tokenWait {
		if c.refreshWaits() {
			c.refreshToken(token, now) // an in-band refresh's (refresh.go)
			c.after(now)
		}
		return
	}
	c.tokenWait = false
	c.dl[dlToken] = time.Time{}
	if token == "" || len(token) > protocol.MaxTokenBytes {
		c.trace("token-failed", 0, "the token hook returned an unusable token")
		c.tokenLost(now)
	} else {
		c.token = token
		c.dial(now)
	}
	c.after(now)
}

// TokenFailed reports that the token hook failed: a failed attempt, counted
// against the budget like any other.
func (c *Core) TokenFailed(now time.Time) {
	if c.ended != NotEnded {
		return
	}
	if c.cand.tokenAsk {
		c.stats.TokenFailures++
		c.dropCandidate(now, false)
		c.after(now)
		return
	}
	if !c.tokenWait {
		if c.refreshWaits() {
			c.refreshHookFailed(now) // an in-band refresh's (refresh.go)
			c.after(now)
		}
		return
	}
	c.tokenWait = false
	c.dl[dlToken] = time.Time{}
	c.trace("token-failed", 0, "the token hook failed")
	c.tokenLost(now)
	c.after(now)
}

func (c *Core) tokenTimedOut(now time.Time) {
	c.tokenWait = false
	c.trace("token-failed", 0, "the token hook did not answer within "+c.cfg.TokenTimeout.String())
	c.tokenLost(now)
}

func (c *Core) tokenLost(now time.Time) {
	c.stats.TokenFailures++
	c.connectionLost(now, Cause{By: ByClient, Code: protocol.CloseAbnormal, Fail: FailToken})
}

// armWindow keeps the window deadline in step with the Reconnector's run.
func (c *Core) armWindow() {
	if at, ok := c.rc.WindowDeadline(); ok {
		c.dl[dlWindow] = at
	}
}

// windowRanOut ends a run of failures that lasted the whole window, even
// while a dial, a watchdog or a connect timeout would run past it. A client
// that is READY right now is left alone; it gives up at its next failure
// unless it stays READY through the cooldown first.
func (c *Core) windowRanOut(now time.Time) {
	// A connection held from READY only by topics the server refused
	// works: the refusal is the app's to fix (State.Refused), and a
	// window of failures does not close it.
	if st := c.state(); st.Ready || (st.Refusals > 0 && st.Transport == Up && (st.Protocol == Up || st.Protocol == Off)) {
		c.rc.WindowRanOutWhileReady()
		return
	}
	c.record(Record{At: now, Session: c.session, Epoch: uint64(c.nextSocket), Attempt: c.rc.BackoffAttempt(), Class: ClassBackoff, By: ByClient,
		Code: protocol.CloseAbnormal, Cap: c.rc.CapInForce(), BudgetLeft: -1, WindowLeft: 0, Outcome: Outcome(GaveUp)})
	if c.current != 0 && c.transport != Down {
		c.emitClose(c.current, protocol.CloseNormal, "reconnect window over")
	}
	c.end(now, GaveUp, 0, "")
}

// Reconnect starts a fresh session with a fresh budget and window: after a
// terminal state (not Stop) it dials again; a client that is down dials at
// once; a connected one only starts its budget over.
func (c *Core) Reconnect(now time.Time) {
	if c.ended == Stopped || !c.started {
		return
	}
	c.rc.NewSession()
	c.dl[dlWindow] = time.Time{}
	if c.ended != NotEnded {
		c.ended, c.endCode, c.endReason = NotEnded, 0, ""
		c.trace("reconnect", 0, "fresh session")
		c.armNotReady(now)
		c.dial(now)
	} else if c.transport == Down && !c.tokenWait {
		c.reconnects = nil
		c.dial(now)
	}
	c.after(now)
}

// Hidden reports that the page was hidden (Session): no reconnect is
// scheduled while it is; the watchdog keeps running.
func (c *Core) Hidden(now time.Time) {
	if c.ended != NotEnded || c.rc.IsHidden() {
		return
	}
	if c.rc.WentHidden() && len(c.reconnects) > 0 {
		c.reconnects = nil
		c.trace("reconnect-cancelled", 0, "scheduled reconnect cancelled while the page is hidden")
	}
	c.after(now)
}

// Visible reports that the page is visible again (Session): the backoff
// resets to attempt 0 and a client that is down reconnects after a small
// random delay.
func (c *Core) Visible(now time.Time) {
	if c.ended != NotEnded || !c.rc.IsHidden() {
		return
	}
	if c.rc.BecameVisible() {
		c.reconnectSoon(now)
	}
	c.appWaits(now) // the user looks at the page: is its connection alive (heartbeat.go)?
	c.after(now)
}
