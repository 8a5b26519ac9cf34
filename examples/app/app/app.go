//go:build !js

// Package app is a small web shop that embeds wsready as a Go team would
// (docs/app.md): its own login and session cookie, its own mux,
// and wsready mounted at /realtime with the application's hooks.
//
//   - Who the user is: the session cookie. In cookie mode (the default)
//     wsready's Identify hook reads it from the WebSocket upgrade itself
//     and the page sends no token; in ticket mode wsready's Authenticate
//     hook reads it when the page asks /auth/token for a ticket (pages of
//     other origins do so in cookie mode too); in JWT mode the app mints short-lived HS256 JWTs itself at
//     the same path and wsready verifies them (Options.JWT).
//   - What a user may do: Authorize (and AuthorizePublish). Subscribe to
//     its own user:<id>.* topics and to room:lobby (with its presence),
//     publish to room:lobby, call cart.add and cart.get; everything else
//     is forbidden.
//   - Methods: cart.add (params {sku, qty}) answers from the app's own
//     state and publishes the new cart from Go to user:<id>.cart; its
//     refusals are typed (invalid_qty, unknown_sku, cart_full). cart.get
//     answers the cart as it is.
//
// main.go (package main beside this one) is the program; the browser suite
// (e2e/app_test.go) imports this package to run the app on loopback.
package app

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/server"
)

// Users are the demo's fixed accounts: a real app has a user table.
var Users = []string{"alice", "bob", "carol"}

// Lobby is the shared room every signed-in user may join, with presence.
const Lobby = "room:lobby"

// CartTopic is user's private topic: the app publishes the user's cart to it
// after every change.
func CartTopic(user string) string { return "user:" + user + ".cart" }

// Token modes: how the page's connection says who it is.
const (
	// TokensCookie: no token. The upgrade request carries the session
	// cookie and wsready's Identify hook reads it, so the page gives the
	// client no token hook. /auth/token still issues tickets, for a page
	// of another origin (its requests carry no cookie of ours).
	TokensCookie = "cookie"
	// TokensTicket: wsready's own tickets, issued by Server.TicketHandler
	// with the Authenticate hook reading the session cookie.
	TokensTicket = "ticket"
	// TokensJWT: HS256 JWTs the app mints itself (as an identity provider
	// would), verified by wsready through Options.JWT.
	TokensJWT = "jwt"
)

// Config configures the app. The zero Config is a working app in ticket
// mode with random keys (sessions and tickets then end with the process).
type Config struct {
	// SessionKey signs the session cookie (HMAC-SHA256): at least 32 bytes.
	// Default: 32 random bytes made by New.
	SessionKey []byte
	// SessionLife is how long a login lasts. Default 12h.
	SessionLife time.Duration
	// Tokens is TokensCookie (the default when empty), TokensTicket or
	// TokensJWT.
	Tokens string
	// JWTSecret signs the app's JWTs in JWT mode (HS256): at least 32
	// bytes. Default: 32 random bytes made by New.
	JWTSecret []byte
	// JWTLife is how long a JWT lives (its exp) in JWT mode: wsready closes
	// the connection with 4001 at exp and the page's token hook is called
	// for a new one. Required (above 0, at most 24h) in JWT mode; must be 0
	// in ticket mode.
	JWTLife time.Duration
	// Static is the built page (examples/app/web/dist), served by wsready's
	// StaticHandler: read once by New, with ETags and the .br and .gz files
	// beside each file sent to browsers that take them. Default nil: / says
	// how to build it.
	Static fs.FS
	// AllowedHosts are the host names clients use besides loopback's
	// (server.Options.AllowedHosts). Default none.
	AllowedHosts []string
	// Logger receives the app's and wsready's logs. Default slog.Default().
	Logger *slog.Logger
}

// Catalogue is what the shop sells, by SKU.
var Catalogue = map[string]string{
	"apple": "Apple",
	"pear":  "Pear",
	"fig":   "Fig",
}

// Bounds of a cart: every count a client can grow has one.
const (
	MaxQtyPerAdd  = 10 // cart.add's qty is 1..MaxQtyPerAdd
	MaxQtyPerLine = 99 // one SKU's quantity in a cart; more is cart_full
)

// Line is one SKU in a cart.
type Line struct {
	SKU  string `json:"sku"`
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

// Cart is what cart.add and cart.get answer and what user:<id>.cart
// carries. Version counts its changes, so a page that gets the cart both
// from an update and from an answer keeps the newer one.
type Cart struct {
	User    string `json:"user"`
	Lines   []Line `json:"lines"`
	Version int64  `json:"version"`
}

// App is the web app: an http.Handler with wsready inside.
type App struct {
	cfg  Config
	srv  *server.Server
	mux  *http.ServeMux
	log  *slog.Logger
	sess sessions

	mu    sync.Mutex
	carts map[string]*Cart // by user: at most len(Users) entries
}

// New builds the app and its wsready server; Close stops the server.
func New(cfg Config) (*App, error) {
	var errs []error
	if cfg.SessionLife < 0 {
		errs = append(errs, fmt.Errorf("SessionLife is %v: a duration must be positive (0 for 12h)", cfg.SessionLife))
	}
	if cfg.SessionLife == 0 {
		cfg.SessionLife = 12 * time.Hour
	}
	if cfg.SessionKey == nil {
		cfg.SessionKey = randomKey()
	} else if len(cfg.SessionKey) < 32 {
		errs = append(errs, fmt.Errorf("SessionKey has %d bytes: at least 32", len(cfg.SessionKey)))
	}
	switch cfg.Tokens {
	case "":
		cfg.Tokens = TokensCookie
		fallthrough
	case TokensCookie, TokensTicket:
		if cfg.JWTLife != 0 {
			errs = append(errs, fmt.Errorf("JWTLife is %v in %s mode: set Tokens to %q", cfg.JWTLife, cfg.Tokens, TokensJWT))
		}
	case TokensJWT:
		if cfg.JWTLife <= 0 || cfg.JWTLife > 24*time.Hour {
			errs = append(errs, fmt.Errorf("JWTLife is %v: JWT mode needs a life above 0 and at most 24h", cfg.JWTLife))
		}
		if cfg.JWTSecret == nil {
			cfg.JWTSecret = randomKey()
		} else if len(cfg.JWTSecret) < 32 {
			errs = append(errs, fmt.Errorf("JWTSecret has %d bytes: at least 32", len(cfg.JWTSecret)))
		}
	default:
		errs = append(errs, fmt.Errorf("Tokens is %q: it must be %q, %q or %q", cfg.Tokens, TokensCookie, TokensTicket, TokensJWT))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("failed to configure the app: %w", errors.Join(errs...))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &App{
		cfg:   cfg,
		log:   cfg.Logger,
		sess:  sessions{key: cfg.SessionKey, life: cfg.SessionLife},
		carts: make(map[string]*Cart),
	}
	opts := &server.Options{
		AllowedHosts: cfg.AllowedHosts,
		Authorize:    a.authorize,
		// Publishing is on for the lobby; the same rules name it, and
		// without AuthorizePublish every publish would be refused.
		Publish:          true,
		AuthorizePublish: a.authorize,
		Methods: map[string]server.Method{
			"cart.add": a.cartAdd,
			"cart.get": a.cartGet,
		},
		Logger: cfg.Logger,
	}
	if cfg.Tokens == TokensJWT {
		opts.JWT = &server.JWTOptions{HS256Secret: cfg.JWTSecret, Issuer: jwtIssuer, Audience: jwtAudience}
	} else {
		opts.Authenticate = a.authenticate
	}
	if cfg.Tokens == TokensCookie {
		opts.Identify = a.identify
	}
	srv, err := server.New(opts)
	if err != nil {
		return nil, fmt.Errorf("failed to create the wsready server: %w", err)
	}
	a.srv = srv

	mux := http.NewServeMux()
	rt := srv.Handler() // the WebSocket, and under it the HTTP transport's probe, session, sse and send
	mux.Handle("/realtime", rt)
	mux.Handle("/realtime/", rt)
	if cfg.Tokens == TokensJWT {
		mux.Handle("POST /auth/token", a.guard(http.HandlerFunc(a.serveJWT)))
	} else {
		mux.Handle("POST /auth/token", srv.TicketHandler()) // same origin, JSON, rate-limited: the library's
	}
	mux.Handle("POST /login", a.guard(http.HandlerFunc(a.serveLogin)))
	mux.Handle("POST /logout", a.guard(http.HandlerFunc(a.serveLogout)))
	mux.HandleFunc("GET /me", a.serveMe)
	mux.Handle("GET /healthz", srv.HealthHandler())
	// The page: "/" without a method, as "GET /" would conflict with the
	// "/realtime/" subtree (which serves POSTs too); others get 405.
	// The page through the library's StaticHandler: strong ETags, and the
	// .br and .gz the Vite plugin (wsready/vite) writes beside each file
	// sent to browsers that take them (the wasm: 0.65 MB of brotli instead
	// of 3.2 MB). Behind the Host check, as the app's other routes; it reads
	// the files once, here (a rebuilt page needs a restart).
	var page http.Handler
	if cfg.Static != nil {
		page = srv.StaticHandler(cfg.Static)
	} else {
		page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "The page is not built: run make app (or give -static DIR with the built examples/app/web/dist).")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		page.ServeHTTP(w, r)
	})
	a.mux = mux
	return a, nil
}

// ServeHTTP serves the app's routes.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Server is the embedded wsready server (the app publishes with it; tests
// read presence).
func (a *App) Server() *server.Server { return a.srv }

// HTTPServer is an http.Server for the app with wsready's timeouts.
func (a *App) HTTPServer() *http.Server { return a.srv.HTTPServer(a) }

// Close stops the wsready server: its connections close with 1001.
func (a *App) Close() error { return a.srv.Close() }

func randomKey() []byte {
	k := make([]byte, 32)
	rand.Read(k) // never fails (crypto/rand)
	return k
}

// authenticate is wsready's Authenticate hook (ticket mode): the session
// cookie says who asks for a ticket.
func (a *App) authenticate(r *http.Request) (server.Identity, error) {
	user, ok := a.sess.user(r, time.Now())
	if !ok {
		return server.Identity{}, &server.Error{Code: "not_signed_in", Message: "sign in first"}
	}
	return server.Identity{User: user}, nil
}

// identify is wsready's Identify hook (cookie mode): the session cookie on
// the upgrade (or the HTTP transport's session request) says who connects.
// Without a valid one it names no one, and wsready asks for a token (Auth
// is required by default): a ticket from /auth/token, or the connection is
// closed with 4003.
func (a *App) identify(r *http.Request) (server.Identity, error) {
	user, ok := a.sess.user(r, time.Now())
	if !ok {
		return server.Identity{}, nil
	}
	return server.Identity{User: user}, nil
}

// authorize is wsready's Authorize and AuthorizePublish hook: a user's own
// user:<id>.* topics and the lobby to subscribe to, the lobby's presence,
// the lobby to publish to, the cart's methods to call; nothing else. It
// runs on the connection's reader, so it only compares strings.
func (a *App) authorize(_ context.Context, id server.Identity, act server.Action) error {
	if id.Anonymous() {
		return &server.Error{Code: "forbidden", Message: "sign in first"}
	}
	switch act.Kind {
	case server.ActSubscribe:
		if act.Topic == Lobby || strings.HasPrefix(act.Topic, "user:"+id.User+".") {
			return nil
		}
	case server.ActPresence, server.ActPublish:
		if act.Topic == Lobby {
			return nil
		}
	case server.ActRequest:
		if act.Method == "cart.add" || act.Method == "cart.get" {
			return nil
		}
	}
	return &server.Error{Code: "forbidden", Message: "not allowed"}
}

// cartAdd is the method cart.add: params {"sku": S, "qty": N}.
func (a *App) cartAdd(ctx context.Context, call *server.Call) (any, error) {
	var p struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	if err := json.Unmarshal(call.Params, &p); err != nil {
		return nil, &server.Error{Code: "bad_params", Message: `params are {"sku": string, "qty": number}`}
	}
	if p.Qty < 1 || p.Qty > MaxQtyPerAdd {
		return nil, &server.Error{Code: "invalid_qty", Message: fmt.Sprintf("qty must be 1 to %d", MaxQtyPerAdd)}
	}
	name, ok := Catalogue[p.SKU]
	if !ok {
		return nil, &server.Error{Code: "unknown_sku", Message: "no such product"}
	}
	user := call.Identity.User
	// Under the lock from the change to its publish, so the topic gets the
	// versions in order and a failed publish changes nothing.
	a.mu.Lock()
	defer a.mu.Unlock()
	next := a.cartLocked(user)
	i := slices.IndexFunc(next.Lines, func(l Line) bool { return l.SKU == p.SKU })
	if i < 0 {
		next.Lines = append(next.Lines, Line{SKU: p.SKU, Name: name})
		i = len(next.Lines) - 1
	}
	if next.Lines[i].Qty+p.Qty > MaxQtyPerLine {
		return nil, &server.Error{Code: "cart_full", Message: fmt.Sprintf("at most %d of one product", MaxQtyPerLine)}
	}
	next.Lines[i].Qty += p.Qty
	next.Version++
	data, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the cart: %w", err)
	}
	if _, err := a.srv.Publish(ctx, CartTopic(user), data); err != nil {
		// The client gets "internal"; the log names the method, not the cart.
		return nil, fmt.Errorf("failed to publish the cart: %w", err)
	}
	a.carts[user] = &next
	return next, nil
}

// cartGet is the method cart.get: the caller's cart as it is (the page
// asks for it at start; later changes come on user:<id>.cart).
func (a *App) cartGet(_ context.Context, call *server.Call) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cartLocked(call.Identity.User), nil
}

// cartLocked returns a copy of user's cart (an empty one at first).
func (a *App) cartLocked(user string) Cart {
	c, ok := a.carts[user]
	if !ok {
		return Cart{User: user, Lines: []Line{}}
	}
	return Cart{User: c.User, Lines: slices.Clone(c.Lines), Version: c.Version}
}

// The claims of the app's JWTs: wsready checks iss and aud (Options.JWT).
const (
	jwtIssuer   = "wsready-example-app"
	jwtAudience = "realtime"
)

// serveJWT mints a JWT for the signed-in user (JWT mode), answering what
// TicketHandler answers: {"token": ..., "expiresAt": ms}.
func (a *App) serveJWT(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	user, ok := a.sess.user(r, now)
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "sign in first"})
		return
	}
	// exp is whole seconds: the token lives JWTLife less up to a second.
	exp := now.Add(a.cfg.JWTLife).Truncate(time.Second)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject:   user,
		Issuer:    jwtIssuer,
		Audience:  jwt.ClaimStrings{jwtAudience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(a.cfg.JWTSecret)
	if err != nil {
		a.log.Error("failed to sign a JWT", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"token": tok, "expiresAt": exp.UnixMilli()})
}

// serveLogin signs a user in: {"user": name} from Users sets the session
// cookie. A real app checks a password here; the demo's list is its proof.
func (a *App) serveLogin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		User string `json:"user"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `the body is {"user": name}`})
		return
	}
	if !slices.Contains(Users, req.User) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unknown user: one of " + strings.Join(Users, ", ")})
		return
	}
	http.SetCookie(w, a.sess.cookie(req.User, time.Now(), r.TLS != nil))
	writeJSON(w, http.StatusOK, map[string]string{"user": req.User})
}

// serveLogout ends the session: the cookie is cleared and the user's
// realtime connections (every tab) are closed with 4003, which the client
// takes as terminal.
func (a *App) serveLogout(w http.ResponseWriter, r *http.Request) {
	user, ok := a.sess.user(r, time.Now())
	http.SetCookie(w, a.sess.clear(r.TLS != nil))
	if ok {
		if err := a.srv.Disconnect(r.Context(), user, "signed out"); err != nil {
			a.log.Warn("failed to disconnect a user who signed out", "err", err)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveMe says who is signed in (401 if nobody), the demo's users and
// products, and the token mode.
func (a *App) serveMe(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	skus := make([]string, 0, len(Catalogue))
	for s := range Catalogue {
		skus = append(skus, s)
	}
	slices.Sort(skus)
	body := map[string]any{"users": Users, "skus": skus, "tokens": a.cfg.Tokens}
	user, ok := a.sess.user(r, time.Now())
	if !ok {
		writeJSON(w, http.StatusUnauthorized, body)
		return
	}
	body["user"] = user
	writeJSON(w, http.StatusOK, body)
}

// guard refuses a state-changing request that a cross-site page could
// send with the user's cookie: it must say Content-Type application/json
// (a form or a no-preflight fetch cannot) and, if it carries an Origin,
// come from this host. The cookie is SameSite=Strict as well.
func (a *App) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "application/json" && !strings.HasPrefix(ct, "application/json;") {
			writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/json"})
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin request refused"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
