package protocol

import (
	"strconv"
	"time"
	"unicode/utf8"
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
	const key = "retry-after-ms="
	for reason != "" {
		// The next field: up to a space, ';' or ',' (all ASCII, so bytes
		// split it as strings.FieldsFunc would).
		i := 0
		for i < len(reason) && reason[i] != ' ' && reason[i] != ';' && reason[i] != ',' {
			i++
		}
		f := reason[:i]
		if i < len(reason) {
			i++
		}
		reason = reason[i:]
		if len(f) < len(key) || f[:len(key)] != key {
			continue
		}
		n, ok := ParseInt64(f[len(key):])
		if !ok || n <= 0 {
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
	n, ok := ParseInt64(trimSpace(v))
	if !ok || n <= 0 {
		return 0, false
	}
	if n > int64(MaxRetryAfter/time.Second) {
		return MaxRetryAfter, true
	}
	return time.Duration(n) * time.Second, true
}

// ParseInt64 is strconv.ParseInt(s, 10, 64) that reports only whether it
// succeeded: an optional sign and decimal digits, in int64's range. The
// browser client parses its integers with it: strconv's parsing and its
// NumError were about 7 KB of the wasm.
func ParseInt64(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 || n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c)
		if n > 1<<63 {
			return 0, false
		}
	}
	if !neg && n > 1<<63-1 {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// trimSpace is strings.TrimSpace (unicode.IsSpace at both ends) without
// unicode's tables.
func trimSpace(s string) string {
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		if !isSpace(r) {
			break
		}
		s = s[size:]
	}
	for s != "" {
		r, size := utf8.DecodeLastRuneInString(s)
		if !isSpace(r) {
			break
		}
		s = s[:len(s)-size]
	}
	return s
}

// isSpace is unicode.IsSpace: Unicode's White_Space property.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}
