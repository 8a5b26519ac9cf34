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
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
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
// POST /api/token issues one for a client id (only in Demo mode or with
// IssueTickets: it asks no proof of identity); the client sends it in its
// first frame, {"type":"auth","token":"..."}, never in the URL. A ticket
// is never logged.

// errBadTicket is a ticket that is malformed or not signed with our key.
var errBadTicket = errors.New("bad ticket")

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

	mu        sync.Mutex
	revoked   map[string]struct{}
	byID      rejectionLog // verified tickets refused (revoked, expired), per client id
	byAddr    rejectionLog // tickets that did not verify (garbage, forged, another key's), per remote address
	issuance  ticketLimiter
	backstops uint64 // connections refused by the backstop
	rejected  uint64
	accepted  uint64
}

// The bounds of what peers can grow here. maxTrackedAddr also bounds the
// ticket limiters of POST /api/token.
const (
	maxRevoked     = 1000
	maxTrackedID   = 10000
	maxTrackedAddr = 10000
)

func newAuthority(o *Options) *authority {
	key := o.AuthKey
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	return &authority{key: key, revoked: map[string]struct{}{},
		byID:     newRejectionLog(o.RejectionThreshold, o.RejectionWindow, maxTrackedID),
		byAddr:   newRejectionLog(o.BadTicketThreshold, o.RejectionWindow, maxTrackedAddr),
		issuance: newTicketLimiter(o.TicketRate, o.TicketBurst, maxTrackedAddr),
	}
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

// parse reads a ticket; verified says whether its signature is ours. The
// id of a ticket that is not verified is whatever its sender wrote: it is
// never counted against, nor used to refuse, that client id.
func (a *authority) parse(tok string) (ticket, error) {
	p64, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return ticket{}, errBadTicket
	}
	raw, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		return ticket{}, errBadTicket
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || !validClientID(parts[0]) {
		return ticket{}, errBadTicket
	}
	iat, err1 := strconv.ParseInt(parts[1], 10, 64)
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return ticket{}, errBadTicket
	}
	t := ticket{id: parts[0], issued: time.UnixMilli(iat), expires: time.UnixMilli(exp)}
	t.verified = hmac.Equal([]byte(sig), []byte(a.sign(string(raw))))
	return t, nil
}

// rejectionLog counts rejections per key (a client id, or a remote
// address) over a sliding window, for the backstop: a key rejected more
// than threshold times within the window is over. It holds at most max
// keys and at most threshold+1 times per key. When a new key would pass
// max, the keys whose newest rejection is older than the window are
// pruned; if it is still full the new key goes uncounted (a flood of new
// keys cannot grow it, at the price of not backstopping them).
type rejectionLog struct {
	threshold int
	window    time.Duration
	max       int
	m         map[string][]time.Time // newest last
}

func newRejectionLog(threshold int, window time.Duration, max int) rejectionLog {
	return rejectionLog{threshold: threshold, window: window, max: max, m: map[string][]time.Time{}}
}

func (l *rejectionLog) add(key string, now time.Time) {
	ts, ok := l.m[key]
	if !ok && len(l.m) >= l.max {
		l.prune(now)
		if len(l.m) >= l.max {
			return // full of live entries: the new key goes uncounted
		}
	}
	ts = append(ts, now)
	if len(ts) > l.threshold+1 {
		ts = ts[len(ts)-l.threshold-1:]
	}
	l.m[key] = ts
}

// count is key's rejections within the window.
func (l *rejectionLog) count(key string, now time.Time) int {
	n := 0
	for _, t := range l.m[key] {
		if now.Sub(t) <= l.window {
			n++
		}
	}
	return n
}

func (l *rejectionLog) over(key string, now time.Time) bool { return l.count(key, now) > l.threshold }

func (l *rejectionLog) prune(now time.Time) {
	for k, ts := range l.m {
		if len(ts) == 0 || now.Sub(ts[len(ts)-1]) > l.window {
			delete(l.m, k)
		}
	}
}

// rejectUnverified accounts for a ticket that is not signed with our key
// (or is not a ticket at all), from address addr. It reports whether addr
// is over BadTicketThreshold already: the backstop refuses it then, and
// does not count it again (the window lets the address in again once its
// old rejections age out).
//
// Such a ticket's client id is the sender's to choose, so it is counted
// against the address, never the id: counting it against the id let
// anyone lock a client out by sending 21 forged tickets naming it. A
// connection carries one ticket (its first frame, and any refusal closes
// it), so there is nothing more to count per connection.
func (a *authority) rejectUnverified(addr string, now time.Time) (backstop bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if addr != "" && a.byAddr.over(addr, now) {
		a.backstops++
		return true
	}
	a.rejected++
	if addr != "" {
		a.byAddr.add(addr, now)
	}
	return false
}

// rejectVerified counts a rejection of a ticket we signed (revoked,
// expired) against its client id.
func (a *authority) rejectVerified(id string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rejected++
	a.byID.add(id, now)
}

// looping reports whether id's verified tickets were rejected more than
// RejectionThreshold times within the window: the backstop refuses it
// without looking further.
func (a *authority) looping(id string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID.over(id, now) {
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

// forgetRejections clears the rejection windows, per client id and per
// address (the demo's Reset counters).
func (a *authority) forgetRejections() {
	a.mu.Lock()
	clear(a.byID.m)
	clear(a.byAddr.m)
	a.mu.Unlock()
}

// AuthStats is the authority's accounting in /api/stats.
type AuthStats struct {
	Mode      AuthMode `json:"mode"`
	Accepted  uint64   `json:"accepted"`
	Rejected  uint64   `json:"rejected"`
	Backstops uint64   `json:"backstops"` // refused by the backstop: a looping client id or address
	Revoked   int      `json:"revoked"`
	// TrackedIDs are client ids with recent rejections of tickets we
	// signed; TrackedAddrs remote addresses with recent rejections of
	// tickets we did not sign.
	TrackedIDs   int `json:"trackedIds"`
	TrackedAddrs int `json:"trackedAddrs"`
	// RejectionsByID counts each client id's rejections in the sliding
	// window; client ids may name users, so only in Demo mode.
	RejectionsByID map[string]int `json:"rejectionsById,omitempty"`
}

func (a *authority) stats(now time.Time, byID bool) AuthStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byID.prune(now)
	a.byAddr.prune(now)
	st := AuthStats{Accepted: a.accepted, Rejected: a.rejected, Backstops: a.backstops, Revoked: len(a.revoked),
		TrackedIDs: len(a.byID.m), TrackedAddrs: len(a.byAddr.m)}
	if byID {
		st.RejectionsByID = map[string]int{}
		for id := range a.byID.m {
			if n := a.byID.count(id, now); n > 0 {
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

// ticketIssuanceEnabled says whether POST /api/token issues tickets: in
// Demo mode or with IssueTickets. The one place that decides it, so an
// application's identity hook can turn it on here too.
func (s *Server) ticketIssuanceEnabled() bool {
	return s.opts.Demo || s.opts.IssueTickets
}

// TicketHandler issues tickets, signed with Options.AuthKey and living
// TicketLife: POST {"clientId": "..."} answers {"token": "...",
// "expiresAt": ms}. It is on only with Options.IssueTickets or
// Options.Demo, since it asks no proof of identity (403 otherwise; 404 with
// Auth off; 429 over TicketRate). Behind the Host check and, as it issues
// credentials, same origin (or OriginPatterns) and Content-Type
// application/json only; POST only. wsready serve mounts it at /api/token.
func (s *Server) TicketHandler() http.Handler {
	return s.httpGuard(http.HandlerFunc(s.serveToken), http.MethodPost)
}

// serveToken issues a ticket: POST {"clientId": "..."}. With
// auth off it answers 404; with issuance off 403; over the per-address
// rate 429 with Retry-After (whole seconds); bad JSON or client id 400.
// Every answer's body is JSON.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthOff {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "auth is off: start the server with -auth optional or -auth required"})
		return
	}
	if !s.ticketIssuanceEnabled() {
		// It would hand a ticket for any client id to anyone who can reach
		// the port, and -auth required would then stop nobody.
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "ticket issuance is off: this endpoint gives a ticket for any client id to anyone, so it is on only with -demo or -issue-tickets; in production the application issues tickets signed with the server's key"})
		return
	}
	now := s.opts.Now()
	if ok, wait := s.auth.issuance.allow(addrKey(remoteIP(r.RemoteAddr)), now); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(wait)))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": "too many ticket requests from this address: try again after Retry-After seconds"})
		return
	}
	var req struct {
		ClientID string `json:"clientId"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&req); err != nil || !validClientID(req.ClientID) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "clientId must be 1 to 64 of A-Z a-z 0-9 _ -"})
		return
	}
	s.mu.Lock()
	life := s.opts.TicketLife
	if s.shortTokens {
		life = s.opts.ShortTicketLife
	}
	s.mu.Unlock()
	tok, exp := s.auth.issue(req.ClientID, now, life)
	writeJSON(w, http.StatusOK, map[string]any{"token": tok, "expiresAt": exp.UnixMilli()})
}

// ticketLimiter rate-limits POST /api/token per remote address, a token
// bucket each (golang.org/x/time/rate). It holds at most max addresses:
// when a new one would pass it, the buckets that have refilled (which
// forget nothing by going) are dropped; if it is still full, the new
// address is refused (429) until one refills, at most burst/rate later.
type ticketLimiter struct {
	rate  rate.Limit
	burst int
	max   int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newTicketLimiter(perSec float64, burst, max int) ticketLimiter {
	return ticketLimiter{rate: rate.Limit(perSec), burst: burst, max: max, m: map[string]*rate.Limiter{}}
}

// allow takes a ticket from addr's bucket, or says how long until one is
// there.
func (l *ticketLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[addr]
	if lim == nil {
		if len(l.m) >= l.max {
			for k, v := range l.m {
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.m, k)
				}
			}
		}
		if len(l.m) >= l.max {
			return false, time.Duration(float64(l.burst) / float64(l.rate) * float64(time.Second))
		}
		lim = rate.NewLimiter(l.rate, l.burst)
		l.m[addr] = lim
	}
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// addrKey is the key of a remote IP in the per-address maps: the address
// itself, or for IPv6 its /64 (one subscriber usually holds a whole /64,
// and would otherwise take 2^64 places).
func addrKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, err := a.Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}

// authenticate checks the first frame's ticket. It reports whether the
// connection may go on; if not, it has started closing it with 4001
// (expired) or 4003 (bad, revoked, looping).
func (c *conn) authenticate(m protocol.Message) bool {
	s := c.s
	now := s.opts.Now()
	t, err := s.auth.parse(m.Token)
	refuse := func(code int, reason string) bool {
		s.metrics.handshakeVia(outAuth, c.tr.kind())
		c.closeAsync(code, reason)
		return false
	}
	if err != nil || !t.verified {
		// Not ours: counted against the address it came from, not the
		// client id it names (see rejectUnverified).
		if s.auth.rejectUnverified(addrKey(c.ip), now) {
			return refuse(protocol.CloseForbidden, "too many rejected tickets")
		}
		return refuse(protocol.CloseForbidden, "bad ticket")
	}
	if s.auth.looping(t.id, now) {
		return refuse(protocol.CloseForbidden, "too many rejected tickets")
	}
	if s.auth.isRevoked(t.id) {
		s.auth.rejectVerified(t.id, now)
		return refuse(protocol.CloseForbidden, "forbidden")
	}
	exp := s.effectiveExpiry(t)
	if !now.Before(exp) {
		s.auth.rejectVerified(t.id, now)
		return refuse(protocol.CloseTokenExpired, "token expired")
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
		// The session's acknowledgement: a client that asked for no topic
		// is READY on it (its service layer). Queued even while frozen:
		// the gate holds its bytes, and unlike the ping it comes once.
		c.offer(c.encode(protocol.WelcomeFrame{Type: protocol.TypeWelcome, Session: c.session, Node: c.s.opts.Node}))
	})
}

// revokedCount is how many client ids are revoked.
func (a *authority) revokedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.revoked)
}
