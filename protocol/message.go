// Package protocol defines wsready's wire protocol: JSON text frames, one
// object each, with a "type" field, and the close codes both sides use.
//
// It has its own small JSON codec instead of encoding/json to keep the
// browser (WebAssembly) build small; Decode rejects malformed input with a
// *DecodeError whose Code is stable and safe to send back to a peer. Other
// builds also have DecodeJSON, Frame and the reply types: the same rules
// through encoding/json, for the server.
package protocol

import (
	"errors"
	"strconv"

	"github.com/wsready/wsready/internal/quote"
)

// Type names a message kind. It is the frame's "type" field.
type Type string

// Server to client.
const (
	TypePing          Type = "ping"          // heartbeat; intervalMs is the server's ping interval
	TypeSubscribed    Type = "subscribed"    // the subscription to topic is live
	TypeUnsubscribed  Type = "unsubscribed"  // the service dropped the subscription; reason says why
	TypeUpdate        Type = "update"        // a feed item: topic, seq, data
	TypeResponse      Type = "response"      // answer to request id: result or error
	TypeError         Type = "error"         // the server could not use a frame the client sent
	TypeAuthenticated Type = "authenticated" // the auth frame's ticket was accepted; expiresAt says until when
	TypeProbeAck      Type = "probe_ack"     // the answer to a probe, at once, with its id
	TypeWelcome       Type = "welcome"       // once per connection, when it is served: session (the server's id for it), user and node (optional)
	TypePresence      Type = "presence"      // a user's first connection joined topic cluster-wide, or its last left: event join|leave, user
)

// Client to server.
const (
	TypeSubscribe   Type = "subscribe"   // subscribe to topic; since (optional) asks for a replay of what followed it
	TypeUnsubscribe Type = "unsubscribe" // stop receiving topic; answered by unsubscribed
	TypePublish     Type = "publish"     // append data to topic; answered by a response with id whose result is {"seq":N}
	TypeRequest     Type = "request"     // call method with params; answered by a response with the same id
	TypeAuth        Type = "auth"        // the first frame on a server with auth: token is a ticket from POST /api/token
	TypeProbe       Type = "probe"       // are you there? answered at once by probe_ack with the same id (stage 6 freeze detection)
)

// MaxTokenBytes bounds an auth frame's token.
const MaxTokenBytes = 4096

// MaxIDBytes bounds the opaque ids a welcome and a presence frame carry
// (session, user, node): 1 to 128 bytes, the server's bound on a user id.
const MaxIDBytes = 128

// MaxTimeoutMs bounds a request's timeoutMs (one hour), as MaxIntervalMs
// bounds a ping's interval.
const MaxTimeoutMs = 3_600_000

// MaxKeyBytes bounds an idempotency key (a request's or a publish's key).
const MaxKeyBytes = 64

// ValidKey reports whether k is a usable idempotency key: 1 to MaxKeyBytes
// of A-Z a-z 0-9 - _ (base64url without padding, what the client draws).
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isWordByte(k[i]) {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// Presence events (a presence frame's event).
const (
	PresenceJoin  = "join"  // the user's first connection subscribed to the topic (0 -> 1, cluster-wide)
	PresenceLeave = "leave" // the user's last connection left it (1 -> 0)
)

// MethodPresence is the reserved request method that asks who is
// subscribed to a topic: params {"topic":T}, result a PresenceResult.
const MethodPresence = "wsready.presence"

// ReservedMethodPrefix starts the library's own method names; an
// application may not register a method that starts with it.
const ReservedMethodPrefix = "wsready."

// MaxFrameBytes is the largest frame either side accepts (64 KiB). The server
// closes a connection that sends a larger one with CloseMessageTooBig.
const MaxFrameBytes = 64 << 10

// DefaultTopic is the feed the demo subscribes to.
const DefaultTopic = "feed"

// MaxTopicBytes is the longest topic name.
const MaxTopicBytes = 128

// TopicRule is the topic grammar in words, ValidTopic's rule; ErrBadTopic's
// text. Every message that states the rule (the server's, the drivers',
// the browser API's) quotes it, so the rule is written here once.
const TopicRule = "a topic is 1 to 128 bytes: words of A-Z a-z 0-9 - _ joined by single . : or / (none first, last or doubled)"

// ErrBadTopic is the error for a name ValidTopic refuses; its text is
// TopicRule.
var ErrBadTopic = errors.New(TopicRule)

// ValidTopic reports whether name is a usable topic name: 1 to
// MaxTopicBytes bytes, words of ASCII letters, digits, '-' and '_' (one
// byte or more each) joined by single separators '.', ':' or '/': no
// separator first, last or next to another. The names without a separator
// map one to one onto a NATS subject token and a JetStream stream name; the
// server's JetStream mapping escapes the others.
func ValidTopic(name string) bool {
	if len(name) == 0 || len(name) > MaxTopicBytes {
		return false
	}
	word := false // the byte before was a word byte
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case isWordByte(c):
			word = true
		case isTopicSeparator(c) && word:
			word = false
		default:
			return false
		}
	}
	return word
}

// isTopicSeparator reports whether c joins two words of a topic name.
func isTopicSeparator(c byte) bool { return c == '.' || c == ':' || c == '/' }

// ErrorBody is the error of a response or an error frame. RetryAfterMs
// comes with rate_limited: how long to wait before sending again.
type ErrorBody struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
}

// Message is one decoded frame. Which fields are set depends on Type; the
// docs/protocol.md lists them. Raw fields (Data, Params, Result) hold validated JSON.
type Message struct {
	Type       Type
	IntervalMs int64      // ping
	Topic      string     // subscribe, unsubscribe, subscribed, unsubscribed, update, publish, presence; error (optional)
	Reason     string     // unsubscribed
	Seq        int64      // update
	Data       []byte     // update, publish (raw JSON)
	HasSince   bool       // subscribe: Since was given
	Presence   bool       // subscribe (optional): this subscriber receives the topic's presence frames
	Since      int64      // subscribe: replay every update after this seq (exclusive), then go live
	Stream     string     // subscribe (optional): the stream Since belongs to; subscribed: the topic's stream
	From       int64      // subscribed: the first seq that follows (replayed or live)
	Head       int64      // subscribed: the topic's newest seq then; updates up to it are the replay
	ID         uint64     // request, response, publish; error (when it concerns a request or publish)
	Method     string     // request
	Params     []byte     // request (raw JSON, optional)
	TimeoutMs  int64      // request (optional, 1..MaxTimeoutMs): the client's own timeout; the server's handler context expires then
	Key        string     // request, publish (optional, ValidKey): an idempotency key; the server answers a repeated key from a bounded cache
	Result     []byte     // response (raw JSON), exclusive with Error
	Error      *ErrorBody // response (exclusive with Result); error frame
	Token      string     // auth, refresh
	ExpiresAt  int64      // authenticated: the ticket's expiry, Unix ms
	Session    string     // welcome: the server's opaque id for this connection's session (1..MaxIDBytes)
	User       string     // welcome (optional): the identity's user id; presence: whose connection joined or left
	Node       string     // welcome (optional): the server node that serves the connection
	Event      string     // presence: PresenceJoin or PresenceLeave
	Report     *Report    // report (report.go)
}

// MaxIntervalMs bounds a ping's intervalMs (one hour): a larger value would
// overflow the client's deadline arithmetic or park its watchdog forever.
const MaxIntervalMs = 3_600_000

// Decode parses one frame. Each type reads only the fields it defines (the
// table in docs/protocol.md): any other field, known to another type or unknown, is
// ignored, so either side can add optional fields without breaking the
// other. Unknown types, missing or wrong-typed required fields, and anything
// that is not a single JSON object are errors.
//
// On error the Message still holds what was read before the failure (Type,
// and ID for a request whose id is valid), so a server can echo the id in
// its error frame.
func Decode(b []byte) (Message, error) {
	if len(b) > MaxFrameBytes {
		return Message{}, tooLarge(len(b))
	}
	s := scanner{b: b}
	s.skipSpace()
	if s.pos >= len(b) || b[s.pos] != '{' {
		return Message{}, notAnObject(b)
	}
	return decodeObject(b, unquote)
}

func tooLarge(n int) *DecodeError {
	return &DecodeError{Code: ErrTooLarge, Detail: "frame of " + strconv.Itoa(n) + " bytes exceeds " + strconv.Itoa(MaxFrameBytes)}
}

// notAnObject is the verdict on a frame that does not begin with '{':
// not_object if it is JSON (at any depth up to the bound both decoders
// share), bad_json if it is not.
func notAnObject(b []byte) *DecodeError {
	s := scanner{b: b}
	if _, _, err := s.value(0); err != nil {
		return err
	}
	s.skipSpace()
	if s.pos != len(b) {
		return s.errf("trailing data after JSON value")
	}
	return &DecodeError{Code: ErrNotObject, Detail: "frame must be a JSON object"}
}

// decodeObject decodes a frame that begins (after space) with '{': it
// reads and validates the whole object, keeping the raw value of every key
// the protocol defines, then reads the fields the frame's type defines.
// unq turns a validated string literal into its value: the two decoders
// differ there (and in how they validate), never in the rules below.
func decodeObject(b []byte, unq func([]byte) string) (Message, error) {
	var m Message
	f := fields{unquote: unq}
	if err := f.read(b); err != nil {
		return m, err
	}
	if f.raw[fType] == nil {
		return m, &DecodeError{Code: ErrMissingField, Field: "type", Detail: "every frame needs a type"}
	}
	typ, err := f.str(fType, "", true)
	if err != nil {
		return m, err
	}
	m.Type = Type(typ)
	if err := decodeFields(&m, &f); err != nil {
		return m, err
	}
	return m, nil
}

// decodeFields reads the fields m.Type defines, and only those.
func decodeFields(m *Message, f *fields) *DecodeError {
	switch m.Type {
	case TypePing:
		n, err := f.int(fIntervalMs, m.Type, true)
		if err != nil {
			return err
		}
		if n < 1 || n > MaxIntervalMs {
			return &DecodeError{Code: ErrWrongType, Field: "intervalMs", Detail: "must be between 1 and " + strconv.Itoa(MaxIntervalMs)}
		}
		m.IntervalMs = n
	case TypeSubscribe:
		if err := f.topic(m); err != nil {
			return err
		}
		if f.raw[fSince] != nil {
			n, err := f.int(fSince, m.Type, true)
			if err != nil {
				return err
			}
			if n < 0 {
				return &DecodeError{Code: ErrWrongType, Field: "since", Detail: "must not be negative"}
			}
			m.HasSince, m.Since = true, n
		}
		var err *DecodeError
		if m.Stream, err = f.str(fStream, m.Type, false); err != nil {
			return err
		}
		m.Presence, err = f.bool(fPresence)
		return err
	case TypeUnsubscribe:
		return f.topic(m)
	case TypeSubscribed:
		if err := f.topic(m); err != nil {
			return err
		}
		var err *DecodeError
		if m.From, err = f.int(fFrom, m.Type, false); err != nil {
			return err
		}
		if m.From < 0 {
			return &DecodeError{Code: ErrWrongType, Field: "from", Detail: "must not be negative"}
		}
		if m.Head, err = f.int(fHead, m.Type, false); err != nil {
			return err
		}
		m.Stream, err = f.str(fStream, m.Type, false)
		return err
	case TypePublish:
		if err := f.callID(m); err != nil {
			return err
		}
		if err := f.topic(m); err != nil {
			return err
		}
		if err := f.data(m); err != nil {
			return err
		}
		return f.key(m)
	case TypeUnsubscribed:
		if err := f.topic(m); err != nil {
			return err
		}
		var err *DecodeError
		m.Reason, err = f.str(fReason, m.Type, false)
		return err
	case TypeUpdate:
		if err := f.topic(m); err != nil {
			return err
		}
		var err *DecodeError
		if m.Seq, err = f.int(fSeq, m.Type, true); err != nil {
			return err
		}
		return f.data(m)
	case TypeRequest:
		if err := f.callID(m); err != nil {
			return err
		}
		var err *DecodeError
		if m.Method, err = f.str(fMethod, m.Type, true); err != nil {
			return err
		}
		if m.Method == "" {
			return &DecodeError{Code: ErrWrongType, Field: "method", Detail: "must not be empty"}
		}
		m.Params = clone(f.raw[fParams])
		if m.TimeoutMs, err = f.int(fTimeoutMs, m.Type, false); err != nil {
			return err
		}
		if f.raw[fTimeoutMs] != nil && (m.TimeoutMs < 1 || m.TimeoutMs > MaxTimeoutMs) {
			m.TimeoutMs = 0
			return &DecodeError{Code: ErrWrongType, Field: "timeoutMs", Detail: "must be between 1 and " + strconv.Itoa(MaxTimeoutMs)}
		}
		return f.key(m)
	case TypeResponse:
		id, err := f.int(fID, m.Type, true)
		if err != nil {
			return err
		}
		if id < 0 {
			return &DecodeError{Code: ErrWrongType, Field: "id", Detail: "must not be negative"}
		}
		m.ID = uint64(id)
		if (f.raw[fResult] == nil) == (f.raw[fError] == nil) {
			return &DecodeError{Code: ErrMissingField, Field: "result", Detail: "response needs exactly one of result and error"}
		}
		if f.raw[fError] != nil {
			m.Error, err = f.errorBody(f.raw[fError])
			return err
		}
		m.Result = clone(f.raw[fResult])
	case TypeAuth, TypeRefresh:
		var err *DecodeError
		if m.Token, err = f.str(fToken, m.Type, true); err != nil {
			return err
		}
		if m.Token == "" || len(m.Token) > MaxTokenBytes {
			return &DecodeError{Code: ErrWrongType, Field: "token", Detail: "must be 1 to " + strconv.Itoa(MaxTokenBytes) + " bytes"}
		}
	case TypeAuthenticated:
		var err *DecodeError
		m.ExpiresAt, err = f.int(fExpiresAt, m.Type, false)
		return err
	case TypeWelcome:
		var err *DecodeError
		if m.Session, err = f.id(fSession, m.Type, true); err != nil {
			return err
		}
		if m.User, err = f.id(fUser, m.Type, false); err != nil {
			return err
		}
		m.Node, err = f.id(fNode, m.Type, false)
		return err
	case TypePresence:
		if err := f.topic(m); err != nil {
			return err
		}
		var err *DecodeError
		if m.Event, err = f.str(fEvent, m.Type, true); err != nil {
			return err
		}
		if m.Event != PresenceJoin && m.Event != PresenceLeave {
			m.Event = ""
			return &DecodeError{Code: ErrWrongType, Field: "event", Detail: "must be join or leave"}
		}
		m.User, err = f.id(fUser, m.Type, true)
		return err
	case TypeProbe, TypeProbeAck:
		id, err := f.int(fID, m.Type, false)
		if err != nil {
			return err
		}
		if id < 0 {
			return &DecodeError{Code: ErrWrongType, Field: "id", Detail: "must not be negative"}
		}
		m.ID = uint64(id)
	case TypeError:
		id, err := f.int(fID, m.Type, false)
		if err != nil {
			return err
		}
		if id < 0 {
			return &DecodeError{Code: ErrWrongType, Field: "id", Detail: "must not be negative"}
		}
		m.ID = uint64(id)
		eb := &ErrorBody{}
		if eb.Code, err = f.str(fCode, m.Type, true); err != nil {
			return err
		}
		if eb.Code == "" {
			return &DecodeError{Code: ErrMissingField, Field: "code"}
		}
		if eb.Message, err = f.str(fMessage, m.Type, false); err != nil {
			return err
		}
		if m.Topic, err = f.str(fTopic, m.Type, false); err != nil {
			return err
		}
		if eb.RetryAfterMs, err = f.retryAfter(f.raw[fRetryAfterMs], "retryAfterMs"); err != nil {
			return err
		}
		m.Error = eb
	case TypeReport:
		return decodeReport(m, f)
	default:
		return &DecodeError{Code: ErrUnknownType, Field: "type", Detail: "unknown type " + quote.ASCII(truncate(string(m.Type), 40))}
	}
	return nil
}

// field names a top-level key some message type defines.
type field uint8

const (
	fNone field = iota
	fType
	fIntervalMs
	fSeq
	fID
	fTopic
	fReason
	fMethod
	fData
	fParams
	fResult
	fError
	fCode
	fMessage
	fToken
	fExpiresAt
	fSince
	fStream
	fFrom
	fHead
	fSession
	fUser
	fNode
	fEvent
	fPresence
	fTimeoutMs
	fKey
	fRetryAfterMs
	fReport
	nFields
)

var fieldNames = [nFields]string{"", "type", "intervalMs", "seq", "id", "topic", "reason", "method", "data", "params", "result", "error", "code", "message", "token", "expiresAt", "since", "stream", "from", "head",
	"session", "user", "node", "event", "presence", "timeoutMs", "key", "retryAfterMs", "report"}

// fieldOf names the field a key (a string literal's body, unescaped)
// stands for. A switch on string(b) does not allocate.
func fieldOf(key []byte) field {
	switch string(key) {
	case "type":
		return fType
	case "intervalMs":
		return fIntervalMs
	case "seq":
		return fSeq
	case "id":
		return fID
	case "topic":
		return fTopic
	case "reason":
		return fReason
	case "method":
		return fMethod
	case "data":
		return fData
	case "params":
		return fParams
	case "result":
		return fResult
	case "error":
		return fError
	case "code":
		return fCode
	case "message":
		return fMessage
	case "token":
		return fToken
	case "expiresAt":
		return fExpiresAt
	case "since":
		return fSince
	case "stream":
		return fStream
	case "from":
		return fFrom
	case "head":
		return fHead
	case "session":
		return fSession
	case "user":
		return fUser
	case "node":
		return fNode
	case "event":
		return fEvent
	case "presence":
		return fPresence
	case "timeoutMs":
		return fTimeoutMs
	case "key":
		return fKey
	case "retryAfterMs":
		return fRetryAfterMs
	case "report":
		return fReport
	}
	return fNone
}

// fields holds the raw (validated) value of each known key of a frame; nil
// if absent. A repeated key keeps its last value, as encoding/json does.
type fields struct {
	raw     [nFields][]byte
	unquote func(lit []byte) string // a validated string literal, quotes included, to its value
}

// read reads the object b (a whole frame: trailing space allowed, nothing
// else), validating all of it.
func (f *fields) read(b []byte) *DecodeError {
	s := scanner{b: b}
	err := s.members(0, func(key, val []byte) {
		if k := f.keyOf(key); k != fNone {
			f.raw[k] = val
		}
	})
	if err != nil {
		return err
	}
	s.skipSpace()
	if s.pos != len(b) {
		return s.errf("trailing data after JSON value")
	}
	return nil
}

// keyOf names the field of a key literal (quotes included).
func (f *fields) keyOf(lit []byte) field {
	body := lit[1 : len(lit)-1]
	for _, c := range body {
		if c == '\\' {
			return fieldOf([]byte(f.unquote(lit)))
		}
	}
	return fieldOf(body)
}

// members reads the object at pos, which depth containers enclose, and
// validates it, calling fn with each member's key literal (quotes
// included) and the span of its value, in order.
func (s *scanner) members(depth int, fn func(key, val []byte)) *DecodeError {
	s.skipSpace()
	if s.pos >= len(s.b) || s.b[s.pos] != '{' {
		return s.errf("expected '{'")
	}
	if depth >= maxDepth {
		return s.errf("nesting too deep")
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(s.b) && s.b[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.skipSpace()
		k := s.pos
		if _, err := s.stringEnd(); err != nil {
			return err
		}
		key := s.b[k:s.pos]
		s.skipSpace()
		if s.pos >= len(s.b) || s.b[s.pos] != ':' {
			return s.errf("expected ':'")
		}
		s.pos++
		start, end, err := s.value(depth + 1)
		if err != nil {
			return err
		}
		fn(key, s.b[start:end])
		s.skipSpace()
		if s.pos >= len(s.b) {
			return s.errf("unexpected end of object")
		}
		switch s.b[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errf("expected ',' or '}'")
		}
	}
}

func missing(name string, t Type) *DecodeError {
	return &DecodeError{Code: ErrMissingField, Field: name, Detail: string(t) + " needs " + name}
}

func (f *fields) int(k field, t Type, required bool) (int64, *DecodeError) {
	if f.raw[k] == nil {
		if required {
			return 0, missing(fieldNames[k], t)
		}
		return 0, nil
	}
	return asInt(fieldNames[k], f.raw[k])
}

func (f *fields) str(k field, t Type, required bool) (string, *DecodeError) {
	if f.raw[k] == nil {
		if required {
			return "", missing(fieldNames[k], t)
		}
		return "", nil
	}
	return f.asString(fieldNames[k], f.raw[k])
}

// bool reads an optional boolean (false when absent).
func (f *fields) bool(k field) (bool, *DecodeError) {
	switch v := f.raw[k]; {
	case v == nil:
		return false, nil
	case string(v) == "true":
		return true, nil
	case string(v) == "false":
		return false, nil
	}
	return false, &DecodeError{Code: ErrWrongType, Field: fieldNames[k], Detail: "must be true or false"}
}

// id reads an opaque id (welcome's session, user and node; presence's
// user): a string of 1 to MaxIDBytes bytes.
func (f *fields) id(k field, t Type, required bool) (string, *DecodeError) {
	s, err := f.str(k, t, required)
	if err != nil {
		return "", err
	}
	if f.raw[k] != nil && (s == "" || len(s) > MaxIDBytes) {
		return "", &DecodeError{Code: ErrWrongType, Field: fieldNames[k], Detail: "must be 1 to " + strconv.Itoa(MaxIDBytes) + " bytes"}
	}
	return s, nil
}

// key reads a request's or a publish's optional idempotency key.
func (f *fields) key(m *Message) *DecodeError {
	k, err := f.str(fKey, m.Type, false)
	if err != nil {
		return err
	}
	if f.raw[fKey] != nil && !ValidKey(k) {
		return &DecodeError{Code: ErrWrongType, Field: "key", Detail: "must be 1 to " + strconv.Itoa(MaxKeyBytes) + " of A-Z a-z 0-9 - _"}
	}
	m.Key = k
	return nil
}

// retryAfter reads an optional retryAfterMs (an error's): an integer >= 0.
func (f *fields) retryAfter(v []byte, name string) (int64, *DecodeError) {
	if v == nil {
		return 0, nil
	}
	n, err := asInt(name, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, &DecodeError{Code: ErrWrongType, Field: name, Detail: "must not be negative"}
	}
	return n, nil
}

// callID reads a request's or a publish's id: required and positive.
func (f *fields) callID(m *Message) *DecodeError {
	id, err := f.int(fID, m.Type, true)
	if err != nil {
		return err
	}
	if id <= 0 {
		return &DecodeError{Code: ErrWrongType, Field: "id", Detail: "must be positive"}
	}
	m.ID = uint64(id)
	return nil
}

// data reads a required raw JSON data field (update, publish).
func (f *fields) data(m *Message) *DecodeError {
	if f.raw[fData] == nil {
		return missing("data", m.Type)
	}
	m.Data = clone(f.raw[fData])
	return nil
}

func (f *fields) topic(m *Message) *DecodeError {
	var err *DecodeError
	if m.Topic, err = f.str(fTopic, m.Type, true); err != nil {
		return err
	}
	if m.Topic == "" {
		return &DecodeError{Code: ErrWrongType, Field: "topic", Detail: "must not be empty"}
	}
	if !ValidTopic(m.Topic) {
		return &DecodeError{Code: ErrInvalidTopic, Field: "topic", Detail: ErrBadTopic.Error()}
	}
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// errorBody reads a response's error object: code (a non-empty string)
// and message (optional). As at the top level, other keys are ignored and
// a repeated key keeps its last value.
func (f *fields) errorBody(val []byte) (*ErrorBody, *DecodeError) {
	if val[0] != '{' {
		return nil, &DecodeError{Code: ErrWrongType, Field: "error", Detail: "must be an object"}
	}
	var code, msg, retry []byte
	s := scanner{b: val}
	err := s.members(1, func(key, v []byte) {
		switch f.keyOf(key) {
		case fCode:
			code = v
		case fMessage:
			msg = v
		case fRetryAfterMs:
			retry = v
		}
	})
	if err != nil {
		return nil, err
	}
	eb := &ErrorBody{}
	if code != nil {
		if eb.Code, err = f.asString("error.code", code); err != nil {
			return nil, err
		}
	}
	if msg != nil {
		if eb.Message, err = f.asString("error.message", msg); err != nil {
			return nil, err
		}
	}
	if eb.Code == "" {
		return nil, &DecodeError{Code: ErrMissingField, Field: "error.code"}
	}
	if eb.RetryAfterMs, err = f.retryAfter(retry, "error.retryAfterMs"); err != nil {
		return nil, err
	}
	return eb, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (f *fields) asString(field string, val []byte) (string, *DecodeError) {
	if val[0] != '"' {
		return "", &DecodeError{Code: ErrWrongType, Field: field, Detail: "must be a string"}
	}
	return f.unquote(val), nil
}

func asInt(field string, val []byte) (int64, *DecodeError) {
	n, ok := ParseInt64(string(val))
	if !ok {
		return 0, &DecodeError{Code: ErrWrongType, Field: field, Detail: "must be an integer"}
	}
	return n, nil
}

// Encode returns m as one JSON frame. Raw fields must hold valid JSON; an
// invalid raw field is replaced by null rather than corrupting the frame.
func Encode(m Message) []byte {
	return AppendEncode(make([]byte, 0, 96+len(m.Data)+len(m.Params)+len(m.Result)), m)
}

// AppendEncode appends the encoding of m to b.
//
// Each field goes through one of three small functions kept out of line
// (go:noinline): inlined, their appends were copied into every case and
// made this the largest function of the browser client (43 KB of wasm
// code). A call per field costs nothing next to the appends.
func AppendEncode(b []byte, m Message) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, string(m.Type))
	raw := func(name string, v []byte) { b = appendRawField(b, name, v) }
	str := func(name, v string) { b = appendStrField(b, name, v) }
	num := func(name string, v int64) { b = appendNumField(b, name, v) }
	switch m.Type {
	case TypePing:
		num("intervalMs", m.IntervalMs)
	case TypeSubscribe:
		str("topic", m.Topic)
		if m.HasSince {
			num("since", m.Since)
		}
		if m.Stream != "" {
			str("stream", m.Stream)
		}
		if m.Presence {
			b = append(b, `,"presence":true`...)
		}
	case TypeUnsubscribe:
		str("topic", m.Topic)
	case TypeSubscribed:
		str("topic", m.Topic)
		if m.From != 0 {
			num("from", m.From)
		}
		if m.Head != 0 {
			num("head", m.Head)
		}
		if m.Stream != "" {
			str("stream", m.Stream)
		}
	case TypePublish:
		num("id", int64(m.ID))
		str("topic", m.Topic)
		raw("data", m.Data)
		if m.Key != "" {
			str("key", m.Key)
		}
	case TypeUnsubscribed:
		str("topic", m.Topic)
		if m.Reason != "" {
			str("reason", m.Reason)
		}
	case TypeUpdate:
		str("topic", m.Topic)
		num("seq", m.Seq)
		raw("data", m.Data)
	case TypeRequest:
		num("id", int64(m.ID))
		str("method", m.Method)
		if m.Params != nil {
			raw("params", m.Params)
		}
		if m.TimeoutMs != 0 {
			num("timeoutMs", m.TimeoutMs)
		}
		if m.Key != "" {
			str("key", m.Key)
		}
	case TypeResponse:
		num("id", int64(m.ID))
		if m.Error != nil {
			b = append(b, `,"error":{"code":`...)
			b = appendString(b, m.Error.Code)
			b = append(b, `,"message":`...)
			b = appendString(b, m.Error.Message)
			if m.Error.RetryAfterMs != 0 {
				num("retryAfterMs", m.Error.RetryAfterMs)
			}
			b = append(b, '}')
		} else {
			raw("result", m.Result)
		}
	case TypeAuth, TypeRefresh:
		str("token", m.Token)
	case TypeAuthenticated:
		if m.ExpiresAt != 0 {
			num("expiresAt", m.ExpiresAt)
		}
	case TypeProbe, TypeProbeAck:
		num("id", int64(m.ID))
	case TypeWelcome:
		str("session", m.Session)
		if m.User != "" {
			str("user", m.User)
		}
		if m.Node != "" {
			str("node", m.Node)
		}
	case TypePresence:
		str("topic", m.Topic)
		str("event", m.Event)
		str("user", m.User)
	case TypeReport:
		b = appendReport(b, m.Report)
	case TypeError:
		if m.ID != 0 {
			num("id", int64(m.ID))
		}
		var eb ErrorBody
		if m.Error != nil {
			eb = *m.Error
		}
		str("code", eb.Code)
		str("message", eb.Message)
		if m.Topic != "" {
			str("topic", m.Topic)
		}
		if eb.RetryAfterMs != 0 {
			num("retryAfterMs", eb.RetryAfterMs)
		}
	}
	return append(b, '}')
}

// appendKey appends ,"name": to b.
func appendKey(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendRawField appends ,"name":v; v must be valid JSON, or null is
// written in its place.
//
//go:noinline
func appendRawField(b []byte, name string, v []byte) []byte {
	b = appendKey(b, name)
	if v == nil || !Valid(v) {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// appendStrField appends ,"name":"v" (v escaped).
//
//go:noinline
func appendStrField(b []byte, name, v string) []byte {
	return appendString(appendKey(b, name), v)
}

// appendNumField appends ,"name":v.
//
//go:noinline
func appendNumField(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(appendKey(b, name), v, 10)
}
