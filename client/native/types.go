//go:build !js

package native

import "github.com/wsready/wsready/client"

// The client types a Go program needs, named here so that it imports this
// package alone: each is an alias of package client's (the driver-free
// core, which the browser driver and the simulator share), so a value of
// one is a value of the other, and errors.Is and errors.As match either
// name.

type (
	// Config configures the client (Options.Config); its zero value is the
	// client with every fix and the library's defaults.
	Config = client.Config
	// Fixes names the client's fixes; Config.Disable turns some off.
	Fixes = client.Fixes
	// State is the client's readiness and why (Client.State, OnState).
	State = client.State
	// Level is one readiness layer's state: Down, Pending, Up or Off.
	Level = client.Level
	// Failure and FailureClass say why the client last lost its
	// connection (State.LastError).
	Failure      = client.Failure
	FailureClass = client.FailureClass
	// Terminal names a state the session does not leave (State.Ended).
	Terminal = client.Terminal
	// Transport is what a connection runs over (State.Via).
	Transport = client.Transport
	// TopicError is a subscribe the server refused (State.Refused).
	TopicError = client.TopicError
	// Update is one published message on a topic (Subscribe, OnUpdate).
	Update = client.Update
	// Event is a trace event (OnEvent).
	Event = client.Event
	// Record, Outcome, Class and By describe one reconnect decision
	// (OnRecord).
	Record  = client.Record
	Outcome = client.Outcome
	Class   = client.Class
	By      = client.By
	// Admission and TopicSeq are a Record's admission answer and its last
	// event delivered per topic.
	Admission = client.Admission
	TopicSeq  = client.TopicSeq
	// ContinuityLost is a range of updates the client will never deliver
	// (OnContinuityLost).
	ContinuityLost = client.ContinuityLost
	// PresenceEvent is a join or leave on a topic (OnPresence).
	PresenceEvent = client.PresenceEvent
	// Cursor is where a topic resumes from (LoadCursors, StoreCursors).
	Cursor = client.Cursor
	// RequestOptions and SubscribeOptions tune one request or subscription.
	RequestOptions   = client.RequestOptions
	SubscribeOptions = client.SubscribeOptions
	// Stats and TopicStats count what the client did (Stats, Topics).
	Stats      = client.Stats
	TopicStats = client.TopicStats
	// RequestError and ServerError are a request's typed failures.
	RequestError = client.RequestError
	ServerError  = client.ServerError
	// Policy chooses reconnect delays (Config.Policy): Fixed, Exponential,
	// FullJitter or RandomStartLinear; CapStep grows its cap
	// (Config.CapGrowth).
	Policy            = client.Policy
	Fixed             = client.Fixed
	Exponential       = client.Exponential
	FullJitter        = client.FullJitter
	RandomStartLinear = client.RandomStartLinear
	CapStep           = client.CapStep
)

// A request's errors (errors.Is): the same values as package client's.
var (
	// ErrNotReady: the request was never sent; always safe to send again.
	ErrNotReady = client.ErrNotReady
	// ErrRequestTimeout and ErrConnectionClosed: the request was sent and
	// its outcome is unknown; send again only if it is idempotent.
	ErrRequestTimeout   = client.ErrRequestTimeout
	ErrConnectionClosed = client.ErrConnectionClosed
	// ErrInvalidRequest: refused before sending (a bad method or params).
	ErrInvalidRequest = client.ErrInvalidRequest
	// ErrAborted: the request was given up by its caller.
	ErrAborted = client.ErrAborted
)

// The readiness levels (State.Transport, Protocol, Service).
const (
	Down    = client.Down
	Pending = client.Pending
	Up      = client.Up
	Off     = client.Off
)

// The terminal states (State.Ended, EndedError.Ended).
const (
	NotEnded         = client.NotEnded
	Ended            = client.Ended
	Forbidden        = client.Forbidden
	RefreshExhausted = client.RefreshExhausted
	GaveUp           = client.GaveUp
	Stopped          = client.Stopped
)

// The failure classes (State.LastError.Class).
const (
	FailNone         = client.FailNone
	FailNetwork      = client.FailNetwork
	FailRefused      = client.FailRefused
	FailTimeout      = client.FailTimeout
	FailHeartbeat    = client.FailHeartbeat
	FailSilent       = client.FailSilent
	FailToken        = client.FailToken
	FailTokenExpired = client.FailTokenExpired
	FailForbidden    = client.FailForbidden
	FailOrigin       = client.FailOrigin
	FailEnded        = client.FailEnded
	FailClosed       = client.FailClosed
	FailSendStalled  = client.FailSendStalled
)

// The transports (State.Via; HTTP only when Config.Transports names it).
const (
	TransportWebSocket = client.TransportWebSocket
	TransportHTTP      = client.TransportHTTP
)
