package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// Send-side liveness (stage 8). Pings prove the path from the server; a
// path can be dead only for sending (a proxy that stopped reading, a
// half-open NAT), and then the app's frames pile up in the socket's
// buffer while the connection looks READY. The driver reports the bytes
// queued on the socket (Buffered: the WebSocket's bufferedAmount, after
// each send and then while it is not zero, at most every 250 ms). When
// they stay above zero without decreasing for SendStallTimeout (5 s) the
// client probes; the probe's answer (probe_ack with its id, and nothing
// else: frames from the server prove only the other direction) proves
// the send path and the wait starts over; no answer within the probe
// timeout closes the socket with 4409 and reconnects (the backoff),
// requests in flight rejecting with ConnectionClosed (or, queued ones,
// going back to the queue).

// Buffered reports that socket s has bytes queued for sending (0: all
// sent). It matters only for the current socket, at stage 8.
func (c *Core) Buffered(s SocketID, bytes int, now time.Time) {
	if c.ended != NotEnded || !c.cfg.on.WhereUsersAre || s == 0 || s != c.current || c.transport != Up {
		return
	}
	switch {
	case bytes <= 0 && c.stallProbe != 0:
		// Drained while the probe is out: the bytes left the page (into the
		// OS's buffers, behind a peer's window still open), which does not
		// say the peer reads them. The probe's answer, or its timeout,
		// decides.
	case bytes <= 0:
		c.dl[dlSendStall] = time.Time{}
	case bytes < c.buffered || c.dl[dlSendStall].IsZero():
		// Draining, or newly queued: the deadline counts from now.
		if c.stallProbe == 0 {
			c.dl[dlSendStall] = now.Add(c.cfg.SendStallTimeout)
		}
	}
	c.buffered = max(bytes, 0)
	c.after(now)
}

// sendStalled: no draining for SendStallTimeout (probe), or no answer to
// the probe (give up).
func (c *Core) sendStalled(now time.Time) {
	s := c.current
	if c.stallProbe == 0 && !c.jumped {
		c.probeID++
		c.stallProbe = c.probeID
		c.stats.Probes++
		t := c.stallProbeTimeout()
		c.trace("send-stall", s, "queued bytes did not drain for "+c.cfg.SendStallTimeout.String()+"; probing, answer due within "+t.String())
		c.send(protocol.Message{Type: protocol.TypeProbe, ID: c.stallProbe})
		c.dl[dlSendStall] = now.Add(t)
		return
	}
	if c.jumped {
		// The deadline slept with the client: measure again from now.
		c.stallProbe = 0
		c.dl[dlSendStall] = now.Add(c.cfg.SendStallTimeout)
		return
	}
	c.stats.SendStalls++
	c.trace("send-stall", s, "no answer to the send-stall probe: closing socket "+s.String())
	c.emitClose(s, protocol.CloseSendStalled, "send stalled")
	c.connectionLost(now, Cause{By: ByClient, Code: protocol.CloseSendStalled, Fail: FailSendStalled})
}

// stallProbeTimeout bounds the wait for the send-stall probe's answer:
// the heartbeat's probe timeout, or with no interval yet the first-ping
// timeout.
func (c *Core) stallProbeTimeout() time.Duration {
	if c.pingInterval <= 0 {
		return c.cfg.FirstPingTimeout
	}
	return c.probeTimeout()
}

// sendProbeAnswered takes a probe_ack: the send-stall probe's answer says
// the frames get through; the wait for draining starts over if bytes are
// still queued.
func (c *Core) sendProbeAnswered(id uint64, now time.Time) {
	if c.stallProbe == 0 || id != c.stallProbe {
		return
	}
	c.stallProbe = 0
	c.dl[dlSendStall] = time.Time{}
	if c.buffered > 0 {
		c.dl[dlSendStall] = now.Add(c.cfg.SendStallTimeout)
	}
	c.trace("send-stall", c.current, "the send-stall probe was answered")
}
