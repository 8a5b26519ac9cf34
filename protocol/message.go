// Package protocol defines wsready's wire protocol: JSON text frames, one
// object each, with a "type" field, and the close codes both sides use.
//
// It has its own small JSON codec instead of encoding/json to keep the
// browser (WebAssembly) build small; Decode rejects malformed input with a
// *DecodeError whose Code is stable and safe to send back to a peer.
package protocol

import (
	"strconv"
)

// Type names a message kind. It is the frame's "type" field.
type Type string

// Server to client.
const (
	TypePing         Type = "ping"         // heartbeat; intervalMs is the server's ping interval
	TypeSubscribed   Type = "subscribed"   // the subscription to topic is live
	TypeUnsubscribed Type = "unsubscribed" // the service dropped the subscription; reason says why
	TypeUpdate       Type = "update"       // a feed item: topic, seq, data
	TypeResponse     Type = "response"     // answer to request id: result or error
	TypeError        Type = "error"        // the server could not use a frame the client sent
)

// Client to server.
const (
	TypeSubscribe Type = "subscribe" // subscribe to topic
	TypeRequest   Type = "request"   // call method with params; answered by a response with the same id
)

// MaxFrameBytes is the largest frame either side accepts (64 KiB). The server
// closes a connection that sends a larger one with CloseMessageTooBig.
const MaxFrameBytes = 64 << 10

// DefaultTopic is the feed the demo subscribes to.
const DefaultTopic = "feed"

// ErrorBody is the error of a response or an error frame.
type ErrorBody struct {
	Code    string
	Message string
}

// Message is one decoded frame. Which fields are set depends on Type; the
// README lists them. Raw fields (Data, Params, Result) hold validated JSON.
type Message struct {
	Type       Type
	IntervalMs int64      // ping
	Topic      string     // subscribe, subscribed, unsubscribed, update
	Reason     string     // unsubscribed
	Seq        int64      // update
	Data       []byte     // update (raw JSON)
	ID         uint64     // request, response; error (when it concerns a request)
	Method     string     // request
	Params     []byte     // request (raw JSON, optional)
	Result     []byte     // response (raw JSON), exclusive with Error
	Error      *ErrorBody // response (exclusive with Result); error frame
}

// Decode parses one frame. Unknown fields are ignored so that either side
// can add optional fields; unknown types, missing or wrong-typed required
// fields, and anything that is not a single JSON object are errors.
func Decode(b []byte) (Message, error) {
	var m Message
	if len(b) > MaxFrameBytes {
		return m, &DecodeError{Code: ErrTooLarge, Detail: "frame of " + strconv.Itoa(len(b)) + " bytes exceeds " + strconv.Itoa(MaxFrameBytes)}
	}
	s := scanner{b: b}
	s.skipSpace()
	if s.pos >= len(b) || b[s.pos] != '{' {
		if !Valid(b) {
			return m, s.errf("not JSON")
		}
		return m, &DecodeError{Code: ErrNotObject, Detail: "frame must be a JSON object"}
	}
	if !Valid(b) {
		return m, firstError(b)
	}
	s.pos++
	var seen fieldSet
	var typ string
	var hasType bool
	var errField []byte
	for {
		s.skipSpace()
		if b[s.pos] == '}' {
			break
		}
		key, _ := s.str()
		s.skipSpace()
		s.pos++ // ':'
		start, end, _ := s.value(0)
		val := b[start:end]
		seen.add(key)
		var err *DecodeError
		switch key {
		case "type":
			typ, err = asString(key, val)
			hasType = err == nil
		case "intervalMs":
			m.IntervalMs, err = asInt(key, val)
		case "seq":
			m.Seq, err = asInt(key, val)
		case "id":
			var n int64
			n, err = asInt(key, val)
			if err == nil && n < 0 {
				err = &DecodeError{Code: ErrWrongType, Field: key, Detail: "must not be negative"}
			}
			m.ID = uint64(n)
		case "topic":
			m.Topic, err = asString(key, val)
		case "reason":
			m.Reason, err = asString(key, val)
		case "method":
			m.Method, err = asString(key, val)
		case "data":
			m.Data = append([]byte(nil), val...)
		case "params":
			m.Params = append([]byte(nil), val...)
		case "result":
			m.Result = append([]byte(nil), val...)
		case "error":
			errField = val
		case "code":
			var c string
			c, err = asString(key, val)
			if m.Error == nil {
				m.Error = &ErrorBody{}
			}
			m.Error.Code = c
		case "message":
			var c string
			c, err = asString(key, val)
			if m.Error == nil {
				m.Error = &ErrorBody{}
			}
			m.Error.Message = c
		}
		if err != nil {
			return Message{}, err
		}
		s.skipSpace()
		if b[s.pos] == ',' {
			s.pos++
		}
	}
	if !hasType {
		return Message{}, &DecodeError{Code: ErrMissingField, Field: "type", Detail: "every frame needs a type"}
	}
	m.Type = Type(typ)
	if m.Type == TypeResponse {
		m.Error = nil // only the nested "error" object counts for a response
		if errField != nil {
			eb, err := decodeErrorBody(errField)
			if err != nil {
				return Message{}, err
			}
			m.Error = eb
		}
	}
	return m, validate(&m, seen)
}

func firstError(b []byte) error {
	s := scanner{b: b}
	if _, _, err := s.value(0); err != nil {
		return err
	}
	s.skipSpace()
	return s.errf("trailing data after JSON value")
}

func decodeErrorBody(val []byte) (*ErrorBody, *DecodeError) {
	if val[0] != '{' {
		return nil, &DecodeError{Code: ErrWrongType, Field: "error", Detail: "must be an object"}
	}
	s := scanner{b: val, pos: 1}
	eb := &ErrorBody{}
	for {
		s.skipSpace()
		if val[s.pos] == '}' {
			break
		}
		key, _ := s.str()
		s.skipSpace()
		s.pos++
		start, end, _ := s.value(0)
		var err *DecodeError
		switch key {
		case "code":
			eb.Code, err = asString("error.code", val[start:end])
		case "message":
			eb.Message, err = asString("error.message", val[start:end])
		}
		if err != nil {
			return nil, err
		}
		s.skipSpace()
		if val[s.pos] == ',' {
			s.pos++
		}
	}
	if eb.Code == "" {
		return nil, &DecodeError{Code: ErrMissingField, Field: "error.code"}
	}
	return eb, nil
}

// fieldSet records which known top-level fields a frame had, without the
// allocation of a map.
type fieldSet uint16

var knownFields = [...]string{"type", "intervalMs", "seq", "id", "topic", "reason", "method", "data", "params", "result", "error", "code", "message"}

func (f *fieldSet) add(key string) {
	for i, k := range knownFields {
		if k == key {
			*f |= 1 << i
			return
		}
	}
}

func (f fieldSet) has(key string) bool {
	for i, k := range knownFields {
		if k == key {
			return f&(1<<i) != 0
		}
	}
	return false
}

func validate(m *Message, seen fieldSet) error {
	need := func(fields ...string) error {
		for _, f := range fields {
			if !seen.has(f) {
				return &DecodeError{Code: ErrMissingField, Field: f, Detail: string(m.Type) + " needs " + f}
			}
		}
		return nil
	}
	switch m.Type {
	case TypePing:
		if err := need("intervalMs"); err != nil {
			return err
		}
		if m.IntervalMs <= 0 {
			return &DecodeError{Code: ErrWrongType, Field: "intervalMs", Detail: "must be positive"}
		}
	case TypeSubscribe, TypeSubscribed, TypeUnsubscribed:
		if err := need("topic"); err != nil {
			return err
		}
		if m.Topic == "" {
			return &DecodeError{Code: ErrWrongType, Field: "topic", Detail: "must not be empty"}
		}
	case TypeUpdate:
		return need("topic", "seq", "data")
	case TypeRequest:
		if err := need("id", "method"); err != nil {
			return err
		}
		if m.ID == 0 {
			return &DecodeError{Code: ErrWrongType, Field: "id", Detail: "must be positive"}
		}
		if m.Method == "" {
			return &DecodeError{Code: ErrWrongType, Field: "method", Detail: "must not be empty"}
		}
	case TypeResponse:
		if err := need("id"); err != nil {
			return err
		}
		if (m.Result == nil) == (m.Error == nil) {
			return &DecodeError{Code: ErrMissingField, Field: "result", Detail: "response needs exactly one of result and error"}
		}
	case TypeError:
		if m.Error == nil || m.Error.Code == "" {
			return &DecodeError{Code: ErrMissingField, Field: "code"}
		}
	default:
		return &DecodeError{Code: ErrUnknownType, Field: "type", Detail: "unknown type " + strconv.Quote(truncate(string(m.Type), 40))}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func asString(field string, val []byte) (string, *DecodeError) {
	if val[0] != '"' {
		return "", &DecodeError{Code: ErrWrongType, Field: field, Detail: "must be a string"}
	}
	s := scanner{b: val}
	str, err := s.str()
	return str, err
}

func asInt(field string, val []byte) (int64, *DecodeError) {
	n, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil {
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
func AppendEncode(b []byte, m Message) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, string(m.Type))
	raw := func(name string, v []byte) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		if v == nil || !Valid(v) {
			b = append(b, "null"...)
		} else {
			b = append(b, v...)
		}
	}
	str := func(name, v string) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = appendString(b, v)
	}
	num := func(name string, v int64) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, v, 10)
	}
	switch m.Type {
	case TypePing:
		num("intervalMs", m.IntervalMs)
	case TypeSubscribe, TypeSubscribed:
		str("topic", m.Topic)
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
	case TypeResponse:
		num("id", int64(m.ID))
		if m.Error != nil {
			b = append(b, `,"error":{"code":`...)
			b = appendString(b, m.Error.Code)
			b = append(b, `,"message":`...)
			b = appendString(b, m.Error.Message)
			b = append(b, '}')
		} else {
			raw("result", m.Result)
		}
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
	}
	return append(b, '}')
}
