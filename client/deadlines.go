package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The named deadlines. Each is one slot in Core.dl that after() scans,
// Tick dispatches (in this order) through deadlineFired, and lost() or
// end() clears: a new timer is one entry here.
type deadline uint8

const (
	dlConnect   deadline = iota // the socket must open by then
	dlWatchdog                  // a ping must arrive by then (heartbeat.go)
	dlSubscribe                 // "subscribed" must arrive by then (service.go)
	dlCooldown                  // READY this long resets the backoff (reconnect.go)
	dlToken                     // the token hook must answer by then (session.go)
	dlWindow                    // the run of failures gives up then (session.go)
	numDeadlines
)

var deadlineFired = [numDeadlines]func(*Core, time.Time){
	dlConnect:   (*Core).connectTimedOut,
	dlWatchdog:  (*Core).watchdogFired,
	dlSubscribe: (*Core).subscribeTimedOut,
	dlCooldown:  (*Core).cooldownDone,
	dlToken:     (*Core).tokenTimedOut,
	dlWindow:    (*Core).windowRanOut,
}

func (c *Core) connectTimedOut(now time.Time) {
	c.trace("connect-timeout", c.current, "socket "+utoa(c.current)+" did not open within "+c.cfg.ConnectTimeout.String())
	c.emit(Effect{Kind: EffClose, Socket: c.current, Code: protocol.CloseNormal, Reason: "connect timeout"})
	c.lost(now, Cause{By: ByClient, Code: protocol.CloseAbnormal, Fail: FailTimeout})
}
