package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// In-band token refresh (Session, with Auth): the server's authenticated
// frame says when the connection's token expires (expiresAt). At a
// random point late in the time left then, uniformly in [refreshFrom,
// refreshTo] of it, the core asks the token hook for a fresh token
// (EffToken with Refresh and Force) and sends it on the live socket in a
// refresh frame; the server's authenticated answer moves the expiry and
// arms the next refresh. Nothing reconnects.
//
// The point is drawn per token, from Config.Rand: a fleet issued tokens
// together (a deploy, a server restart) spreads its refreshes over 15% of
// the lifetime (9 s of a 60 s token), and since each refreshed token is
// issued when its refresh happens, the spread carries over to the next
// lifetime instead of bunching again.
//
// The hook's answer comes back as any other's, through TokenReady or
// TokenFailed (the effect's Refresh says which ask it was; tokens are
// interchangeable, so an answer meant for a dial that a refresh gets, or
// the other way round, is still a good token): a driver needs nothing new.
// At most one refresh is in flight per socket. One that fails (the hook
// fails or gives an unusable token, no answer within TokenTimeout for the
// hook or RequestTimeout for the server, an error frame while waiting:
// refresh_refused, or an older server's unknown_type) is tried once more
// at a point drawn the same way in the time then left; after that the
// token expires and the server's 4001 takes today's path (a forced token,
// a dial at once). A socket lost meanwhile drops the refresh: the next
// socket's own authenticated frame arms its own.
const (
	refreshFrom     = 0.75 // the earliest point, as a share of the time left
	refreshTo       = 0.90 // the latest
	maxRefreshTries = 2    // attempts per token before the 4001 at expiry takes over
)

// refreshState is the current socket's token and the refresh in flight.
type refreshState struct {
	socket  SocketID  // the socket its expiry was heard on; 0: none known
	expires time.Time // that token's expiry, read as the client's clock
	asked   bool      // the hook was asked for this socket's refresh
	sent    bool      // the refresh frame went out: waiting for authenticated
	tries   int       // attempts for the current token
}

// refreshOn reports whether the core refreshes tokens in band.
func (c *Core) refreshOn() bool {
	return c.cfg.Auth && c.cfg.on.Session && !c.cfg.NoInBandRefresh
}

// onAuthenticated takes the server's authenticated frame on socket s: a
// refresh in flight succeeded, and the next one is armed from its
// expiresAt (0: a server that names no expiry, nothing to refresh).
func (c *Core) onAuthenticated(s SocketID, m protocol.Message, now time.Time) {
	if c.rf.socket == s && c.rf.sent {
		c.stats.Refreshes++
		c.trace("refreshed", s, "the server took the refreshed token")
	}
	c.armRefresh(s, m.ExpiresAt, now)
}

// armRefresh arms the refresh of socket s's token, which expires at
// expiresAt (Unix ms).
func (c *Core) armRefresh(s SocketID, expiresAt int64, now time.Time) {
	c.rf = refreshState{}
	c.dl[dlRefresh], c.dl[dlRefreshBy] = time.Time{}, time.Time{}
	if !c.refreshOn() || expiresAt <= 0 || s == 0 {
		return
	}
	c.rf.socket, c.rf.expires = s, time.UnixMilli(expiresAt)
	c.scheduleRefresh(now)
}

// scheduleRefresh draws the next attempt's point in the time left.
func (c *Core) scheduleRefresh(now time.Time) {
	left := c.rf.expires.Sub(now)
	if left <= 0 {
		return
	}
	c.dl[dlRefresh] = now.Add(RefreshPoint(left, c.cfg.Rand()))
}

// RefreshPoint is when, into a token's remaining life left, the client
// refreshes it in band, for a uniform draw r in [0, 1): at 75% + r x 15%
// of left. The fleet simulator (package sim) draws with it too.
func RefreshPoint(left time.Duration, r float64) time.Duration {
	return time.Duration(float64(left) * (refreshFrom + (refreshTo-refreshFrom)*r))
}

// refreshDue asks the hook for the current socket's fresh token.
func (c *Core) refreshDue(now time.Time) {
	if c.rf.socket != c.current || c.current == 0 || c.transport != Up || c.rf.asked {
		return
	}
	c.rf.asked, c.rf.sent = true, false
	c.rf.tries++
	c.stats.TokensRequested++
	c.dl[dlRefreshBy] = now.Add(c.cfg.TokenTimeout)
	c.trace("refresh", c.current, "asking the token hook for a fresh token before expiry")
	c.emit(Effect{Kind: EffToken, Force: true, Refresh: true})
}

// refreshToken takes the hook's answer (TokenReady) to the refresh's
// ask: it goes out on the socket it was asked for, if that is still the
// current one.
func (c *Core) refreshToken(token string, now time.Time) {
	switch {
	case c.rf.socket != c.current || c.transport != Up:
		c.rf.asked = false // that socket is gone: its successor arms its own
	case token == "" || len(token) > protocol.MaxTokenBytes:
		c.refreshFailed(now, "the token hook returned an unusable token")
	default:
		c.rf.sent = true
		c.dl[dlRefreshBy] = now.Add(c.cfg.RequestTimeout)
		c.send(protocol.Message{Type: protocol.TypeRefresh, Token: token})
	}
}

// refreshHookFailed takes the hook's failure (TokenFailed) of the
// refresh's ask: a failed refresh if its socket is still the current one;
// else that socket is gone, and nothing is counted or armed again.
func (c *Core) refreshHookFailed(now time.Time) {
	if c.rf.socket != c.current || c.transport != Up {
		c.rf.asked = false
		return
	}
	c.refreshFailed(now, "the token hook failed")
}

// refreshWaits reports whether the refresh's ask waits for the hook.
func (c *Core) refreshWaits() bool { return c.rf.asked && !c.rf.sent }

// refreshTimedOut: the hook or the server did not answer in time.
func (c *Core) refreshTimedOut(now time.Time) {
	if c.rf.asked && c.rf.socket == c.current {
		c.refreshFailed(now, "no answer in time")
	}
}

// refreshRefused: an error frame about no request and no topic arrived
// while a refresh frame waited for its answer: the server refused it
// (refresh_refused) or does not know the frame (unknown_type).
func (c *Core) refreshRefused(now time.Time) bool {
	if !c.rf.sent || c.rf.socket != c.current {
		return false
	}
	c.refreshFailed(now, "the server refused it")
	return true
}

func (c *Core) refreshFailed(now time.Time, why string) {
	c.stats.RefreshFailures++
	c.rf.asked, c.rf.sent = false, false
	c.dl[dlRefreshBy] = time.Time{}
	c.trace("refresh-failed", c.current, "in-band refresh failed: "+why)
	if c.rf.tries < maxRefreshTries {
		c.scheduleRefresh(now)
	}
}
