package client

import "time"

// EffectKind says what a driver must do for an Effect.
type EffectKind uint8

const (
	// EffDial: open a new socket over Transport and report its events
	// under Socket. Several may be open at once at stage 8: a socket on
	// the preferred transport dialled beside a live fallback one.
	EffDial EffectKind = iota + 1
	// EffSend: send Frame (a text frame) on Socket.
	EffSend
	// EffClose: close Socket with Code and Reason. Keep reporting its events.
	EffClose
	// EffTimer: arm the one wakeup timer to call Tick at At, replacing any
	// earlier one; a zero At cancels it.
	EffTimer
	// EffSettle: request ID is settled with Result or Err.
	EffSettle
	// EffState: readiness changed to State.
	EffState
	// EffUpdate: a feed update arrived.
	EffUpdate
	// EffLog: a diagnostic event (only with Config.Trace).
	EffLog
	// EffToken: call the token hook (Force: a fresh token, never a cached
	// one) and report the answer with TokenReady or TokenFailed.
	EffToken
	// EffRecord: a reconnect decision, as a sanitized Record.
	EffRecord
	// EffContinuityLost: updates of a topic the client will never deliver
	// (Lost).
	EffContinuityLost
	// EffTopicError: the server refused a subscribe (TopicError). The
	// subscribe is retried at the subscribe deadline (Service).
	EffTopicError
	// EffPresence: a user joined or left a topic the app subscribed to
	// with presence (SubscribeOptions.Presence).
	EffPresence
	// EffProbeHTTP: make one plain HTTP request to the server (GET
	// <base>/probe, the WebSocket URL with ws->http) and report whether it
	// succeeded with HTTPProbe (stage 8: the WebSocket attempts keep
	// failing). A driver without an HTTP transport may ignore it.
	EffProbeHTTP
	// EffForward: a follower tab's request or publish (Frame, with this
	// core's ID) for the leader tab to send on its connection; its answer
	// comes back through Relayed (tabs.go).
	EffForward
)

// SocketID names a socket the core asked a driver to open. IDs increase by
// one per socket and double as the connection epoch (State.Epoch,
// Update.Epoch and Record.Epoch carry it as a number).
type SocketID uint64

func (s SocketID) String() string { return utoa(uint64(s)) }

// Effect is one thing the core asks its driver to do. Which fields are set
// depends on Kind.
type Effect struct {
	Kind      EffectKind
	Socket    SocketID       // EffDial, EffSend, EffClose
	Transport Transport      // EffDial
	Frame     []byte         // EffSend, EffForward
	Code      int            // EffClose
	Reason    string         // EffClose
	At        time.Time      // EffTimer
	ID        uint64         // EffSettle, EffForward
	Result    []byte         // EffSettle: raw JSON on success
	Err       error          // EffSettle: a *RequestError or *ServerError on failure
	State     State          // EffState
	Update    Update         // EffUpdate
	Event     Event          // EffLog
	Force     bool           // EffToken
	Record    Record         // EffRecord
	Lost      ContinuityLost // EffContinuityLost
	// TopicError is EffTopicError's: which topic, and the server's code.
	TopicError TopicError
	// Presence is EffPresence's: who joined or left which topic.
	Presence PresenceEvent
	// Refresh is EffToken's: the token is for an in-band refresh of the
	// live connection (refresh.go). The answer comes back as for any
	// other ask, through TokenReady or TokenFailed.
	Refresh bool
	// Token is EffDial's: the ticket the core holds for this socket ("":
	// none). Over HTTP the driver makes the session with it (POST
	// <base>/session) and drops the auth frame the core sends at the open;
	// over WebSocket the driver ignores it (the auth frame carries it).
	// Tokens are interchangeable, so the core may dial with an answer
	// meant for another ask (an in-band refresh's, say): a driver keeps
	// no copy of its own, it dials with this.
	Token string
}

// PresenceEvent is a presence frame the server sent for a topic the app
// subscribed to with presence: User's first connection joined Topic
// (cluster-wide), or its last left.
type PresenceEvent struct {
	Topic string
	Event string // protocol.PresenceJoin or protocol.PresenceLeave
	User  string
}

// TopicError is the server's refusal of a subscribe to Topic. Code is its
// stable error code (forbidden, unknown_topic, too_many_subscriptions,
// too_many_topics, unavailable, or a code of the app's own); Message is
// the server's words for it (an Authorize hook's *server.Error message,
// say "user.alice is private to alice"), cut to MaxTopicErrorMessage bytes
// at a UTF-8 boundary. Both are the server's own text, never a peer's.
type TopicError struct {
	Topic   string
	Code    string
	Message string
}

// MaxTopicErrorMessage bounds TopicError.Message, in bytes: what a State
// carries and an error shows stays small whatever a server sends.
const MaxTopicErrorMessage = 256

// cutMessage cuts s to at most n bytes, at a UTF-8 boundary.
func cutMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // s[n] continues a rune: back to its start
		n--
	}
	return s[:n]
}

// Update is a feed item, tagged with the epoch of the socket it came on.
type Update struct {
	Topic string
	Seq   int64
	Data  []byte
	Epoch uint64
}

// Event describes something the core did, for logs and the demo's event
// list. It never carries payloads or tokens.
type Event struct {
	Kind   string        // e.g. "open", "ping", "watchdog", "stale", "reconnect"
	Detail string        // human-readable detail
	Socket SocketID      // the socket concerned, if any
	Delay  time.Duration // for "reconnect": the delay chosen
}
