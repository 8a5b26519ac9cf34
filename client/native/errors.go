//go:build !js

package native

import (
	"errors"
	"strconv"

	"github.com/wsready/wsready/client"
)

// ErrClosed is returned by Request, Subscribe, WaitState and WaitReady
// after Close.
var ErrClosed = errors.New("client closed")

// NotReadyError is WaitReady's error when ctx ends first: it wraps ctx's
// error and the last dial's, so errors.Is(err, context.DeadlineExceeded)
// and errors.As(err, &netErr) both work.
type NotReadyError struct {
	Err      error // ctx's
	LastDial error // nil if no dial failed
	// Token is the Token hook's error, wrapped ("failed to get a token:
	// ..."), when the client last failed for want of a token (State's
	// LastError is FailToken); nil otherwise.
	Token error
	State State
	// Waiting, when the client was connected (its transport up) and the
	// service layer was not: the topics the server had not taken, each
	// with the server's last answer about it.
	Waiting []TopicWait
}

// TopicWait is a topic the server had not taken when WaitReady gave up.
type TopicWait struct {
	Topic string
	Code  string // the server's last topic error code for it; "" for none (no answer yet)
}

func (e *NotReadyError) Error() string {
	s := "failed to get READY: " + e.Err.Error()
	if len(e.Waiting) > 0 {
		s += " (connected; the server has not taken "
		for i, w := range e.Waiting {
			if i == 5 {
				s += ", and " + strconv.Itoa(len(e.Waiting)-5) + " more"
				break
			}
			if i > 0 {
				s += ", "
			}
			code := w.Code
			if code == "" {
				code = "no answer"
			}
			s += w.Topic + " (" + code + ")"
		}
		return s + ")"
	}
	if e.Token != nil {
		s += " (" + e.Token.Error() + ")"
	} else if e.LastDial != nil {
		s += " (last dial: " + e.LastDial.Error() + ")"
	} else if f := e.State.LastError; f.Class != client.FailNone {
		s += " (" + f.Message() + ")"
	}
	return s
}

func (e *NotReadyError) Unwrap() []error {
	errs := []error{e.Err}
	if e.LastDial != nil {
		errs = append(errs, e.LastDial)
	}
	if e.Token != nil {
		errs = append(errs, e.Token)
	}
	return errs
}

// ErrTopicRefused is what a *SubscribeError matches with errors.Is: the
// server refused a topic the app asked for.
var ErrTopicRefused = errors.New("topic refused")

// SubscribeError is Subscribe's error when the server refused the
// subscribe, and WaitReady's (wrapped) when the server refused a topic the
// app asked for, which keeps the client from READY. Code is the server's
// stable code (forbidden, unknown_topic, too_many_subscriptions,
// too_many_topics, unavailable, or an application's own); Message is the
// server's words for it (at most client.MaxTopicErrorMessage bytes). The
// subscription stands (it is asked for again on the next connection)
// until the func Subscribe returned with it is called.
type SubscribeError struct {
	Topic   string
	Code    string
	Message string
	// Others, from WaitReady: how many more topics the server refused
	// (State.Refusals less this one).
	Others int
}

func (e *SubscribeError) Error() string {
	s := "failed to subscribe to " + e.Topic + ": the server refused it (" + e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	s += ")"
	switch {
	case e.Others == 1:
		s += ", and 1 more topic (State().Refusals)"
	case e.Others > 1:
		s += ", and " + strconv.Itoa(e.Others) + " more topics (State().Refusals)"
	}
	return s
}

// Is reports whether target is ErrTopicRefused.
func (e *SubscribeError) Is(target error) bool { return target == ErrTopicRefused }

// EndedError is WaitReady's error for a session in a terminal state
// (ended, forbidden, refresh_exhausted, gave_up): only Reconnect starts it
// again.
type EndedError struct {
	Ended  Terminal
	Code   int    // the close code that ended it, if one did
	Reason string // the server's reason with it ("bad token", "auth required", ...), if it gave one
}

func (e *EndedError) Error() string {
	s := "session " + string(e.Ended)
	if e.Code != 0 {
		s += " (close " + strconv.Itoa(e.Code)
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		s += ")"
	}
	return s
}
