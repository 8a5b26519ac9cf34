package protocol

// Stable error codes, sent to a peer in an error frame's "code" field.
const (
	ErrBadJSON        = "bad_json"               // not valid JSON
	ErrNotObject      = "not_object"             // valid JSON, but not an object
	ErrMissingField   = "missing_field"          // a required field is absent
	ErrWrongType      = "wrong_type"             // a field has the wrong JSON type or an invalid value
	ErrUnknownType    = "unknown_type"           // the type field names no known message
	ErrTooLarge       = "too_large"              // the frame exceeds MaxFrameBytes
	ErrNotText        = "not_text"               // a binary frame; the protocol is text only
	ErrUnexpected     = "unexpected"             // a valid message this side does not accept (e.g. a ping sent to the server)
	ErrUnknownMethod  = "unknown_method"         // a request names no method the server has (or a reserved wsready. one it does not serve)
	ErrInternal       = "internal"               // the handler panicked or returned an untyped error; the message is generic, never the error's text; the connection stays usable
	ErrTimeout        = "timeout"                // the handler's context expired (the request's timeoutMs, capped by the server)
	ErrRateLimited    = "rate_limited"           // the tenant's message ceiling: wait retryAfterMs before sending again; the connection stays
	ErrUnknownTopic   = "unknown_topic"          // a subscribe names a topic the server does not have
	ErrTooManyPending = "too_many_pending"       // a request beyond the server's cap of unanswered requests per connection
	ErrInvalidTopic   = "invalid_topic"          // a topic name outside ValidTopic's rules
	ErrTooManyTopics  = "too_many_topics"        // a publish would create a topic past the server's cap
	ErrTooManySubs    = "too_many_subscriptions" // a subscribe past the server's cap of topics per connection
	ErrForbidden      = "forbidden"              // the server does not allow this (Authorize or AuthorizePublish refused it, or publish without -publish): a typed error on that one call, the socket stays
	ErrUnavailable    = "unavailable"            // the history backend failed or timed out; try again
	// ErrIdempotencyKeyReused answers a request or a publish whose
	// idempotency key was first sent, within the server's window, with
	// another method, params, topic or data: nothing ran; use a new key.
	ErrIdempotencyKeyReused = "idempotency_key_reused"
)

// MaxErrorCodeBytes bounds an application's error code.
const MaxErrorCodeBytes = 64

// ValidErrorCode reports whether code is a usable application error code
// (a handler's typed error): 1 to MaxErrorCodeBytes of a-z 0-9 _ . -.
// The library's own codes above are all valid ones.
func ValidErrorCode(code string) bool {
	if len(code) == 0 || len(code) > MaxErrorCodeBytes {
		return false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// DecodeError is returned by Decode. Use errors.As to read its Code.
type DecodeError struct {
	Code   string // one of the Err* codes
	Field  string // the offending field, when there is one
	Detail string // a human-readable explanation; never echoes the whole frame
}

func (e *DecodeError) Error() string {
	s := "failed to decode frame: " + e.Code
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}
