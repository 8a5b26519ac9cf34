package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The heartbeat (stage 2). The server pings at once after open and then
// every intervalMs; the client never hard-codes the interval. Protocol is
// Pending after open and Up after the first ping. The watchdog allows
// FirstPingTimeout for the first ping and two intervals after each one, so
// one late ping does not kill a healthy connection. When it fires the
// client closes the socket and reconnects without waiting for the close
// event, which a browser may report only a minute later for a dead peer.

func (c *Core) heartbeatOpened(now time.Time) {
	if !c.cfg.Features.Heartbeat {
		return
	}
	c.protocol = Pending
	c.dl[dlWatchdog] = now.Add(c.cfg.FirstPingTimeout)
}

func (c *Core) onPing(m protocol.Message, now time.Time) {
	c.stats.Pings++
	c.pingInterval = time.Duration(m.IntervalMs) * time.Millisecond
	if !c.cfg.Features.Heartbeat {
		return
	}
	c.trace("ping", c.current, "ping, interval "+c.pingInterval.String())
	c.protocol = Up
	c.dl[dlWatchdog] = now.Add(2 * c.pingInterval)
}

func (c *Core) watchdogFired(now time.Time) {
	c.stats.WatchdogFired++
	s := c.current
	what := "no ping within two intervals"
	if c.protocol != Up {
		what = "no first ping within " + c.cfg.FirstPingTimeout.String()
	}
	c.trace("watchdog", s, "watchdog fired on socket "+utoa(s)+": "+what+"; closing it")
	c.emit(Effect{Kind: EffClose, Socket: s, Code: protocol.CloseHeartbeatTimeout, Reason: "heartbeat timeout"})
	c.lost(now, Cause{By: ByClient, Code: protocol.CloseHeartbeatTimeout, Fail: FailHeartbeat})
}
