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
	var se *ServerError
	switch {
	case errors.Is(err, ErrNotReady):
		return "NotReady"
	case errors.Is(err, ErrRequestTimeout):
		return "RequestTimeout"
	case errors.Is(err, ErrConnectionClosed):
		return "ConnectionClosed"
	case errors.Is(err, ErrInvalidRequest):
		return "InvalidRequest"
	case errors.Is(err, ErrAborted):
		return "Aborted"
	case errors.As(err, &se):
		return "ServerError"
	}
	return "Error"
}
