package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The deadlines the one timer serves, one row each: its scope and what
// fires it. after() arms the timer for the earliest of them, Tick fires the
// due ones in this order (the order is the effects' order: tests pin it), a
// dial or the loss of a socket clears the socket's by scope, and end()
// clears them all. A new deadline is a name and a row here: Tick, after(),
// dial, loss and end need no edit.
type deadline uint8

const (
	dlConnect   deadline = iota // the socket must open by then
	dlWatchdog                  // a ping (or a probe's answer) must arrive by then (heartbeat.go)
	dlAwait                     // the app waits on the connection: a frame by then, or a probe (heartbeat.go)
	dlSubscribe                 // "subscribed" must arrive by then (service.go)
	dlRequest                   // the earliest pending request times out then (registry.go)
	dlCooldown                  // READY this long resets the backoff (reconnect.go)
	dlToken                     // the token hook must answer by then (session.go)
	dlWindow                    // the run of failures gives up then (session.go)
	dlReconnect                 // the earliest scheduled dial (reconnect.go)
	dlSendStall                 // queued bytes that do not drain by then: probe, then give up (sendstall.go)
	dlCandidate                 // the preferred transport's socket must open and ping by then (transport.go)
	dlReprobe                   // on the fallback transport, try the preferred one again then (transport.go)
	dlDegraded                  // not READY this long: State.Degraded (readiness.go)
	dlOffline                   // not READY this long: State.Offline (readiness.go)
	dlRefresh                   // ask the token hook for an in-band refresh then (refresh.go)
	dlRefreshBy                 // the refresh in flight must be answered by then (refresh.go)
	numDeadlines
)

// scope says what a deadline belongs to, and so what clears it.
type scope uint8

const (
	// scopeSocket: the current socket's. A dial or a loss clears it.
	scopeSocket scope = iota + 1
	// scopeSession: outlives sockets. It is met or cancelled by its own
	// rule, or cleared when the session ends.
	scopeSession
	// scopeRequest: the requests' own, kept in their queue in deadline
	// order (registry.go), not in a slot. Their registry settles them.
	scopeRequest
)

// deadlineRow is one deadline: its scope, what fires it, and, if set, where
// its instant lives instead of the slot (the request queue, the list of
// scheduled dials).
type deadlineRow struct {
	scope scope
	fire  func(*Core, time.Time)
	at    func(*Core) time.Time
}

// deadlines is the table, filled in by init: the handlers it names clear
// deadlines by scope through it, a cycle a package-level initializer may
// not have.
var deadlines [numDeadlines]deadlineRow

func init() {
	deadlines = [numDeadlines]deadlineRow{
		dlConnect:   {scope: scopeSocket, fire: (*Core).connectTimedOut},
		dlWatchdog:  {scope: scopeSocket, fire: (*Core).watchdogFired},
		dlAwait:     {scope: scopeSocket, fire: (*Core).awaitedInVain},
		dlSubscribe: {scope: scopeSocket, fire: (*Core).subscribeTimedOut},
		dlRequest:   {scope: scopeRequest, fire: (*Core).expireRequests, at: (*Core).nextRequestDeadline},
		dlCooldown:  {scope: scopeSession, fire: (*Core).cooldownDone},
		dlToken:     {scope: scopeSession, fire: (*Core).tokenTimedOut},
		dlWindow:    {scope: scopeSession, fire: (*Core).windowRanOut},
		dlReconnect: {scope: scopeSession, fire: (*Core).dialDue, at: (*Core).nextDial},
		dlSendStall: {scope: scopeSocket, fire: (*Core).sendStalled},
		dlCandidate: {scope: scopeSocket, fire: (*Core).candidateTimedOut},
		dlReprobe:   {scope: scopeSession, fire: (*Core).reprobeDue},
		dlDegraded:  {scope: scopeSession, fire: (*Core).degradedNow},
		dlOffline:   {scope: scopeSession, fire: (*Core).offlineNow},
		dlRefresh:   {scope: scopeSocket, fire: (*Core).refreshDue},
		dlRefreshBy: {scope: scopeSocket, fire: (*Core).refreshTimedOut},
	}
}

// deadlineAt returns deadline d's instant; zero: not armed.
func (c *Core) deadlineAt(d deadline) time.Time {
	if at := deadlines[d].at; at != nil {
		return at(c)
	}
	return c.dl[d]
}

// clearScope disarms every deadline of scope s kept in a slot.
func (c *Core) clearScope(s scope) {
	for d := range numDeadlines {
		if deadlines[d].scope == s {
			c.dl[d] = time.Time{}
		}
	}
}

func (c *Core) connectTimedOut(now time.Time) {
	c.trace("connect-timeout", c.current, "socket "+c.current.String()+" did not open within "+c.cfg.ConnectTimeout.String())
	c.emitClose(c.current, protocol.CloseNormal, "connect timeout")
	c.connectionLost(now, Cause{By: ByClient, Code: protocol.CloseAbnormal, Fail: FailTimeout})
}
