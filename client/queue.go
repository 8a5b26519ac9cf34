package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// The opt-in queue (stage 8, any stage with Registry). A request or a
// publish made with RequestOptions.Queue (or Config.QueueWhileNotReady)
// while the client is not READY is not refused with ErrNotReady: it waits,
// up to its own timeout, and is sent once READY, in the order made. It
// carries an idempotency key (RequestOptions.Key, or 16 base64url chars
// drawn from Config.Rand), and if its connection is lost before the answer
// it waits again and is sent again with the same key, so a server that
// honours keys (it answers a repeated key from a bounded cache for a
// window) runs it once. Its timeout runs from the first call, whatever
// happens meanwhile: one that was never sent settles with ErrNotReady
// (safe to retry), one that was sent with ErrRequestTimeout (the outcome
// is unknown). A terminal state or Stop settles every one. One never
// sent whose timeout falls at or before the next scheduled dial settles
// with ErrNotReady at once (failHopeless).

// keyChars is base64url's alphabet: a key is protocol.ValidKey.
const keyChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// keyLen is a drawn key's length: 96 bits from Config.Rand (the browser
// draws from Math.random, seeded per page): unique per client, not a
// secret (the server scopes keys per identity, or per network address).
const keyLen = 16

// newKey draws an idempotency key from the config's random source (the
// core has none of its own).
func (c *Core) newKey() string {
	b := make([]byte, keyLen)
	for i := range b {
		b[i] = keyChars[int(c.cfg.Rand()*64)&63]
	}
	return string(b)
}

// sendWaiting sends the requests that waited for READY, in the order
// they were made; one sent before (a resend after a reconnect) keeps its
// key.
func (c *Core) sendWaiting(now time.Time) {
	w := c.waiting
	c.waiting = nil
	for _, p := range w {
		if p.done || p.sent {
			continue
		}
		if p.everSent {
			c.stats.Resent++
			c.trace("resend", c.current, "request "+utoa(p.id)+" sent again with its key")
		}
		c.sendPending(p, now)
	}
}

// failHopeless settles, at once, every queued request never sent whose
// deadline falls at or before the next scheduled dial: the client is down
// and backing off, no attempt can make it READY before that deadline, so
// the caller hears ErrNotReady now (safe to retry elsewhere) instead of at
// its deadline. A client that waits for online, a visible page or a token,
// or is dialling, may be READY at any moment: its requests keep their
// deadlines. One sent before (its outcome unknown) waits out its deadline
// too: it settles with ErrRequestTimeout then, as always.
func (c *Core) failHopeless(now time.Time) {
	if c.ended != NotEnded || c.transport != Down || c.tokenWait {
		return
	}
	next := c.nextDial()
	if next.IsZero() {
		return
	}
	n := 0
	for _, p := range c.waiting {
		if p.done || p.everSent || p.deadline.IsZero() || p.deadline.After(next) {
			continue
		}
		p.done, p.msg = true, protocol.Message{}
		delete(c.pending, p.id)
		n++
		c.trace("request-hopeless", 0, "request "+utoa(p.id)+" settled: the next attempt is due after its deadline")
		c.settleErr(p.id, &RequestError{Kind: ErrNotReady, ID: p.id,
			Detail: "cannot be ready before its deadline: the next attempt is due in " + next.Sub(now).Round(time.Millisecond).String()})
	}
	if n > 0 {
		c.pruneWaiting()
	}
}
