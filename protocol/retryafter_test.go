package protocol

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// A malformed or missing retry-after is ignored; one above an hour is
// clamped; none is ever zero or negative.
func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"retry-after-ms=5000", 5 * time.Second, true},
		{"overloaded; retry-after-ms=250", 250 * time.Millisecond, true},
		{RetryAfterReason(1500 * time.Millisecond), 1500 * time.Millisecond, true},
		{"retry-after-ms=99999999999", MaxRetryAfter, true},
		{"retry-after-ms=0", 0, false},
		{"retry-after-ms=-5", 0, false},
		{"retry-after-ms=5s", 0, false},
		{"retry-after-ms=", 0, false},
		{"retry-after=5", 0, false},
		{"", 0, false},
		{"retry-after-ms=9223372036854775807999", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v %v, want %v %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for in, want := range map[string]time.Duration{"3": 3 * time.Second, " 10 ": 10 * time.Second, "99999": MaxRetryAfter, "0": 0, "-1": 0, "soon": 0} {
		if got, _ := ParseRetryAfterHeader(in); got != want {
			t.Errorf("ParseRetryAfterHeader(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestAuthFrames(t *testing.T) {
	m, err := Decode([]byte(`{"type":"auth","token":"abc.def"}`))
	if err != nil || m.Token != "abc.def" {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := Decode([]byte(`{"type":"auth","token":""}`)); err == nil {
		t.Fatal("empty token accepted")
	}
	m, err = Decode(Encode(Message{Type: TypeAuthenticated, ExpiresAt: 1700000000000}))
	if err != nil || m.ExpiresAt != 1700000000000 {
		t.Fatalf("%+v %v", m, err)
	}
}

// ParseInt64, trimSpace and isSpace answer what strconv.ParseInt(s, 10,
// 64), strings.TrimSpace and unicode.IsSpace answer.
func TestParseInt64AndTrimSpaceMatchTheStandardLibrary(t *testing.T) {
	for _, s := range []string{
		"", "0", "-0", "+0", "7", "+7", "-7", "007", "12a", "a12", "1.5", "1e3", " 1", "1 ", "-", "+", "--1", "+-1", "1_000",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999", "922337203685477580", "9223372036854775799",
		"\u0661", "1\x00",
	} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := ParseInt64(s)
		if ok != (err == nil) || ok && got != want {
			t.Errorf("ParseInt64(%q) = %d, %v; strconv.ParseInt: %d, %v", s, got, ok, want, err)
		}
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if isSpace(r) != unicode.IsSpace(r) {
			t.Fatalf("isSpace(%U) = %v", r, isSpace(r))
		}
	}
	for _, s := range []string{"", " ", " 5 ", "\t5\n", "\u00a05\u3000", "\u20005\u200a", "\u200b5", "5\x85", "\xff 5 \xff", " \xff", "5\u2029 "} {
		if got, want := trimSpace(s), strings.TrimSpace(s); got != want {
			t.Errorf("trimSpace(%q) = %q, want %q", s, got, want)
		}
	}
}
