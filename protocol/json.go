package protocol

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner and writer for the wire protocol's flat objects.
//
// encoding/json roughly doubles the size of the browser build (reflection
// and its tables), so the protocol carries its own: it validates the whole
// frame, reads the top-level keys the protocol knows, and keeps nested values
// (data, params, result) as raw, validated JSON.

const maxDepth = 64

type scanner struct {
	b   []byte
	pos int
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) errf(msg string) *DecodeError {
	return &DecodeError{Code: ErrBadJSON, Detail: msg + " at offset " + strconv.Itoa(s.pos)}
}

// value skips one JSON value, validating it, and returns its span.
func (s *scanner) value(depth int) (start, end int, err *DecodeError) {
	if depth > maxDepth {
		return 0, 0, s.errf("nesting too deep")
	}
	s.skipSpace()
	start = s.pos
	if s.pos >= len(s.b) {
		return 0, 0, s.errf("unexpected end of input")
	}
	switch c := s.b[s.pos]; {
	case c == '{':
		s.pos++
		s.skipSpace()
		if s.pos < len(s.b) && s.b[s.pos] == '}' {
			s.pos++
			return start, s.pos, nil
		}
		for {
			s.skipSpace()
			if _, err := s.str(); err != nil {
				return 0, 0, err
			}
			s.skipSpace()
			if s.pos >= len(s.b) || s.b[s.pos] != ':' {
				return 0, 0, s.errf("expected ':'")
			}
			s.pos++
			if _, _, err := s.value(depth + 1); err != nil {
				return 0, 0, err
			}
			s.skipSpace()
			if s.pos >= len(s.b) {
				return 0, 0, s.errf("unexpected end of object")
			}
			if s.b[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.b[s.pos] == '}' {
				s.pos++
				return start, s.pos, nil
			}
			return 0, 0, s.errf("expected ',' or '}'")
		}
	case c == '[':
		s.pos++
		s.skipSpace()
		if s.pos < len(s.b) && s.b[s.pos] == ']' {
			s.pos++
			return start, s.pos, nil
		}
		for {
			if _, _, err := s.value(depth + 1); err != nil {
				return 0, 0, err
			}
			s.skipSpace()
			if s.pos >= len(s.b) {
				return 0, 0, s.errf("unexpected end of array")
			}
			if s.b[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.b[s.pos] == ']' {
				s.pos++
				return start, s.pos, nil
			}
			return 0, 0, s.errf("expected ',' or ']'")
		}
	case c == '"':
		if _, err := s.str(); err != nil {
			return 0, 0, err
		}
		return start, s.pos, nil
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		return 0, 0, s.errf("unexpected character")
	}
}

func (s *scanner) literal(lit string) (int, int, *DecodeError) {
	start := s.pos
	if len(s.b)-s.pos < len(lit) || string(s.b[s.pos:s.pos+len(lit)]) != lit {
		return 0, 0, s.errf("invalid literal")
	}
	s.pos += len(lit)
	return start, s.pos, nil
}

func (s *scanner) number() (int, int, *DecodeError) {
	start := s.pos
	if s.b[s.pos] == '-' {
		s.pos++
	}
	digits := func() int {
		n := 0
		for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	if s.pos < len(s.b) && s.b[s.pos] == '0' {
		s.pos++
	} else if digits() == 0 {
		return 0, 0, s.errf("invalid number")
	}
	if s.pos < len(s.b) && s.b[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return 0, 0, s.errf("invalid number")
		}
	}
	if s.pos < len(s.b) && (s.b[s.pos] == 'e' || s.b[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.b) && (s.b[s.pos] == '+' || s.b[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return 0, 0, s.errf("invalid number")
		}
	}
	return start, s.pos, nil
}

// str reads a JSON string at pos and returns it unescaped.
func (s *scanner) str() (string, *DecodeError) {
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return "", s.errf("expected string")
	}
	s.pos++
	start := s.pos
	simple := true
	for {
		if s.pos >= len(s.b) {
			return "", s.errf("unterminated string")
		}
		c := s.b[s.pos]
		switch {
		case c == '"':
			raw := s.b[start:s.pos]
			s.pos++
			if simple {
				return string(raw), nil
			}
			return unescape(raw), nil
		case c == '\\':
			simple = false
			s.pos++
			if s.pos >= len(s.b) {
				return "", s.errf("unterminated string")
			}
			switch s.b[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				if len(s.b)-s.pos < 5 || !isHex4(s.b[s.pos+1:s.pos+5]) {
					return "", s.errf("invalid unicode escape")
				}
				s.pos += 5
			default:
				return "", s.errf("invalid escape")
			}
		case c < 0x20:
			return "", s.errf("control character in string")
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.b[s.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", s.errf("invalid UTF-8")
			}
			s.pos += size
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hexVal(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// unescape decodes an already validated string body.
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hexVal(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' && isHex4(raw[i+3:]) {
					r2 := hexVal(raw[i+3:])
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, raw[i])
		}
		i++
	}
	return string(out)
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// Valid reports whether b is exactly one JSON value (surrounding space allowed).
func Valid(b []byte) bool {
	s := scanner{b: b}
	if _, _, err := s.value(0); err != nil {
		return false
	}
	s.skipSpace()
	return s.pos == len(b)
}
