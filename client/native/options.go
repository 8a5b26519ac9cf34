//go:build !js

package native

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
)

// Options configures a Client. A nil *Options means every default: the
// last stage (stages.Max: the session contract and resume) with the
// library's defaults, no callbacks, one server.
type Options struct {
	// Config is the client's configuration; Dial copies it. Default
	// stages.Must(stages.Max): every fix, the library's
	// defaults. A demo stage: Config: stages.Must(3). Its Rand
	// defaults to math/rand/v2's Float64; OnEvent turns its Trace on and
	// Token its Auth. Transports defaults to [client.TransportWebSocket]
	// here (the browser's default is both): a Go program opts in to the
	// HTTP transport, for a proxy that refuses upgrades, with
	// [client.TransportWebSocket, client.TransportHTTP]; the core's stage 8
	// rules then decide when it falls back and when it moves back to
	// WebSocket, as in the browser (docs/http-transport.md). WebSocket
	// alone stays the default so a program that never asked for HTTP
	// requests never sends any. Follower is refused: tab leadership is the
	// browser's.
	Config *Config
	// OnState, OnUpdate and OnEvent run on the client's goroutine: they
	// must return quickly and must not call Request or Close (start a
	// goroutine for that). OnEvent receives trace events; setting it turns
	// tracing on. Each defaults to nil: not called.
	OnState  func(State)
	OnUpdate func(Update)
	OnEvent  func(Event)
	// OnRecord receives one sanitized record per reconnect decision (no
	// token, payload or peer text in it), and one for the READY that ends
	// a run of failures (setting it turns Config.RecordRecoveries on);
	// same rules as OnState. NewRecordLog's Record writes them as JSON
	// lines. Default nil.
	OnRecord func(Record)
	// Token, when set, is called before every dial for the ticket the
	// client sends in its first frame, and late in each token's life for
	// the in-band refresh sent on the live connection (unless
	// Config.NoInBandRefresh). force asks for a fresh one (the server said
	// the last expired, or it is about to): never return a cached token
	// then. An error, or no answer within the core's TokenTimeout (ctx says
	// so), is a failed attempt, counted against the budget (a failed
	// refresh: the connection ends 4001 at expiry and the client dials
	// again). It runs on a goroutine of its own; ctx ends when the client
	// closes. Default nil: no auth frame.
	Token func(ctx context.Context, force bool) (string, error)
	// OnContinuityLost hears of updates the client will never deliver
	// (stage 7: the server no longer had them); same rules as OnState.
	// Default nil.
	OnContinuityLost func(ContinuityLost)
	// OnTopicError hears of a subscribe the server refused (code:
	// forbidden, too_many_subscriptions, unavailable, an application's own,
	// ...). A transient error (unknown_topic, too_many_topics, unavailable,
	// internal, timeout, rate_limited) is asked for again at the subscribe
	// deadline, and READY waits for it; any other code is the server's
	// answer for this connection, asked for again on the next, and holds
	// READY (State.Refused, WaitReady's *SubscribeError) until the app
	// gives the topic up. The server's message is in State.Refused and
	// the *SubscribeError. Same rules as OnState. Default nil.
	OnTopicError func(topic, code string)
	// OnPresence hears the join and leave events of the topics subscribed
	// with presence (SubscribeWith); same rules as OnState. Default nil.
	OnPresence func(PresenceEvent)
	// LoadCursors, when set, is called once by Dial for the cursors to
	// resume from (what StoreCursors last saved); StoreCursors is called
	// on the client's goroutine after every batch of updates with every
	// topic's cursor. Same rules as OnState. Default nil: resume from
	// memory only.
	LoadCursors  func() []Cursor
	StoreCursors func([]Cursor)
	// URLs are more servers to use: Dial's url first, then these, in turn,
	// one further on every reconnect (each reconnect follows a failure).
	// Each is a ws://, wss://, http:// or https:// URL with a host. Default
	// none: Dial's url only.
	URLs []string
	// DialOptions are passed to websocket.Dial for every socket. Over the
	// HTTP transport its HTTPClient carries the requests and its
	// HTTPHeader is added to each. Default nil: coder/websocket's
	// defaults, and an HTTP client of the Client's own.
	DialOptions *websocket.DialOptions
	// Handshakes, when set, is a limiter the Client takes a slot from
	// before every dial, shared with the other Clients of the process
	// (NewHandshakeLimiter: a global rate, a rate per Tenant, a bounded
	// number of waiting dials). The wait counts against the dial's
	// ConnectTimeout, and a dial the core gives up (its connect timeout,
	// the reconnect window, Close) stops waiting. Default nil: dials are
	// not spaced.
	Handshakes *HandshakeLimiter
	// Tenant names this Client's tenant for Handshakes' rate per tenant;
	// it is the program's label, never sent. Default "": a tenant of its
	// own like any other.
	Tenant string
	// CloseTimeout bounds how long Close waits for the close handshakes of
	// the client's sockets (1000, "client stopped") before it drops them.
	// Zero means the default, 2s; a negative value is refused.
	CloseTimeout time.Duration
}

// defaultCloseTimeout is Options.CloseTimeout's default.
const defaultCloseTimeout = 2 * time.Second

// ErrInvalidOptions is what every *OptionError is: errors.Is(err,
// ErrInvalidOptions) tells a refused configuration from every other error
// of Dial.
var ErrInvalidOptions = errors.New("invalid options")

// OptionError is Dial's error for a value it refuses: the option's name
// (a field of Options, or "url" for Dial's own argument) and why. It wraps
// the cause, so errors.Is and errors.As reach it,
// and errors.Is(err, ErrInvalidOptions) holds.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return "invalid " + e.Option + ": " + e.Err.Error() }

func (e *OptionError) Unwrap() error { return e.Err }

// Is reports ErrInvalidOptions.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOptions }

// cloneWithDefaults returns a copy of o (nil: all defaults) with every
// default filled in; its Config is a copy of its own, ready for
// client.New. It refuses an invalid value with an *OptionError. It calls
// none of o's functions.
func (o *Options) cloneWithDefaults() (*Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.CloseTimeout < 0 {
		return nil, &OptionError{Option: "CloseTimeout", Err: errors.New("must not be negative (0 means the default, 2s)")}
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = defaultCloseTimeout
	}
	for _, u := range c.URLs {
		if err := checkURL(u); err != nil {
			return nil, &OptionError{Option: "URLs", Err: err}
		}
	}
	c.URLs = append([]string(nil), c.URLs...) // the caller's slice stays the caller's
	cfg := new(Config)
	if c.Config != nil {
		cfg = new(*c.Config)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Transports == nil {
		cfg.Transports = []Transport{client.TransportWebSocket}
	}
	if cfg.Follower {
		return nil, &OptionError{Option: "Config", Err: errNoFollower}
	}
	if c.OnEvent != nil {
		cfg.Trace = true
	}
	if c.OnRecord != nil {
		cfg.RecordRecoveries = true // a run's records end in its outcome
	}
	if c.Token != nil {
		cfg.Auth = true
	}
	c.Config = cfg
	return &c, nil
}

// errNoFollower is the Config's cause for what only the browser driver
// does.
var errNoFollower = errors.New("Follower is the browser's (tabs that share a connection): a native client leads")

// errURL is checkURL's cause: a URL websocket.Dial could never use.
var errURL = errors.New("want a ws://, wss://, http:// or https:// URL with a host")

// checkURL refuses a URL every dial of it would fail on (coder/websocket
// takes these four schemes), so the mistake is Dial's error rather than a
// client that retries for ever.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return errURL
	}
	if u.Host == "" {
		return errURL
	}
	return nil
}
