package client

import (
	"errors"
	"slices"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Fixes names the client's fixes, each one a rule that keeps a real
// client out of a failure the demo shows. Config.Disable turns some off;
// its zero value turns none off: the production client. The demo's stages
// are presets of it (package internal/stages: stage n keeps the first n
// fixes), so that each stage shows what the next fix is for.
type Fixes struct {
	// Registry (stage 1): every request settles. Requests time out after
	// RequestTimeout and are rejected when their connection closes.
	// Disabled, a request waits for its answer for ever.
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
	// reconnect and online reconnects after a small random delay. Disabled,
	// the client reconnects NaiveDelay after a close (and at once after
	// the watchdog fires) and ignores offline/online.
	Backoff bool
	// Cooldown (part of stage 5's Backoff): the backoff resets only after
	// Cooldown of continuous READY. Disabled, it resets when a socket
	// opens: the rule stage 5 replaced, kept so the two can be compared
	// (the simulator's Flapping table).
	Cooldown bool
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
	// tab leadership events work with any fixes.
	WhereUsersAre bool
}

// fixes are the fixes a Config keeps (the complement of Config.Disable),
// so the core's branches read as what is on.
type fixes Fixes

// on returns the fixes d leaves on.
func (d Fixes) on() fixes {
	return fixes{Registry: !d.Registry, Heartbeat: !d.Heartbeat, StaleFilter: !d.StaleFilter,
		Service: !d.Service, Backoff: !d.Backoff, Cooldown: !d.Cooldown, Session: !d.Session,
		Resume: !d.Resume, WhereUsersAre: !d.WhereUsersAre}
}

// Config configures a Core. Zero durations take the defaults shown; the
// zero Config (with a Rand) is the client with every fix.
type Config struct {
	// Disable turns fixes off, to show the failure each one prevents (the
	// demo's stages, package internal/stages). Default: none, the
	// production client.
	Disable Fixes
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
	// NaiveDelay is the reconnect delay with Backoff disabled. Default 1s.
	NaiveDelay time.Duration
	// Policy chooses reconnect delays with Backoff. Default
	// FullJitter{Base: 1s, Cap: 30s}.
	Policy Policy
	// Cooldown is how long the client must stay READY before the backoff
	// resets (Backoff). Default 5s.
	Cooldown time.Duration
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
	// RecordRecoveries makes the core also record the READY that ends a
	// run of failures (a Record with OutcomeReady and Recovered), so a
	// run's records end in its outcome (records.go). Default off: only
	// decisions are recorded. The native client turns it on with OnRecord.
	RecordRecoveries bool

	// Budget is the most reconnect attempts in one run of failures before
	// the session gives up (Session). 0: unbounded (default).
	Budget int
	// Window is how long one run of failures may last before the session
	// gives up (Session). 0: unbounded (default).
	Window time.Duration
	// CapGrowth raises the backoff's cap under sustained failure (Session).
	// nil: DefaultCapGrowth() (30 s, then 60 s after 2 minutes, 5 minutes
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
	// NoInBandRefresh turns in-band token refresh off (refresh.go): the
	// connection then ends with the server's 4001 at each token's expiry
	// and the client dials again with a fresh token. Default false: with
	// Auth and Session, the client sends a fresh token on the live
	// connection at 75-90% of the time its token had left.
	NoInBandRefresh bool

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
	// NoReports turns the readiness reports off (report.go): one small
	// frame to the server each time the client becomes READY, saying how
	// long it took, in how many attempts, why it was lost and over which
	// transport (fixed names and numbers, no peer text), which the
	// server counts into its metrics. Default false: the client reports.
	NoReports bool
	// Follower starts the core as a tab that follows another's connection:
	// it dials nothing until BecameLeader (tabs.go). Default false: the
	// core leads.
	Follower bool

	// on is the complement of Disable, filled in with the defaults.
	on fixes
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
	c.on = c.Disable.on()
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
		if c.on.WhereUsersAre {
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
		c.CapGrowth = DefaultCapGrowth()
	}
	if c.Budget < 0 || c.Window < 0 {
		return c, errors.New("client: Budget and Window must not be negative (0 means unbounded)")
	}
	if c.Policy == nil {
		c.Policy = FullJitter{Base: time.Second, Cap: 30 * time.Second}
	}
	return c, nil
}
