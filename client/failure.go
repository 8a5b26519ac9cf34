package client

import "github.com/wsready/wsready/protocol"

// Failure says why the client last lost its connection or failed to get
// one, for the app to show ("why is it not connecting?"). It is cleared at
// READY. Class is a bounded enum and Message a fixed text per class: never
// the peer's words.
type Failure struct {
	Class FailureClass
	Code  int // the close code, if one came (1006: none)
}

// FailureClass names a kind of failure.
type FailureClass string

const (
	FailNone         FailureClass = ""
	FailNetwork      FailureClass = "network"       // no close frame: DNS, refused, TLS, a dropped network (a browser cannot tell these apart)
	FailRefused      FailureClass = "refused"       // the server is turning clients away (1013, 503/429, a retry-after)
	FailTimeout      FailureClass = "timeout"       // the socket did not open within the connect timeout
	FailHeartbeat    FailureClass = "heartbeat"     // the server stopped pinging
	FailSilent       FailureClass = "silent"        // the socket opened and the server sent nothing (no ping, no welcome) to a client that sent no token
	FailToken        FailureClass = "token"         // the token hook failed or did not answer
	FailTokenExpired FailureClass = "token_expired" // 4001
	FailForbidden    FailureClass = "forbidden"     // 4003, 1008
	FailOrigin       FailureClass = "origin"        // 1008 "origin not allowed": the server does not accept this page's origin
	FailEnded        FailureClass = "ended"         // the server closed with 1000
	FailClosed       FailureClass = "closed"        // the server closed with another code (1001, 1011, 1012, 4000, 4429, ...)
	FailSendStalled  FailureClass = "send_stalled"  // the client's own frames stopped draining and a probe went unanswered (4409)
)

// Message is a human sentence for the class.
func (f Failure) Message() string {
	// A table, not a switch on the string: a switch compiles to a tree of
	// string compares, about 2 KB of wasm for twelve classes.
	for _, m := range failureMessages {
		if m.class == f.Class {
			return m.text
		}
	}
	return ""
}

// failureMessages are Message's sentences, one per class.
var failureMessages = [...]struct {
	class FailureClass
	text  string
}{
	{FailNetwork, "could not reach the server (no route, DNS, connection refused, TLS, or the network dropped)"},
	{FailRefused, "the server is busy and asked the client to come back later"},
	{FailTimeout, "the connection did not open in time"},
	{FailHeartbeat, "the server stopped answering (no ping within its deadline)"},
	{FailSilent, "the connection opened but the server sent nothing, not even a first ping (a server that requires a token sends nothing until it gets one: is a token hook set?)"},
	{FailToken, "could not get a token (the token hook failed or timed out)"},
	{FailTokenExpired, "the token expired"},
	{FailForbidden, "the server refused this client (sign in again)"},
	{FailOrigin, "the server does not accept connections from this page's origin"},
	{FailEnded, "the server ended the session"},
	{FailClosed, "the server closed the connection"},
	{FailSendStalled, "the connection stopped sending (queued frames did not drain)"},
}

// failureOf classifies a disconnect for the app. origin says the close
// reason was the server's fixed "origin not allowed".
func failureOf(c Cause) Failure {
	f := Failure{Code: c.Code}
	switch {
	case c.Fail != FailNone:
		f.Class = c.Fail
	case c.By == ByNetwork && c.RetryAfter == 0:
		f.Class = FailNetwork
	case c.Code == protocol.CloseTryAgainLater || c.RetryAfter > 0:
		f.Class = FailRefused
	case c.Code == protocol.CloseTokenExpired:
		f.Class = FailTokenExpired
	case c.Code == protocol.CloseForbidden || c.Code == protocol.ClosePolicyViolation:
		f.Class = FailForbidden
	case c.Code == protocol.CloseNormal:
		f.Class = FailEnded
	default:
		f.Class = FailClosed
	}
	return f
}
