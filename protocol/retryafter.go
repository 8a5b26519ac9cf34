package protocol

import (
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter is the longest retry-after a client honours; a longer one
// is clamped to it.
const MaxRetryAfter = time.Hour

// RetryAfterReason is the close reason a server sends with a retry-after:
// "retry-after-ms=N". Browsers cannot read an HTTP refusal's status or
// headers, so a server that wants a client to wait accepts the handshake
// and closes with 1013 (or 1012, 1001) and this reason.
func RetryAfterReason(d time.Duration) string {
	return "retry-after-ms=" + strconv.FormatInt(d.Milliseconds(), 10)
}

// ParseRetryAfter reads a retry-after from a close reason: a field
// "retry-after-ms=N" among space- or semicolon-separated fields, N a whole
// number of milliseconds. A missing, malformed, zero or negative value
// reports false (the caller's backoff applies); one over MaxRetryAfter is
// clamped to it.
func ParseRetryAfter(reason string) (time.Duration, bool) {
	for _, f := range strings.FieldsFunc(reason, func(r rune) bool { return r == ' ' || r == ';' || r == ',' }) {
		v, ok := strings.CutPrefix(f, "retry-after-ms=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, false
		}
		if n > MaxRetryAfter.Milliseconds() {
			return MaxRetryAfter, true
		}
		return time.Duration(n) * time.Millisecond, true
	}
	return 0, false
}

// ParseRetryAfterHeader reads an HTTP Retry-After header given in seconds
// (the HTTP-date form is not used by wsready and reports false), with the
// same rules as ParseRetryAfter.
func ParseRetryAfterHeader(v string) (time.Duration, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	if n > int64(MaxRetryAfter/time.Second) {
		return MaxRetryAfter, true
	}
	return time.Duration(n) * time.Second, true
}
