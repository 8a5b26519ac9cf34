//go:build !js

package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/protocol"
	"golang.org/x/time/rate"
)

// Tickets are the server's own tokens: short-lived, signed, opaque to
// clients, and carrying the Identity they were issued for:
//
//	base64url(payload) "." base64url(HMAC-SHA256(AuthKey, payload))
//
// where payload is, in bytes: the version (2); issuedAtMs and expiresAtMs
// (int64, big-endian); the user and the tenant (each a uvarint length and
// its bytes); the number of claims (one byte) and each claim, sorted by
// key (key and value, each a uvarint length and its bytes). The signature
// is checked before anything in the payload is read, and a payload with
// anything out of its bounds (Identity.Validate), a trailing byte or a
// repeated claim is refused. The largest Identity makes a ticket of about
// 3.2 KB, under protocol.MaxTokenBytes (4096), so every valid Identity
// fits in one.
//
// TicketHandler (POST /api/token in wsready serve) issues them: for the
// Identity Options.Authenticate finds in the request, or without that
// hook, in Demo mode or with IssueTickets only, for any client id posted
// (it asks no proof of identity). The application may also issue them
// itself (IssueTicket). The client sends one in its first frame,
// {"type":"auth","token":"..."}, never in the URL. A ticket is never
// logged.

// ticketVersion is the payload's first byte. Tickets live minutes, so a
// new format needs no compatibility with the old: tickets of an older
// format are refused as bad, and the client fetches a new one.
const ticketVersion = 2

// errBadTicket is a ticket that is malformed or not signed with our key.
var errBadTicket = errors.New("bad ticket")

// ticket is a token that verified: ours (a ticket) or the application's
// (a JWT, auth_jwt.go). expires is when the token stops being good (for a JWT:
// its exp plus the leeway).
type ticket struct {
	identity Identity
	issued   time.Time
	expires  time.Time
}

// validClientID: 1 to 64 of [A-Za-z0-9_-]: the client ids the demo's
// ticket endpoint issues tickets for.
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

func (a *authority) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write(payload)
	return m.Sum(nil)
}

// issue signs a ticket for id, issued at now and living life. id must be
// a valid, non-anonymous Identity.
func (a *authority) issue(id Identity, now time.Time, life time.Duration) (string, time.Time, error) {
	if id.Anonymous() {
		return "", time.Time{}, fmt.Errorf("failed to issue a ticket: %w: a ticket needs a user", ErrBadIdentity)
	}
	if err := id.Validate(); err != nil {
		return "", time.Time{}, fmt.Errorf("failed to issue a ticket: %w", err)
	}
	exp := now.Add(life)
	payload := []byte{ticketVersion}
	payload = binary.BigEndian.AppendUint64(payload, uint64(now.UnixMilli()))
	payload = binary.BigEndian.AppendUint64(payload, uint64(exp.UnixMilli()))
	field := func(s string) {
		payload = binary.AppendUvarint(payload, uint64(len(s)))
		payload = append(payload, s...)
	}
	field(id.User)
	field(id.Tenant)
	payload = append(payload, byte(len(id.Claims))) // at most MaxClaims (Validate)
	for _, k := range slices.Sorted(maps.Keys(id.Claims)) {
		field(k)
		field(id.Claims[k])
	}
	tok := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(a.mac(payload))
	if len(tok) > protocol.MaxTokenBytes {
		// Not reachable with a valid Identity (see the format above); kept
		// so a change of bounds cannot issue a ticket no client can send.
		return "", time.Time{}, fmt.Errorf("failed to issue a ticket: %w: it would pass %d bytes", ErrBadIdentity, protocol.MaxTokenBytes)
	}
	return tok, exp, nil
}

// parse verifies a ticket and reads it. Any error means it did not verify
// (malformed, another key's, another format): nothing in it may be
// trusted, its user least of all.
func (a *authority) parse(tok string) (ticket, error) {
	p64, s64, ok := strings.Cut(tok, ".")
	if !ok || len(tok) > protocol.MaxTokenBytes {
		return ticket{}, errBadTicket
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(s64)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, a.mac(payload)) {
		return ticket{}, errBadTicket
	}
	t, ok := decodeTicket(payload)
	if !ok {
		return ticket{}, errBadTicket
	}
	return t, nil
}

// decodeTicket reads a signed payload, refusing anything out of bounds.
func decodeTicket(b []byte) (ticket, bool) {
	if len(b) < 17 || b[0] != ticketVersion {
		return ticket{}, false
	}
	iat := int64(binary.BigEndian.Uint64(b[1:9]))
	exp := int64(binary.BigEndian.Uint64(b[9:17]))
	b = b[17:]
	bad := false
	field := func(max int) string {
		n, k := binary.Uvarint(b)
		if bad || k <= 0 || n > uint64(max) || n > uint64(len(b)-k) {
			bad = true
			return ""
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s
	}
	id := Identity{User: field(MaxIdentityBytes), Tenant: field(MaxIdentityBytes)}
	if bad || len(b) < 1 || int(b[0]) > MaxClaims {
		return ticket{}, false
	}
	n := int(b[0])
	b = b[1:]
	if n > 0 {
		id.Claims = make(map[string]string, n)
	}
	for range n {
		k, v := field(64), field(256)
		if _, dup := id.Claims[k]; bad || dup {
			return ticket{}, false
		}
		id.Claims[k] = v
	}
	if len(b) != 0 || id.Anonymous() || id.Validate() != nil {
		return ticket{}, false
	}
	return ticket{identity: id, issued: time.UnixMilli(iat), expires: time.UnixMilli(exp)}, true
}

// IssueTicket signs a ticket for id, living TicketLife (the demo's
// ShortTicketLife while the demo's Short tokens switch is on), for an application that
// hands tickets out itself (in its login response, say) rather than
// through TicketHandler. id must name a user and be within its bounds
// (errors.Is(err, ErrBadIdentity) otherwise). It works whatever turns
// TicketHandler on or off; the tickets are good only with Auth optional
// or required.
func (s *Server) IssueTicket(id Identity) (token string, expires time.Time, err error) {
	return s.auth.issue(id, s.opts.Now(), s.ticketLife())
}

func (s *Server) ticketLife() time.Duration {
	if f := s.hook(); f != nil && f.ShortensTickets() {
		return s.faultSettings().ShortTicketLife
	}
	return s.opts.TicketLife
}

// ticketIssuanceEnabled says whether POST /api/token issues tickets: with
// an Authenticate hook, in Demo mode or with IssueTickets.
func (s *Server) ticketIssuanceEnabled() bool {
	return s.opts.Authenticate != nil || s.opts.Demo || s.opts.IssueTickets
}

// TicketHandler issues tickets, signed with Options.AuthKey and living
// TicketLife, answering {"token": "...", "expiresAt": ms}.
//
// With Options.Authenticate, the ticket carries the Identity the hook
// finds in the request (the application's cookie, session or bearer
// token); the body is not read ("{}" will do). A hook's error answers 401
// with a JSON error (the code and message of an *Error, else "not
// authenticated") and issues nothing. Without the hook it is on only with
// Options.IssueTickets or Options.Demo, and issues a ticket for the posted
// {"clientId": "..."} (the Identity's User) to anyone who asks, since it
// asks no proof of identity (403 otherwise).
//
// 404 with Auth off; 429 over TicketRate per client address. Behind the
// Host check and, as it issues credentials, same origin (or
// OriginPatterns) and Content-Type application/json only; POST only.
// wsready serve mounts it at /api/token.
func (s *Server) TicketHandler() http.Handler {
	return s.httpGuard(http.HandlerFunc(s.serveToken), http.MethodPost)
}

// serveToken issues a ticket (TicketHandler). Every answer's body is JSON.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthOff {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "auth is off: start the server with -auth optional or -auth required"})
		return
	}
	if !s.ticketIssuanceEnabled() {
		// It would hand a ticket for any client id to anyone who can reach
		// the port, and -auth required would then stop nobody.
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "ticket issuance is off: without an Authenticate hook this endpoint gives a ticket for any client id to anyone, so it is on only with -demo or -issue-tickets; in production the application says who the caller is (Options.Authenticate) or issues tickets itself (Server.IssueTicket)"})
		return
	}
	now := s.opts.Now()
	if ok, wait := s.auth.issuance.allow(addrKey(s.clientIP(r)), now); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(ceilSeconds(wait)))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": "too many ticket requests from this address: try again after Retry-After seconds"})
		return
	}
	var id Identity
	if s.opts.Authenticate != nil {
		var ok bool
		if id, ok = s.callAuthenticate(w, r); !ok {
			return
		}
	} else {
		var req struct {
			ClientID string `json:"clientId"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&req); err != nil || !validClientID(req.ClientID) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "clientId must be 1 to 64 of A-Z a-z 0-9 _ -"})
			return
		}
		id = Identity{User: req.ClientID}
	}
	tok, exp, err := s.auth.issue(id, now, s.ticketLife())
	if err != nil {
		s.logs.Error("failed to issue a ticket", "err", err.Error())
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"token": tok, "expiresAt": exp.UnixMilli()})
}

// callAuthenticate asks the application's hook who the caller is. On a
// refusal, an invalid Identity or a panic it has answered and reports
// false.
func (s *Server) callAuthenticate(w http.ResponseWriter, r *http.Request) (id Identity, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			// Not the panic's value: it may quote the request.
			s.logs.Error("Authenticate panicked")
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
			ok = false
		}
	}()
	id, err := s.opts.Authenticate(r)
	if err != nil {
		body := map[string]string{"error": "not authenticated"}
		var ae *Error
		if errors.As(err, &ae) && protocol.ValidErrorCode(ae.Code) {
			body = map[string]string{"error": ae.Message, "code": ae.Code}
		}
		writeJSON(w, http.StatusUnauthorized, body)
		return Identity{}, false
	}
	if err := id.Validate(); err != nil || id.Anonymous() {
		// The application's mistake, not the caller's: said in the log
		// (the bound it broke, never the identity) and as a 500.
		why := "no user"
		if err != nil {
			why = err.Error()
		}
		s.logs.Error("Authenticate returned an invalid identity", "why", why)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return Identity{}, false
	}
	return id, true
}

// ticketLimiter rate-limits POST /api/token per client address, a token
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
