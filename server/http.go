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
	"strings"
	"time"
)

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

// guard checks every request before routing it:
//   - the Host header must name an allowed host (421 otherwise), so a page
//     that rebinds its own DNS name to this server cannot reach it;
//   - a state-changing request (any method but GET, HEAD, OPTIONS) must not
//     come from a foreign Origin (403) and must say application/json (415),
//     which a cross-site form or a no-preflight fetch cannot;
//   - a non-WebSocket request gets read and write deadlines of
//     RequestTimeout, so an unfinished body cannot hold its socket.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "this server does not answer for that host name; allow it with -hosts"})
			return
		}
		if r.URL.Path != "/ws" {
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(s.opts.RequestTimeout)
			rc.SetReadDeadline(deadline)
			rc.SetWriteDeadline(deadline)
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
				s.log.Debug("cross-origin request refused") // without the origin or the path: the peer's text
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin request refused"})
				return
			}
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/json"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// demoOnly serves h only in Demo mode; otherwise it answers 403.
func (s *Server) demoOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Demo {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "the failure switches are off: start the server with -demo to use them"})
			return
		}
		h(w, r)
	}
}

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

// Handler returns the HTTP handler: /ws, /api/stats, /api/token,
// /healthz, /metrics and the static files, behind the Host, Origin and
// Content-Type checks of guard. The demo's switches are Demo's.
func (s *Server) Handler() http.Handler { return s.guard(s.routes()) }

// routes is Handler without its guard.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serveWS)
	mux.HandleFunc("GET /api/stats", s.serveStats)
	mux.HandleFunc("POST /api/token", s.serveToken)
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.Handle("GET /metrics", s.serveMetrics())
	if s.static != nil {
		mux.Handle("/", s.static)
	}
	return mux
}
