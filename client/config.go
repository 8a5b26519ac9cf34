package client

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Features switches on the demo's fixes one by one. Stage(n) turns on the
// first n; each is also usable alone.
type Features struct {
	// Registry (stage 1): every request settles. Requests time out after
	// RequestTimeout and are rejected when their connection closes.
	Registry bool
	// Heartbeat (stage 2): the protocol layer. The watchdog closes a socket
	// whose pings stopped and reconnects without waiting for the close event.
	Heartbeat bool
	// StaleFilter (stage 3): only the current socket may change state.
	StaleFilter bool
	// Service (stage 4): the service layer. Subscribe after open, resend on
	// timeout, resubscribe on unsubscribed, never drop a healthy socket for it.
	Service bool
	// Backoff (stage 5): every reconnect follows Policy; the backoff resets
	// only after Cooldown of continuous READY; offline cancels a scheduled
	// reconnect and online reconnects after a small random delay. Without
	// it, the client reconnects NaiveDelay after a close (and at once after
	// the watchdog fires) and ignores offline/online.
	Backoff bool
	// Session (stage 6): every close is classified before any retry (see
	// classify.go): 1000 from the server ends the session, 4003/1008 is
	// forbidden, 4001 refreshes the token and dials at once, a retry-after
	// is a floor on the delay; an attempt budget and a reconnect window
	// that an open does not renew; the cap grows under sustained failure;
	// terminal states; no reconnect while the page is hidden.
	Session bool
	// Resume (stage 7): a cursor per topic; after every reconnect the
	// client subscribes with since=cursor and the server replays what it
	// missed; updates at or below the cursor are dropped; a loss the server
	// cannot replay is a ContinuityLost effect with its range.
	Resume bool
	// WhereUsersAre (stage 8): the browser as it really is. A blocked
	// WebSocket falls back to HTTP (Transports, transport.go); a timer
	// that fires far later than it was due means the clock jumped: probe
	// before killing, and do not charge the jump to the reconnect window
	// (clock.go); hidden pages keep their connection unless
	// PauseWhenHidden; sends that stop draining are noticed (Buffered,
	// SendStallTimeout); the state says how long the client has not been
	// READY (NotReadySince, Degraded, Offline). The opt-in queue and the
	// tab leadership events work at any stage.
	WhereUsersAre bool
}

// Config configures a Core. Zero durations take the defaults shown.
type Config struct {
	// Stage is informational: the stage preset this config came from, or -1.
	Stage    int
	Features Features
	// Topic, if set, is subscribed to from the start and stays subscribed
	// (Unsubscribe leaves it): the demo sets protocol.DefaultTopic
	// ("feed"). Default "": none. Core.Subscribe adds others. The service
	// layer is Up when every topic wanted is acknowledged, and with none
	// when the server's welcome arrives (service.go).
	Topic string
	// Cursors are where to resume topics from (Resume), as a driver
	// persisted them from Core.Cursors. Invalid entries are ignored.
	Cursors []Cursor
	// RequestTimeout bounds each request (Registry). Default 5s.
	RequestTimeout time.Duration
	// FirstPingTimeout is how long after open the first ping may take
	// (Heartbeat). Default 3s. After a ping the deadline is two intervals,
	// the interval being the one the server announced in that ping.
	FirstPingTimeout time.Duration
	// SubscribeTimeout is how long to wait for "subscribed" before
	// subscribing again on the same socket (Service). Default 2s.
	SubscribeTimeout time.Duration
	// ConnectTimeout bounds a dial: a socket not open by then is closed and
	// counts as a failed attempt. Default 10s.
	ConnectTimeout time.Duration
	// NaiveDelay is the reconnect delay without Backoff. Default 1s.
	NaiveDelay time.Duration
	// Policy chooses reconnect delays with Backoff. Default
	// FullJitter{Base: 1s, Cap: 30s}.
	Policy Policy
	// Cooldown is how long the client must stay READY before the backoff
	// resets (Backoff). Default 5s.
	Cooldown time.Duration
	// ResetOnOpen resets the backoff when a socket opens instead of after
	// Cooldown of READY (Backoff): the rule stage 5 replaced, kept so the
	// two can be compared (the simulator's Flapping table). Default off.
	ResetOnOpen bool
	// OnlineDelay is the upper bound of the random delay before reconnecting
	// when the network comes back (Backoff), or the page becomes visible
	// again (Session). Default 500ms.
	OnlineDelay time.Duration
	// Rand returns uniform numbers in [0, 1) for jitter. Required: the core
	// draws no randomness of its own, so a simulation can seed it.
	Rand func() float64
	// Trace makes the core emit EffLog effects describing what it does (for
	// the demo's event log). Default off.
	Trace bool

	// Budget is the most reconnect attempts in one run of failures before
	// the session gives up (Session). 0: unbounded (default).
	Budget int
	// Window is how long one run of failures may last before the session
	// gives up (Session). 0: unbounded (default).
	Window time.Duration
	// CapGrowth raises the backoff's cap under sustained failure (Session).
	// nil: DefaultCapGrowth (30 s, then 60 s after 2 minutes, 5 minutes
	// after 30); an empty, non-nil slice: never.
	CapGrowth []CapStep
	// MaxRefreshes is how many forced token refreshes in a row may fail to
	// reach READY before a 4001 is terminal (Session). Default 2.
	MaxRefreshes int
	// Auth says the driver has a token hook: the core asks for a token
	// (EffToken) before every dial and sends it in the first frame.
	Auth bool
	// TokenTimeout bounds the token hook; no answer by then is a failed
	// attempt. Default 10s.
	TokenTimeout time.Duration

	// Transports are the transports the client may use, the preferred
	// first: after 3 attempts in a row on it that never reach a first
	// ping, the client tries the second (for HTTP after the driver's
	// probe, EffProbeHTTP), and while on the second it tries the first
	// again every ReprobeInterval beside the live socket (transport.go).
	// nil: [TransportWebSocket, TransportHTTP] with WhereUsersAre,
	// [TransportWebSocket] without. One or two distinct transports.
	Transports []Transport
	// ReprobeInterval is how often a client on its fallback transport
	// tries the preferred one again. Default 10 minutes.
	ReprobeInterval time.Duration
	// PauseWhenHidden keeps stage 6's rule at stage 8: no reconnect while
	// the page is hidden. Default false: hidden tabs keep (and regain)
	// their connection. Stages 6 and 7 pause whatever it says.
	PauseWhenHidden bool
	// SendStallTimeout is how long the bytes queued on a socket may stay
	// above zero without decreasing (Buffered) before the client probes,
	// then closes with 4409 and reconnects (WhereUsersAre). Default 5s.
	SendStallTimeout time.Duration
	// DegradedAfter and OfflineAfter are how long the client must have
	// not been READY before State.Degraded and State.Offline turn on
	// (WhereUsersAre). Defaults 3s and 30s.
	DegradedAfter time.Duration
	OfflineAfter  time.Duration
	// QueueWhileNotReady makes every request and publish wait (up to its
	// own timeout) for READY instead of failing with ErrNotReady, carrying
	// an idempotency key (RequestOptions.Queue for one). Default off.
	QueueWhileNotReady bool
	// Follower starts the core as a tab that follows another's connection:
	// it dials nothing until BecameLeader (tabs.go). Default false: the
	// core leads.
	Follower bool
}

// ErrBadStage is returned for a stage outside 0..MaxStage.
var ErrBadStage = errors.New("stage must be 0, 1, 2, 3, 4, 5, 6, 7 or 8")

// StageError reports a stage outside the demo's; errors.Is(err,
// ErrBadStage) holds for it.
type StageError struct{ Stage int }

func (e *StageError) Error() string {
	return "invalid stage " + strconv.Itoa(e.Stage) + ": " + ErrBadStage.Error()
}

func (e *StageError) Unwrap() error { return ErrBadStage }

// MaxStage is the last demo stage.
const MaxStage = 8

// StageFeatures returns the fixes stage n turns on.
func StageFeatures(n int) (Features, error) {
	if n < 0 || n > MaxStage {
		return Features{}, &StageError{Stage: n}
	}
	return Features{
		Registry:      n >= 1,
		Heartbeat:     n >= 2,
		StaleFilter:   n >= 3,
		Service:       n >= 4,
		Backoff:       n >= 5,
		Session:       n >= 6,
		Resume:        n >= 7,
		WhereUsersAre: n >= 8,
	}, nil
}

// MustStage returns the configuration of demo stage n (0..MaxStage) with
// no random source (a driver supplies one); it panics on any other n, like
// regexp.MustCompile, for use with a constant.
func MustStage(n int) *Config {
	c, err := StageConfig(n, nil)
	if err != nil {
		panic(err)
	}
	return &c
}

// StageConfig returns the defaults for demo stage n with the given random
// source.
func StageConfig(n int, rand func() float64) (Config, error) {
	f, err := StageFeatures(n)
	if err != nil {
		return Config{}, err
	}
	return Config{Stage: n, Features: f, Rand: rand}, nil
}

func (c Config) withDefaults() (Config, error) {
	if c.Rand == nil {
		return c, errors.New("client: Config.Rand is required")
	}
	return c.defaults()
}

// defaults fills in the defaults; unlike withDefaults it does not need
// Rand (NewReconnector takes each draw from its caller).
func (c Config) defaults() (Config, error) {
	if c.Topic != "" && !protocol.ValidTopic(c.Topic) {
		return c, errors.New("client: Config.Topic is not a valid topic name")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.RequestTimeout, 5*time.Second)
	def(&c.FirstPingTimeout, 3*time.Second)
	def(&c.SubscribeTimeout, 2*time.Second)
	def(&c.ConnectTimeout, 10*time.Second)
	def(&c.NaiveDelay, time.Second)
	def(&c.Cooldown, 5*time.Second)
	def(&c.OnlineDelay, 500*time.Millisecond)
	def(&c.TokenTimeout, 10*time.Second)
	def(&c.ReprobeInterval, 10*time.Minute)
	def(&c.SendStallTimeout, 5*time.Second)
	def(&c.DegradedAfter, 3*time.Second)
	def(&c.OfflineAfter, 30*time.Second)
	if c.Transports == nil {
		c.Transports = []Transport{TransportWebSocket}
		if c.Features.WhereUsersAre {
			c.Transports = append(c.Transports, TransportHTTP)
		}
	} else {
		c.Transports = slices.Clone(c.Transports)
	}
	if err := validTransports(c.Transports); err != nil {
		return c, err
	}
	if c.MaxRefreshes <= 0 {
		c.MaxRefreshes = 2
	}
	if c.CapGrowth == nil {
		c.CapGrowth = DefaultCapGrowth
	}
	if c.Budget < 0 || c.Window < 0 {
		return c, errors.New("client: Budget and Window must not be negative (0 means unbounded)")
	}
	if c.Policy == nil {
		c.Policy = FullJitter{Base: time.Second, Cap: 30 * time.Second}
	}
	return c, nil
}
