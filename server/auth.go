//go:build !js

package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/protocol"
)

// AuthMode says whether the server asks for tickets.
type AuthMode string

const (
	AuthOff      AuthMode = "off"      // no tickets: every connection is served (the default)
	AuthOptional AuthMode = "optional" // a connection whose first frame is auth is checked, others are served anonymously (the demo)
	AuthRequired AuthMode = "required" // the first frame must be a valid auth; nothing is served before it
)

// Tickets are short-lived, signed and opaque to clients:
//
//	base64url(clientID "|" issuedAtMs "|" expiresAtMs) "." base64url(HMAC-SHA256(key, that payload))
//
// POST /api/token issues one for a client id; the client sends it in its
// first frame, {"type":"auth","token":"..."}, never in the URL. A ticket
// is never logged.

// ErrBadTicket is a ticket that is malformed or not signed with our key.
var ErrBadTicket = errors.New("bad ticket")

type ticket struct {
	id       string
	issued   time.Time
	expires  time.Time
	verified bool
}

// validClientID: 1 to 64 of [A-Za-z0-9_-].
func validClientID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

type authority struct {
	key []byte

	mu         sync.Mutex
	revoked    map[string]struct{}
	rejections map[string][]time.Time // per client id, newest last, at most threshold+1
	backstops  uint64                 // connections refused by the backstop without validating
	rejected   uint64
	accepted   uint64
}

const (
	maxRevoked   = 1000
	maxTrackedID = 10000
)

func newAuthority(key []byte) *authority {
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	return &authority{key: key, revoked: map[string]struct{}{}, rejections: map[string][]time.Time{}}
}

func (a *authority) sign(payload string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (a *authority) issue(id string, now time.Time, life time.Duration) (string, time.Time) {
	exp := now.Add(life)
	payload := id + "|" + strconv.FormatInt(now.UnixMilli(), 10) + "|" + strconv.FormatInt(exp.UnixMilli(), 10)
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + a.sign(payload), exp
}

// parse reads a ticket; verified says whether its signature is ours. An
// unverified ticket's id is used only to find a looping client.
func (a *authority) parse(tok string) (ticket, error) {
	p64, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return ticket{}, ErrBadTicket
	}
	raw, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		return ticket{}, ErrBadTicket
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || !validClientID(parts[0]) {
		return ticket{}, ErrBadTicket
	}
	iat, err1 := strconv.ParseInt(parts[1], 10, 64)
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return ticket{}, ErrBadTicket
	}
	t := ticket{id: parts[0], issued: time.UnixMilli(iat), expires: time.UnixMilli(exp)}
	t.verified = hmac.Equal([]byte(sig), []byte(a.sign(string(raw))))
	return t, nil
}

// reject counts a rejection for id and reports whether id is now over the
// backstop's threshold within the window.
func (a *authority) reject(id string, now time.Time, threshold int, window time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rejected++
	if id == "" {
		return
	}
	ts, ok := a.rejections[id]
	if !ok && len(a.rejections) >= maxTrackedID {
		a.pruneLocked(now, window)
		if len(a.rejections) >= maxTrackedID {
			return // full of live entries: the new id goes uncounted
		}
	}
	ts = append(ts, now)
	if len(ts) > threshold+1 {
		ts = ts[len(ts)-threshold-1:]
	}
	a.rejections[id] = ts
}

func (a *authority) pruneLocked(now time.Time, window time.Duration) {
	for id, ts := range a.rejections {
		if len(ts) == 0 || now.Sub(ts[len(ts)-1]) > window {
			delete(a.rejections, id)
		}
	}
}

// looping reports whether id was rejected more than threshold times within
// the window: the backstop refuses it without validating.
func (a *authority) looping(id string, now time.Time, threshold int, window time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, t := range a.rejections[id] {
		if now.Sub(t) <= window {
			n++
		}
	}
	if n > threshold {
		a.backstops++
		return true
	}
	return false
}

func (a *authority) isRevoked(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.revoked[id]
	return ok
}

// revoke adds id to the revoked set; "" clears it. It reports false when
// the set is full.
func (a *authority) revoke(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id == "" {
		clear(a.revoked)
		return true
	}
	if len(a.revoked) >= maxRevoked {
		return false
	}
	a.revoked[id] = struct{}{}
	return true
}

// forgetRejections clears the per-client-id rejection windows (the demo's
// Reset counters).
func (a *authority) forgetRejections() {
	a.mu.Lock()
	clear(a.rejections)
	a.mu.Unlock()
}

// AuthStats is the authority's accounting in /api/stats.
type AuthStats struct {
	Mode       AuthMode `json:"mode"`
	Accepted   uint64   `json:"accepted"`
	Rejected   uint64   `json:"rejected"`
	Backstops  uint64   `json:"backstops"` // refused without validating: a looping client id
	Revoked    int      `json:"revoked"`
	TrackedIDs int      `json:"trackedIds"` // client ids with recent rejections
	// RejectionsByID counts each client id's rejections in the sliding
	// window; client ids may name users, so only in Demo mode.
	RejectionsByID map[string]int `json:"rejectionsById,omitempty"`
}

func (a *authority) stats(now time.Time, window time.Duration, byID bool) AuthStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := AuthStats{Accepted: a.accepted, Rejected: a.rejected, Backstops: a.backstops, Revoked: len(a.revoked), TrackedIDs: len(a.rejections)}
	if byID {
		st.RejectionsByID = map[string]int{}
		for id, ts := range a.rejections {
			n := 0
			for _, t := range ts {
				if now.Sub(t) <= window {
					n++
				}
			}
			if n > 0 {
				st.RejectionsByID[id] = n
			}
		}
	}
	return st
}

// effectiveExpiry is when a ticket stops being good: its expiry, or with
// Short tokens on at most ShortTicketLife after it was issued.
func (s *Server) effectiveExpiry(t ticket) time.Time {
	s.mu.Lock()
	short := s.shortTokens
	s.mu.Unlock()
	if short {
		if e := t.issued.Add(s.opts.ShortTicketLife); e.Before(t.expires) {
			return e
		}
	}
	return t.expires
}

// serveToken issues a ticket: POST /api/token {"clientId": "..."}.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthOff {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "auth is off: start the server with -auth optional or -auth required"})
		return
	}
	var req struct {
		ClientID string `json:"clientId"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&req); err != nil || !validClientID(req.ClientID) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "clientId must be 1 to 64 of A-Z a-z 0-9 _ -"})
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	life := s.opts.TicketLife
	if s.shortTokens {
		life = s.opts.ShortTicketLife
	}
	s.mu.Unlock()
	tok, exp := s.auth.issue(req.ClientID, now, life)
	writeJSON(w, http.StatusOK, map[string]any{"token": tok, "expiresAt": exp.UnixMilli()})
}

// authenticate checks the first frame's ticket. It reports whether the
// connection may go on; if not, it has started closing it with 4001
// (expired) or 4003 (bad, revoked, looping).
func (c *conn) authenticate(m protocol.Message) bool {
	s := c.s
	now := s.opts.Now()
	t, err := s.auth.parse(m.Token)
	fail := func(code int, reason string) bool {
		s.metrics.handshake(outAuth)
		s.auth.reject(t.id, now, s.opts.RejectionThreshold, s.opts.RejectionWindow)
		c.closeAsync(code, reason)
		return false
	}
	if err != nil {
		return fail(protocol.CloseForbidden, "bad ticket")
	}
	if s.auth.looping(t.id, now, s.opts.RejectionThreshold, s.opts.RejectionWindow) {
		s.metrics.handshake(outAuth)
		c.closeAsync(protocol.CloseForbidden, "too many rejected tickets")
		return false
	}
	if !t.verified {
		return fail(protocol.CloseForbidden, "bad ticket")
	}
	if s.auth.isRevoked(t.id) {
		return fail(protocol.CloseForbidden, "forbidden")
	}
	exp := s.effectiveExpiry(t)
	if !now.Before(exp) {
		return fail(protocol.CloseTokenExpired, "token expired")
	}
	s.auth.mu.Lock()
	s.auth.accepted++
	s.auth.mu.Unlock()
	s.mu.Lock()
	c.clientID, c.ticket = t.id, t
	s.mu.Unlock()
	c.armExpiry(exp)
	c.authed()
	c.reply(protocol.AuthenticatedFrame{Type: protocol.TypeAuthenticated, ExpiresAt: exp.UnixMilli()})
	return true
}

// armExpiry closes the connection with 4001 when its ticket expires.
func (c *conn) armExpiry(at time.Time) {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	if c.expiry != nil {
		c.expiry.Stop()
	}
	c.expiry = time.AfterFunc(max(0, at.Sub(c.s.opts.Now())), func() {
		c.closeAsync(protocol.CloseTokenExpired, "token expired")
	})
}

func (c *conn) stopExpiry() {
	c.expMu.Lock()
	defer c.expMu.Unlock()
	if c.expiry != nil {
		c.expiry.Stop()
	}
}

// authed lets the writer start (with AuthRequired nothing is sent before).
// authed lets the connection be served: its first ping goes out at once,
// the next with everyone's.
func (c *conn) authed() {
	c.authOnce.Do(func() {
		close(c.authOK)
		c.served.Store(true)
		if !c.s.gate.isFrozen() {
			c.offer(c.s.ping)
		}
	})
}
