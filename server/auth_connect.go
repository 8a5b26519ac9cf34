//go:build !js

package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wsready/wsready/protocol"
)

// AuthMode says whether the server asks for tokens.
type AuthMode string

const (
	AuthOff      AuthMode = "off"      // no tokens: every connection is served (the default without Authenticate, JWT or Identify)
	AuthOptional AuthMode = "optional" // a connection whose first frame is auth is checked, others are served anonymously (the demo)
	AuthRequired AuthMode = "required" // the first frame must be a valid auth, unless Identify named the user; nothing is served before (the default with Authenticate, JWT or Identify)
)

// A connection authenticates with its first frame, {"type":"auth",
// "token":"..."}, where the token is one of our tickets (auth_tickets.go) or,
// with Options.JWT, a JWT from the application's identity provider
// (auth_jwt.go). Either gives the connection its Identity (conn.identity);
// without one the connection is anonymous (the zero Identity). The
// server answers {"type":"authenticated","expiresAt":ms} and closes the
// connection with 4001 when the token expires, which drives the client's
// refresh; a bad, forged or revoked token closes it with 4003. Or the
// connection's own request says who it is (Options.Identify, below).

// Identity from the request itself (Options.Identify): the WebSocket
// upgrade or the HTTP transport's session request carries the
// application's own cookie or header, and the hook reads it after the
// Host and Origin checks and admission. A connection it names is served at
// once, whatever Auth says, and has no expiry: the application ends it
// with Disconnect or Revoke (at sign-out). A connection it does not name
// goes on as Auth says, so a cross-origin page can still bring a ticket.

// identify asks Options.Identify about r. A non-zero code refuses the
// connection with that close and reason: 4003 and the *Error's message (at
// most 123 bytes; "forbidden" for any other error, whose text may hold
// what the client must not see), 4003 "forbidden" for a revoked user, or
// 1011 for an Identity out of its bounds or a panic (the application's
// mistake, logged).
func (s *Server) identify(r *http.Request) (id Identity, code int, reason string) {
	hook := s.opts.Identify
	if hook == nil {
		return Identity{}, 0, ""
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("Identify panicked", "panic", fmt.Sprint(p))
			id, code, reason = Identity{}, protocol.CloseInternalError, "internal error"
		}
	}()
	id, err := hook(r)
	if err != nil {
		reason = "forbidden"
		var ae *Error
		if errors.As(err, &ae) {
			if m := closeReason(ae.Message); m != "" {
				reason = m
			}
		}
		return Identity{}, protocol.CloseForbidden, reason
	}
	if err := id.Validate(); err != nil {
		// The error names the bound, never the values.
		s.log.Error("Identify returned an invalid identity", "error", err)
		return Identity{}, protocol.CloseInternalError, "internal error"
	}
	if s.revoked(id.User) {
		return Identity{}, protocol.CloseForbidden, "forbidden"
	}
	return id, 0, ""
}

// identified serves a connection Options.Identify named (register gave it
// the Identity): once its tenant has room, at once. It does nothing for
// one it did not name. Called before the connection runs.
func (c *conn) identified() {
	if !c.byRequest || !c.joinTenant(c.identity, c.s.opts.Now()) {
		return
	}
	c.s.auth.mu.Lock()
	c.s.auth.accepted++
	c.s.auth.mu.Unlock()
	c.authed()
}

// effectiveExpiry is when a token stops being good: its expiry, or with
// Short tokens on at most ShortTicketLife after it was issued.
func (s *Server) effectiveExpiry(t ticket) time.Time {
	if f := s.hook(); f != nil && f.ShortensTickets() {
		if e := t.issued.Add(s.faultSettings().ShortTicketLife); e.Before(t.expires) {
			return e
		}
	}
	return t.expires
}

// verify checks a token from an auth frame: one of our tickets, or a JWT
// when the server takes them (a JWT has two dots, a ticket one). An error
// means it did not verify; an expired token that did verify comes back
// without error (its expiry is the caller's to judge, against its user).
func (s *Server) verify(tok string, now time.Time) (ticket, string, error) {
	if s.auth.jwt != nil && isJWT(tok) {
		t, err := s.auth.jwt.verify(tok, now)
		return t, "bad token", err
	}
	t, err := s.auth.parse(tok)
	return t, "bad ticket", err
}

// authenticate checks the first frame's token. It reports whether the
// connection may go on; if not, it has started closing it with 4001
// (expired), 4003 (bad, revoked, looping) or 1013 (its tenant is at
// MaxConnsPerTenant).
func (c *conn) authenticate(m protocol.Message) bool {
	s := c.s
	now := s.opts.Now()
	t, exp, ok := c.checkToken(true, m.Token, now)
	if !ok {
		return false
	}
	user := t.identity.User
	if c.byRequest {
		// Named by its request (Identify) and served already: a token
		// must name the same user, and then only adds its expiry.
		if user != c.identity.User {
			return c.refuseToken(true, protocol.CloseForbidden, "the token names another user", "other_user (a token on a connection Identify named)")
		}
		c.armExpiry(exp)
		c.reply(protocol.AuthenticatedFrame{Type: protocol.TypeAuthenticated, ExpiresAt: exp.UnixMilli()})
		return true
	}
	if !c.tenantHandshake(t.identity, now) || !c.joinTenant(t.identity, now) {
		return false
	}
	s.auth.mu.Lock()
	s.auth.accepted++
	s.auth.mu.Unlock()
	s.mu.Lock()
	c.identity, c.clientID, c.ticket = t.identity, user, t
	s.mu.Unlock()
	c.armExpiry(exp)
	c.authed()
	c.reply(protocol.AuthenticatedFrame{Type: protocol.TypeAuthenticated, ExpiresAt: exp.UnixMilli()})
	return true
}

// refuseToken closes the connection for its token; class is the refusal's
// kind for the debug line (-v), from a fixed set: never the token, its
// claims, the user or the address. A first token's refusal is the
// handshake's outcome (auth_failed); a refresh's is not a handshake. It
// returns false, for its callers' returns.
func (c *conn) refuseToken(first bool, code int, reason, class string) bool {
	if first {
		c.s.metrics.handshakeVia(outAuth, c.tr.kind())
	}
	c.s.log.Debug("auth refused", "class", class, "code", code, "conn", c.id)
	c.closeAsync(code, reason)
	return false
}

// checkToken verifies a token from an auth (first) or a refresh frame,
// the one path both take. It returns the token and its effective expiry, or false
// once it has started closing the connection: 4003 for a token that did
// not verify, a revoked user or a looping one, 4001 for an expired token.
func (c *conn) checkToken(first bool, tok string, now time.Time) (ticket, time.Time, bool) {
	s := c.s
	t, bad, err := s.verify(tok, now)
	if err != nil {
		// Not verified: counted against the address it came from, not the
		// user it names (see rejectUnverified).
		if s.auth.rejectUnverified(addrKey(c.ip), now) {
			return t, time.Time{}, c.refuseToken(first, protocol.CloseForbidden, "too many rejected tickets", "too_many_rejected (unverified, per address)")
		}
		class := "bad_ticket (did not verify: forged, malformed or another server's key)"
		if bad == "bad token" {
			class = "bad_token (a JWT that did not verify: signature, key, alg, claims or format)"
		}
		return t, time.Time{}, c.refuseToken(first, protocol.CloseForbidden, bad, class)
	}
	user := t.identity.User
	revoked := s.revoked(user) // Server.Revoke (control.go)
	exp := s.effectiveExpiry(t)
	if revoked || !now.Before(exp) {
		// Refused either way: the backstop only turns a looping refusal
		// into a final 4003, so a token that is good now is never refused
		// by it. Counted against the user at this address (see
		// rejectVerified): whoever replays someone's stale token only
		// backstops themselves.
		if s.auth.looping(user, addrKey(c.ip), now) {
			return t, exp, c.refuseToken(first, protocol.CloseForbidden, "too many rejected tickets", "too_many_rejected (per user at this address)")
		}
		s.auth.rejectVerified(user, addrKey(c.ip), now)
		if revoked {
			return t, exp, c.refuseToken(first, protocol.CloseForbidden, "forbidden", "revoked")
		}
		return t, exp, c.refuseToken(first, protocol.CloseTokenExpired, "token expired", "expired")
	}
	return t, exp, true
}

// armExpiry closes the connection with 4001 when its token expires (a
// refresh moves it: auth_refresh.go). Once the connection ended it arms
// nothing: a refresh or the demo's Short switch racing the end leaves no
// timer behind.
func (c *conn) armExpiry(at time.Time) {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	if c.expOff {
		return
	}
	if c.expiry != nil {
		c.expiry.Stop()
	}
	c.expiry = time.AfterFunc(max(0, at.Sub(c.s.opts.Now())), func() {
		c.closeAsync(protocol.CloseTokenExpired, "token expired")
	})
}

// hasExpiry reports whether a token's expiry is armed: the connection has
// a token a refresh may replace.
func (c *conn) hasExpiry() bool {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	return c.expiry != nil && !c.expOff
}

func (c *conn) stopExpiry() {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	c.expOff = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
}

// authed lets the connection be served (with AuthRequired nothing is sent
// before): its first ping goes out at once, the next with everyone's, and
// the welcome names the session and, once known, the user.
func (c *conn) authed() {
	c.authOnce.Do(func() {
		close(c.authOK)
		c.served.Store(true)
		if !c.s.freezeGate().isFrozen() {
			c.offer(c.s.ping)
		}
		// The session's acknowledgement: a client that asked for no topic
		// is READY on it (its service layer). Queued even while frozen:
		// the gate holds its bytes, and unlike the ping it comes once.
		// With AuthOptional it goes at once, before any auth frame, so it
		// names no user there.
		c.offer(c.encode(protocol.WelcomeFrame{Type: protocol.TypeWelcome, Session: c.session, User: c.identity.User, Node: c.s.opts.Node}))
	})
}
