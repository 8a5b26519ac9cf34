package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// Close classification (stage 6). Every disconnect is classified before any
// retry, from who closed and the close code (and a retry-after the close
// reason carried); the reason's text itself is never kept.
//
//	server 1000                      ended          terminal: the server ended the session
//	4003, 1008                       forbidden      terminal: tell the app (sign in again)
//	4001                             token_expired  fetch a fresh token (forced) and dial at once
//	1013, or any retry-after         retry_after    wait at least the retry-after (or the backoff's draw, if longer);
//	                                                without one, from OverloadFactor times the policy's base (5 to 10 s by default)
//	anything else (1001, 1006, 1011,
//	1012, 4000, 4408, 4429, unknown,
//	the watchdog, a connect timeout,
//	a failed token hook)             backoff        retry with the backoff
//
// Before stage 6 every disconnect is ClassBackoff.

// Class is what a disconnect means for the session.
type Class uint8

const (
	ClassBackoff      Class = iota + 1 // retry with the backoff
	ClassRetryAfter                    // wait at least the server's retry-after
	ClassTokenExpired                  // fetch a fresh token, then dial at once
	ClassForbidden                     // terminal: the server refuses this client
	ClassEnded                         // terminal: the server ended the session
)

func (c Class) String() string {
	switch c {
	case ClassBackoff:
		return "backoff"
	case ClassRetryAfter:
		return "retry_after"
	case ClassTokenExpired:
		return "token_expired"
	case ClassForbidden:
		return "forbidden"
	case ClassEnded:
		return "ended"
	}
	return "unknown"
}

// By says who ended a connection (or an attempt).
type By uint8

const (
	ByServer  By = iota + 1 // a close frame or an HTTP refusal from the server
	ByNetwork               // no close frame: 1006
	ByClient                // this client gave up on it: watchdog, connect timeout, token hook
)

func (b By) String() string {
	switch b {
	case ByServer:
		return "server"
	case ByNetwork:
		return "network"
	case ByClient:
		return "client"
	}
	return "unknown"
}

// Cause is one disconnect as the core saw it. It holds no peer text.
type Cause struct {
	By         By
	Code       int           // the close code; 1006 when none came
	RetryAfter time.Duration // a retry-after the server gave; 0 for none
	Fail       FailureClass  // set when the driver or the core knows better than the code (failure.go)
	// Via is the transport the lost attempt used; 0 when there was none
	// (a failed token hook). Proven says it saw its first ping. The
	// transport rule (stage 8) counts attempts that never did.
	Via    Transport
	Proven bool
	// Opened says the lost socket opened: the server took the handshake
	// (a refusal may still follow it, a close with 1013 or 4003).
	Opened bool
	// Reason is the close reason the server gave (its own text, at most
	// 123 bytes: a close frame's bound), or "" for none: "bad token",
	// "auth required", an app's Disconnect reason. It is shown, never
	// classified (but for the fixed origin text).
	Reason string
	// Woke says the loss was noticed as the client woke from a sleep or
	// a freeze (stage 8, clock.go): the first reconnect of a run dials
	// at once.
	Woke bool
}

// causeOf turns a driver's close report into a Cause: a code other than
// 1006 came in a close frame from the server, and the reason is read only
// for a retry-after.
func causeOf(code int, reason string) Cause {
	c := Cause{By: ByServer, Code: code}
	if code == protocol.CloseAbnormal {
		c.By = ByNetwork
	} else {
		c.Reason = cutMessage(reason, maxCloseReason)
	}
	if d, ok := protocol.ParseRetryAfter(reason); ok {
		c.RetryAfter = d
	}
	if code == protocol.ClosePolicyViolation && reason == protocol.ReasonOriginNotAllowed {
		c.Fail = FailOrigin // the server's fixed text, matched, not kept
	}
	return c
}

// maxCloseReason is a close frame's reason's bound, in bytes (RFC 6455: a
// control frame's 125 less the code's 2).
const maxCloseReason = 123

// Classify maps a disconnect to its class (the table above).
func Classify(c Cause) Class {
	if c.By == ByClient {
		return ClassBackoff
	}
	switch c.Code {
	case protocol.CloseNormal:
		if c.By == ByServer {
			return ClassEnded
		}
	case protocol.CloseForbidden, protocol.ClosePolicyViolation:
		return ClassForbidden
	case protocol.CloseTokenExpired:
		return ClassTokenExpired
	case protocol.CloseTryAgainLater:
		return ClassRetryAfter
	}
	if c.RetryAfter > 0 {
		return ClassRetryAfter
	}
	return ClassBackoff
}
