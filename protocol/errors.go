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
	ErrUnknownMethod  = "unknown_method"         // a request names no method the server has
	ErrInternal       = "internal"               // the handler failed; the connection stays usable
	ErrUnknownTopic   = "unknown_topic"          // a subscribe names a topic the server does not have
	ErrTooManyPending = "too_many_pending"       // a request beyond the server's cap of unanswered requests per connection
	ErrInvalidTopic   = "invalid_topic"          // a topic name outside ValidTopic's rules
	ErrTooManyTopics  = "too_many_topics"        // a publish would create a topic past the server's cap
	ErrTooManySubs    = "too_many_subscriptions" // a subscribe past the server's cap of topics per connection
	ErrForbidden      = "forbidden"              // the server does not allow this (publish without -publish)
	ErrUnavailable    = "unavailable"            // the history backend failed or timed out; try again
)

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
