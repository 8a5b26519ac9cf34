package client

import (
	"errors"
	"strconv"
	"time"
)

// The three ways a request fails on the client's side. Test with errors.Is.
var (
	// ErrNotReady: the request was never sent because the client was not
	// READY. Always safe to retry.
	ErrNotReady = errors.New("not ready")
	// ErrRequestTimeout: no response within the request timeout. The server
	// may or may not have acted on it: retry only if the request is
	// idempotent.
	ErrRequestTimeout = errors.New("request timeout")
	// ErrConnectionClosed: the connection closed before the response came.
	// The outcome is unknown: retry only if the request is idempotent.
	ErrConnectionClosed = errors.New("connection closed")
	// ErrInvalidRequest: the request was never sent because it cannot be
	// (an empty method, params that are not JSON). Fix the call; retrying
	// it as it is fails the same way.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrAborted: the caller gave up on the request (an AbortSignal, a
	// cancelled context). If it was sent, its outcome is unknown and a late
	// response is dropped.
	ErrAborted = errors.New("aborted")
)

// RequestError is a client-side request failure. Kind is one of ErrNotReady,
// ErrRequestTimeout, ErrConnectionClosed or ErrInvalidRequest, and
// errors.Is matches it.
type RequestError struct {
	Kind   error
	ID     uint64 // the request id (0 if never sent)
	Epoch  uint64 // the connection epoch it was sent on (0 if never sent)
	Detail string
}

func (e *RequestError) Error() string {
	s := "request " + strconv.FormatUint(e.ID, 10) + ": " + e.Kind.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *RequestError) Unwrap() error { return e.Kind }

// Name returns the error's type name as the JS API reports it:
// "NotReady", "RequestTimeout" or "ConnectionClosed".
func (e *RequestError) Name() string { return ErrorName(e) }

// ServerError is an error response from the server: the request arrived and
// was refused.
type ServerError struct {
	ID      uint64
	Code    string
	Message string
	// RetryAfter comes with rate_limited: the server asks for no more
	// frames for this long. 0: none given.
	RetryAfter time.Duration
}

func (e *ServerError) Error() string {
	s := "request " + strconv.FormatUint(e.ID, 10) + ": server error " + e.Code + ": " + e.Message
	if e.RetryAfter > 0 {
		s += " (retry after " + e.RetryAfter.String() + ")"
	}
	return s
}

// ErrorName maps an error from a request to the name the JS API and the
// demo show: NotReady, RequestTimeout, ConnectionClosed, InvalidRequest,
// ServerError, or Error for anything else.
func ErrorName(err error) string {
	switch {
	case is(err, ErrNotReady):
		return "NotReady"
	case is(err, ErrRequestTimeout):
		return "RequestTimeout"
	case is(err, ErrConnectionClosed):
		return "ConnectionClosed"
	case is(err, ErrInvalidRequest):
		return "InvalidRequest"
	case is(err, ErrAborted):
		return "Aborted"
	}
	if _, ok := AsServerError(err); ok {
		return "ServerError"
	}
	return "Error"
}

// The browser client finds its errors in a chain without the errors
// package's Is and As: they reach the runtime's type information through
// internal/reflectlite, about 30 KB of wasm. These follow the
// same rules (Unwrap() error and Unwrap() []error, depth first; an Is or an
// As method) for the targets the client has: sentinel errors, which are
// comparable, and its two error types.

// is is errors.Is(err, target) for a comparable target.
func is(err, target error) bool {
	for err != nil {
		if err == target { // target's type is comparable: this cannot panic
			return true
		}
		if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(target) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if is(e, target) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// AsServerError is errors.As(err, &se) for se a *ServerError: the first
// *ServerError in err's chain.
func AsServerError(err error) (*ServerError, bool) {
	var se *ServerError
	ok := as(err, func(e error) bool {
		x, ok := e.(*ServerError)
		se = x
		return ok
	}, &se)
	return se, ok
}

// AsRequestError is errors.As(err, &re) for re a *RequestError: the first
// *RequestError in err's chain.
func AsRequestError(err error) (*RequestError, bool) {
	var re *RequestError
	ok := as(err, func(e error) bool {
		x, ok := e.(*RequestError)
		re = x
		return ok
	}, &re)
	return re, ok
}

// as walks err's chain like errors.As: match sets the target when e is of
// its type; an As method is offered target (a pointer to it).
func as(err error, match func(error) bool, target any) bool {
	for err != nil {
		if match(err) {
			return true
		}
		if x, ok := err.(interface{ As(any) bool }); ok && x.As(target) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if as(e, match, target) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
