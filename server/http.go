//go:build !js

package server

import (
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
)

// Mounting. Handler serves the WebSocket endpoint only, at whatever path
// the application mounts it. What else an application may want is a
// handler of its own, to mount where it wants (Demo.Handler mounts them all
// as wsready serve serves them):
//
//	Handler         the WebSocket endpoint (/ws in wsready serve)
//	TicketHandler   POST: a ticket for a client id (auth_tickets.go; /api/token)
//	StatsHandler    GET: Stats as JSON (stats.go; /api/stats)
//	MetricsHandler  GET: Prometheus metrics (metrics.go; /metrics)
//	HealthHandler   GET: ok, or 503 while draining (drain.go; /healthz)
//	FleetHandler    GET: the fleet page and its JSON (fleetpage.go; /fleet/ with -fleet only)
//	StaticHandler   GET: files, such as web.FS() (static.go; /)
//
// Each applies the guards it needs (hostGuard, httpGuard): every one the
// Host check; the plain HTTP ones read and write deadlines; the ones that
// change state or issue credentials the Origin and Content-Type checks.

// Handler returns the WebSocket endpoint, behind the Host check; it checks
// the Origin of each upgrade itself (same origin or OriginPatterns, else
// accepted and closed with 1008). Under the same mount it serves the HTTP
// transport (transport_http.go, docs/http-transport.md): <mount>/probe,
// /session, /sse and /send, for clients whose WebSocket is blocked. Any
// other request that is not a WebSocket upgrade gets 426 with a JSON
// error. Mount it at the path clients dial and at that path + "/" (a
// ServeMux pattern for the subtree), as Demo.Handler does with /ws. With
// Options.Identify the upgrade (or session) request itself, its cookie or
// header, says who is connecting.
func (s *Server) Handler() http.Handler { return s.hostGuard(http.HandlerFunc(s.serve)) }

// HTTPServer returns an http.Server for h (an application's mux with
// Handler mounted on it, or Demo.Handler) with the timeouts and header
// limit of the Options (ReadHeaderTimeout, IdleTimeout, MaxHeaderBytes), so
// an unfinished request or an idle keep-alive cannot hold a socket forever.
// WebSocket connections are hijacked and governed by WriteTimeout and
// MessageTimeout instead.
func (s *Server) HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
	}
}

// hostGuard refuses with 421 a request whose Host header names a host
// that is not allowed (Options.AllowedHosts), so a page that rebinds its
// own DNS name to this server cannot reach it: that page's Origin equals
// its Host, which a same-origin check alone would pass.
func (s *Server) hostGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "this server does not answer for that host name; allow it with -hosts (Options.AllowedHosts)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// httpGuard is hostGuard for a plain HTTP handler that serves methods
// (its others get 405 with Allow), and more:
//   - the request gets read and write deadlines of RequestTimeout, so an
//     unfinished body cannot hold its socket;
//   - a state-changing request (any method but GET, HEAD, OPTIONS) must not
//     come from a foreign Origin (403) and must say application/json (415),
//     which a cross-site form or a no-preflight fetch cannot.
func (s *Server) httpGuard(next http.Handler, methods ...string) http.Handler {
	allow := strings.Join(methods, ", ")
	return s.hostGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(s.opts.RequestTimeout)
		rc.SetReadDeadline(deadline)
		rc.SetWriteDeadline(deadline)
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method " + r.Method + " not allowed here: " + allow})
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
				s.logs.Debug("cross-origin request refused") // without the origin or the path: the peer's text
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin request refused"})
				return
			}
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/json"})
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
}

// The methods a read-only handler serves.
var readMethods = []string{http.MethodGet, http.MethodHead}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	for _, a := range s.opts.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// originAllowed reports whether origin is the request's own host or matches
// one of OriginPatterns (as coder/websocket matches them for upgrades).
func (s *Server) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	for _, p := range s.opts.OriginPatterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, errors.New("encode: "+err.Error()).Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
