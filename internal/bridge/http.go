package bridge

import (
	"errors"

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
// protocol.MaxIDBytes of base64url's alphabet (the server issues 22), so it
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
