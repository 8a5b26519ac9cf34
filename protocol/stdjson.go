//go:build !js

package protocol

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// The protocol through encoding/json: how the server reads client frames
// and writes its replies. This file is left out of the browser build
// (GOOS=js), so the wasm never links encoding/json and keeps the small
// codec (Decode, Encode). It lives here rather than in the server because
// it shares the per-type rules with Decode (decodeFields, unexported): one
// set of rules, two JSON readers, held to the same verdicts and values by
// FuzzDecodersAgree. Host programs that import protocol (the native client
// too) link encoding/json with it.

// Frame is a client frame as encoding/json reads it. json.Unmarshal(b, &f)
// fails only when b is not JSON; on any JSON value, UnmarshalJSON applies
// the protocol's rules and keeps the verdict in Err (a *DecodeError, nil
// for a valid message) instead of failing, so a frame that is JSON but not
// a valid message can be answered with an error frame on a connection that
// stays. Message holds what was read, as Decode's does (on error: Type,
// and the ID of a request or publish whose id is valid).
//
// DecodeJSON reads a frame the same way, and also applies MaxFrameBytes
// and maps a syntax error to ErrBadJSON.
type Frame struct {
	Message
	Err error
}

// UnmarshalJSON decodes one frame that encoding/json has found to be JSON
// (within its nesting bound, which is the small codec's too). It never
// fails.
func (f *Frame) UnmarshalJSON(b []byte) error {
	f.Message, f.Err = decodeValue(b)
	return nil
}

// decodeValue decodes b, which encoding/json has found to be JSON.
// encoding/json takes invalid UTF-8 inside a string and reads it as
// U+FFFD; the protocol refuses it, as the small codec does (RFC 8259 8.1:
// JSON exchanged between systems is UTF-8). decodeObject's reading checks
// it in an object; anything else is checked here.
func decodeValue(b []byte) (Message, error) {
	s := scanner{b: b}
	s.skipSpace()
	if s.pos >= len(b) || b[s.pos] != '{' {
		if !utf8.Valid(b) {
			return Message{}, &DecodeError{Code: ErrBadJSON, Detail: "invalid UTF-8"}
		}
		return Message{}, &DecodeError{Code: ErrNotObject, Detail: "frame must be a JSON object"}
	}
	return decodeObject(b, unquoteJSON)
}

// unquoteJSON is encoding/json's way from a validated string literal
// (quotes included) to its value. A literal without escapes is its body.
func unquoteJSON(lit []byte) string {
	body := lit[1 : len(lit)-1]
	for _, c := range body {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return unquote(lit) // not reached: lit was validated
			}
			return s
		}
	}
	return string(body)
}

// DecodeJSON is Decode through encoding/json, the server's way: it gives
// the same verdict (nil, or a *DecodeError with the same Code and Field)
// and the same Message as Decode for every input, and as json.Unmarshal
// into a Frame. encoding/json decides whether b is JSON (json.Valid: its
// scanner and its nesting bound), then the protocol's rules read it, as
// Frame.UnmarshalJSON does. It does not call json.Unmarshal itself, which
// scans the frame a second time to hand it to UnmarshalJSON and allocates
// its decoder and the Frame: that took about twice the CPU to handle a
// frame (BenchmarkHandleRequest in the server), where the design card
// allows CPU per frame to move by 5%.
func DecodeJSON(b []byte) (Message, error) {
	if len(b) > MaxFrameBytes {
		return Message{}, tooLarge(len(b))
	}
	if !json.Valid(b) {
		detail := "not JSON"
		if se := (*json.SyntaxError)(nil); errors.As(json.Unmarshal(b, &struct{}{}), &se) {
			detail += ": " + se.Error() + " at offset " + strconv.FormatInt(se.Offset, 10)
		}
		return Message{}, &DecodeError{Code: ErrBadJSON, Detail: detail}
	}
	return decodeValue(b)
}

// Server-to-client frames as encoding/json writes them: the server's
// replies. Each writes the JSON Encode writes for the same Message, but
// for a raw field (Result): encoding/json compacts it and escapes <, > and
// & in its strings, the same JSON value. Type must be the frame's type.

// ResponseFrame answers a request or a publish: exactly one of Result and
// Error.
type ResponseFrame struct {
	Type   Type            `json:"type"` // TypeResponse
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *ErrorBody      `json:"error,omitempty"`
}

// ErrorFrame says the server could not use a frame.
type ErrorFrame struct {
	Type    Type   `json:"type"`         // TypeError
	ID      uint64 `json:"id,omitempty"` // the request's or publish's
	Code    string `json:"code"`
	Message string `json:"message"`
	Topic   string `json:"topic,omitempty"` // about a subscribe
	// RetryAfterMs comes with rate_limited: wait this long before sending
	// again.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
}

// ProbeAckFrame answers a probe.
type ProbeAckFrame struct {
	Type Type   `json:"type"` // TypeProbeAck
	ID   uint64 `json:"id"`
}

// SubscribedFrame answers a subscribe.
type SubscribedFrame struct {
	Type   Type   `json:"type"` // TypeSubscribed
	Topic  string `json:"topic"`
	From   int64  `json:"from,omitempty"`
	Head   int64  `json:"head,omitempty"`
	Stream string `json:"stream,omitempty"`
}

// UnsubscribedFrame answers an unsubscribe, or drops a subscription.
type UnsubscribedFrame struct {
	Type   Type   `json:"type"` // TypeUnsubscribed
	Topic  string `json:"topic"`
	Reason string `json:"reason,omitempty"`
}

// AuthenticatedFrame answers an auth frame whose ticket was accepted.
type AuthenticatedFrame struct {
	Type      Type  `json:"type"` // TypeAuthenticated
	ExpiresAt int64 `json:"expiresAt,omitempty"`
}

// WelcomeFrame says the connection is served (once per connection: at
// once without auth, after a verified auth frame with auth required). A
// client that asked for no topics is READY on it.
type WelcomeFrame struct {
	Type    Type   `json:"type"`           // TypeWelcome
	Session string `json:"session"`        // 1..MaxIDBytes: the server's opaque id for the session
	User    string `json:"user,omitempty"` // the identity's user id, if any
	Node    string `json:"node,omitempty"` // the node serving the connection, if the server names it
}

// PresenceFrame tells a subscriber that asked for presence that User's
// first connection joined Topic, or its last left (cluster-wide).
type PresenceFrame struct {
	Type  Type   `json:"type"`  // TypePresence
	Topic string `json:"topic"` // a valid topic
	Event string `json:"event"` // PresenceJoin or PresenceLeave
	User  string `json:"user"`  // 1..MaxIDBytes
}

// PresenceParams are the params of a MethodPresence request.
type PresenceParams struct {
	Topic string `json:"topic"`
}

// PresenceResult is the result of a MethodPresence request: the users
// subscribed to Topic, sorted by id, each with its connection count, at
// most the server's bound of them (Truncated says more were left out);
// Total counts every user.
type PresenceResult struct {
	Topic     string         `json:"topic"`
	Users     []PresenceUser `json:"users"`
	Total     int            `json:"total"`
	Truncated bool           `json:"truncated"`
}

// PresenceUser is one user in a PresenceResult.
type PresenceUser struct {
	User  string `json:"user"`
	Conns int    `json:"conns"`
}
