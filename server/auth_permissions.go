//go:build !js

package server

import (
	"context"
	"errors"

	"github.com/wsready/wsready/protocol"
)

// Permissions: Options.Authorize decides, per action, whether a
// connection's identity may subscribe to a topic, call a method or read a
// topic's presence; Options.AuthorizePublish decides publishes, which also
// need Options.Publish. A hook is asked only about the actions it is for,
// so a hook written for subscribes never allows a publish. A refusal is a
// typed error on that one call (code forbidden, or the code of the *Error
// the hook returned); the socket stays.

// ActionKind names what a client asks to do.
type ActionKind string

const (
	ActSubscribe ActionKind = "subscribe" // Action.Topic
	ActPublish   ActionKind = "publish"   // Action.Topic; asked of AuthorizePublish, never of Authorize
	ActRequest   ActionKind = "request"   // Action.Method
	ActPresence  ActionKind = "presence"  // Action.Topic: read who is subscribed (asked after ActSubscribe of the same topic allowed)
)

// Action is one thing a client asks to do, for Options.Authorize (or, a
// publish, Options.AuthorizePublish).
type Action struct {
	Kind   ActionKind
	Topic  string // subscribe, publish, presence
	Method string // request
}

// Error is an application's answer to a client as a typed error: Code
// (1 to 64 of a-z 0-9 _ . -, see protocol.ValidErrorCode) and Message
// reach the client as the response's error. Return one from Authorize,
// AuthorizePublish or a method; from Identify, its Message is the 4003
// close's reason.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// errorBody turns a hook's error into what the client receives: an *Error
// with a valid code as it is; anything else as fallback with a fixed
// message (the error's own text may hold what the client must not see).
func errorBody(err error, fallback, msg string) *protocol.ErrorBody {
	var ae *Error
	if errors.As(err, &ae) && protocol.ValidErrorCode(ae.Code) {
		return &protocol.ErrorBody{Code: ae.Code, Message: ae.Message}
	}
	return &protocol.ErrorBody{Code: fallback, Message: msg}
}

// authorize asks the hook for a's kind; nil allows. A publish needs
// Options.Publish, then AuthorizePublish's allow; with Publish on and no
// hook at all (wsready serve -publish) every client may publish, but an
// Authorize hook alone allows none: it was not written for them. Without
// Authorize, subscribe, presence and request are allowed (a request still
// needs a method that exists).
func (c *conn) authorize(ctx context.Context, a Action) *protocol.ErrorBody {
	o := c.s.opts
	hook := o.Authorize
	if a.Kind == ActPublish {
		if !o.Publish {
			return &protocol.ErrorBody{Code: protocol.ErrForbidden, Message: "publishing is off on this server (wsready serve -publish)"}
		}
		hook = o.AuthorizePublish
		if hook == nil {
			if o.Authorize != nil {
				return &protocol.ErrorBody{Code: protocol.ErrForbidden, Message: "no rule allows publishing on this server"}
			}
			return nil
		}
	}
	if hook == nil {
		return nil
	}
	if err := hook(ctx, c.identity, a); err != nil {
		return errorBody(err, protocol.ErrForbidden, "not allowed")
	}
	return nil
}
