package bridge

import (
	"errors"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The HTTP transport's pure pieces (stage 8; the README's "Stage 8 HTTP
// transport"): the URLs it derives from the WebSocket URL, how it reads a
// refused session, and how it batches frames into one POST. The browser
// driver (wasm/http.go) does the I/O.

// MaxPostBytes bounds one POST /send body: the server's bound,
// protocol.MaxFrameBytes x 16 (1 MiB).
const MaxPostBytes = protocol.MaxFrameBytes * 16

// HTTPURL derives an HTTP transport URL from the WebSocket URL: ws -> http,
// wss -> https, endpoint ("probe", "session", "sse", "send") appended to
// the path, and session (when not "") as the query's session parameter
// beside any query the URL had. ws://host/ws -> http://host/ws/session.
func HTTPURL(wsURL, endpoint, session string) (string, error) {
	var scheme, rest string
	switch {
	case hasPrefix(wsURL, "ws://"):
		scheme, rest = "http://", wsURL[len("ws://"):]
	case hasPrefix(wsURL, "wss://"):
		scheme, rest = "https://", wsURL[len("wss://"):]
	default:
		return "", errors.New("not a ws:// or wss:// URL")
	}
	if session != "" && !ValidSession(session) {
		return "", errors.New("the server's session id is not 1 to 128 of A-Z a-z 0-9 - _")
	}
	if i := indexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	query := ""
	if i := indexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	if indexByte(rest, '/') < 0 {
		rest += "/" // ws://host -> http://host/
	}
	if rest[len(rest)-1] != '/' {
		rest += "/"
	}
	u := scheme + rest + endpoint
	if session != "" {
		if query != "" {
			query += "&"
		}
		query += "session=" + session
	}
	if query != "" {
		u += "?" + query
	}
	return u, nil
}

// ValidSession reports whether s can be the server's session id: 1 to
// protocol.MaxIDBytes of base64url's alphabet (the server's are 22 bytes), so it
// goes into a URL as it is.
func ValidSession(s string) bool {
	if len(s) == 0 || len(s) > protocol.MaxIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Refusal maps a refused POST /session to the close the core is told, as
// a WebSocket would have reported it. 429 and 503 are the server steering:
// the close its JSON body names when that carries a retry-after (1013, or
// 1012/1001 with a reconnect slot, to the millisecond), else 1013 with
// "retry-after-ms=N" from the Retry-After header (whole seconds), or 1013
// alone. A 401 or 403 whose body names a close is that close (4001, 4003,
// 1008: classified like the WebSocket's; a 403 naming 1013, an older
// server's tenant refusal, is 1013 with its slot). The same mapping
// serves a POST <base>/send the server refused for its bounds (429 with
// Retry-After). Anything else (404, a proxy's
// 403 without the body, 400/415, 5xx) is a transport loss, 1006, that
// counts towards the fallback like a WebSocket that never opened.
// closeCode is 0 when the body named none.
func Refusal(status int, retryAfter string, closeCode int, closeReason string) (code int, reason string) {
	switch {
	case status == 429 || status == 503:
		steering := closeCode == protocol.CloseTryAgainLater || closeCode == protocol.CloseServiceRestart || closeCode == protocol.CloseGoingAway
		if _, ok := protocol.ParseRetryAfter(closeReason); ok && steering {
			return closeCode, closeReason
		}
		if d, ok := protocol.ParseRetryAfterHeader(retryAfter); ok {
			return protocol.CloseTryAgainLater, protocol.RetryAfterReason(d)
		}
		return protocol.CloseTryAgainLater, ""
	case (status == 401 || status == 403) && (closeCode == protocol.ClosePolicyViolation || closeCode >= 4000 && closeCode <= 4999):
		return closeCode, closeReason
	case status == 403 && closeCode == protocol.CloseTryAgainLater:
		// A server before 503 for every capacity refusal answered
		// MaxConnsPerTenant's 1013 with 403: still the server steering,
		// with its slot when the reason carries one.
		if _, ok := protocol.ParseRetryAfter(closeReason); ok {
			return closeCode, closeReason
		}
		return protocol.CloseTryAgainLater, ""
	}
	return protocol.CloseAbnormal, ""
}

// StreamClose reads the close a stream's "event: close" carried: a code
// from 1000 to 4999 with its reason; anything else is 1006 (the stream
// ended without saying why).
func StreamClose(code float64, reason string) (int, string) {
	if code != float64(int(code)) || code < 1000 || code > 4999 {
		return protocol.CloseAbnormal, ""
	}
	return int(code), reason
}

// Batch takes the first frames of queue that fit in one POST body of at
// most limit bytes (at least one: a frame is never larger than the bound)
// and returns the body, one frame as it is or several as a JSON array, and
// how many it took.
func Batch(queue [][]byte, limit int) (body []byte, n int) {
	if len(queue) == 0 {
		return nil, 0
	}
	if len(queue) == 1 || len(queue[0])+len(queue[1])+3 > limit {
		return queue[0], 1
	}
	body = append(body, '[')
	for n < len(queue) {
		need := len(queue[n]) + 1 // the frame and the closing ]
		if n > 0 {
			need++ // its comma
		}
		if len(body)+need > limit {
			break
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(body, queue[n]...)
		n++
	}
	return append(body, ']'), n
}

// IsAuthFrame reports whether frame is an auth frame (protocol.Encode
// writes the type first). The HTTP transport sends the ticket in POST
// /session and drops the core's auth frame: the session is authenticated
// when it is made.
func IsAuthFrame(frame []byte) bool {
	const pre = `{"type":"auth"`
	return len(frame) >= len(pre) && string(frame[:len(pre)]) == pre
}

// FirstEventTimeout is how long an opened event stream may deliver nothing
// before the session goes on in long polls (3 s): the server writes its
// first ping and the welcome at once, so a stream that opens and stays
// silent this long is held back by something on the path (a proxy that
// buffers responses).
const FirstEventTimeout = 3 * time.Second

// PollModeFor is how long a server whose stream was held back starts its
// next sessions in long polls straight away before it tries streaming
// again (10 minutes, the WebSocket re-probe's default interval).
const PollModeFor = 10 * time.Minute

// PollURL is a long poll's URL: GET <base>/sse?session=<id>&poll=1, with
// welcome=1 (the session's streams delivered nothing, the welcome
// included) and lastEventId=<the last id received> when not "".
func PollURL(wsURL, session, lastID string, welcome bool) (string, error) {
	if session == "" {
		return "", errors.New("a long poll needs the session")
	}
	u, err := HTTPURL(wsURL, "sse", session)
	if err != nil {
		return "", err
	}
	u += "&poll=1"
	if welcome {
		u += "&welcome=1"
	}
	if lastID != "" {
		u += "&lastEventId=" + QueryEscape(lastID)
	}
	return u, nil
}

// QueryEscape percent-encodes every byte of s but A-Z a-z 0-9 - _ . ~
// (net/url's would cost the wasm the package).
func QueryEscape(s string) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}

// Event is one event of an event stream.
type Event struct {
	Name  string // the event: field; "" for a message
	ID    string // the id: field, when HasID
	HasID bool
	Data  string // the data: lines joined with \n
}

// ParseEvents reads a complete event stream body (a long poll's answer) as
// an EventSource would (the WHATWG rules this transport uses: data, id,
// event; comments and retry ignored; CR, LF and CRLF end a line; an event
// with no data is not dispatched, nor one the body ends in the middle of).
func ParseEvents(body string) []Event {
	var out []Event
	var ev Event
	var data []byte
	hasData := false
	for len(body) > 0 {
		end, next := len(body), len(body)
		for i := 0; i < len(body); i++ {
			if body[i] == '\n' {
				end, next = i, i+1
				break
			}
			if body[i] == '\r' {
				end, next = i, i+1
				if i+1 < len(body) && body[i+1] == '\n' {
					next = i + 2
				}
				break
			}
		}
		if end == len(body) {
			break // an unterminated line: the event is incomplete
		}
		line := body[:end]
		body = body[next:]
		if line == "" {
			if hasData {
				ev.Data = string(data)
				out = append(out, ev)
			}
			ev, data, hasData = Event{}, data[:0], false
			continue
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value := line, ""
		if i := indexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch field {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "event":
			ev.Name = value
		case "id":
			ev.ID, ev.HasID = value, true
		}
	}
	return out
}
