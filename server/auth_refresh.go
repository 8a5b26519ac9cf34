//go:build !js

package server

import (
	"strconv"
	"time"

	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
)

// In-band refresh: a client sends {"type":"refresh","token":"..."} on its
// live connection before its token expires. The token is checked on the
// path a first token takes (checkToken: tickets and JWTs, the revocation
// list, the rejection backstops, the same closes), must name the
// connection's user and tenant (else 4003 "the token names another user"),
// and then replaces the connection's token: its expiry moves to the new
// one's, its claims are the new token's (a role taken away in the new
// token is gone from the connection too), and the answer is
// {"type":"authenticated","expiresAt":ms}. Nothing reconnects: no
// admission, no subscribe, no replay. A connection Identify named keeps
// its identity, as it does for a first token, and takes only the expiry.
//
// Refused without a word of the token: a connection with no token's
// expiry to move (anonymous, or Identify's without a token), and a
// connection past protocol.RefreshBurst refreshes at once and one per
// protocol.RefreshEvery after, are answered with an error frame
// refresh_refused (retryAfterMs with the flood); the connection and its
// old expiry stay, so a client that keeps failing gets today's 4001 at
// expiry. The flood is refused before any verification: it costs a
// token bucket's arithmetic, not a signature check.

// refresh serves a refresh frame. Called by the reader only.
func (c *conn) refresh(m protocol.Message) {
	s := c.s
	now := s.opts.Now()
	if !c.hasExpiry() {
		c.refused(0, "this connection has no token to refresh (send auth as its first frame)")
		return
	}
	if c.refreshLim == nil {
		c.refreshLim = rate.NewLimiter(rate.Every(protocol.RefreshEvery*time.Millisecond), protocol.RefreshBurst)
	}
	if !c.refreshLim.AllowN(now, 1) {
		c.refused(protocol.RefreshEvery, "too many refreshes: "+strconv.Itoa(protocol.RefreshBurst)+" at once, then one per "+strconv.Itoa(protocol.RefreshEvery)+" ms")
		return
	}
	t, exp, ok := c.checkToken(false, m.Token, now)
	if !ok {
		s.auth.mu.Lock()
		s.auth.refreshRefused++
		s.auth.mu.Unlock()
		return // closing: 4003 or 4001, as a first token would be
	}
	s.mu.Lock()
	same := t.identity.User == c.identity.User && t.identity.Tenant == c.identity.Tenant
	s.mu.Unlock()
	if !same {
		s.auth.mu.Lock()
		s.auth.refreshRefused++
		s.auth.mu.Unlock()
		c.refuseToken(false, protocol.CloseForbidden, "the token names another user", "other_user (a refresh naming another user or tenant)")
		return
	}
	if !c.byRequest {
		s.mu.Lock()
		c.identity, c.ticket = t.identity, t
		s.mu.Unlock()
	}
	c.armExpiry(exp)
	s.auth.mu.Lock()
	s.auth.refreshed++
	s.auth.mu.Unlock()
	c.reply(protocol.AuthenticatedFrame{Type: protocol.TypeAuthenticated, ExpiresAt: exp.UnixMilli()})
}

// refused answers a refresh the server does not take now.
func (c *conn) refused(retryMs int64, msg string) {
	c.s.auth.mu.Lock()
	c.s.auth.refreshRefused++
	c.s.auth.mu.Unlock()
	c.errorsOut.Add(1)
	c.reply(protocol.ErrorFrame{Type: protocol.TypeError, Code: protocol.ErrRefreshRefused, Message: msg, RetryAfterMs: retryMs})
}
