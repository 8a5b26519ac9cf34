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
// (data, params, result) as raw, validated JSON. The server reads frames with
// encoding/json instead (DecodeJSON, not in the browser build); the two
// accept the same frames, with the same verdicts and values.

// maxDepth bounds how deeply arrays and objects nest: 10,000 levels,
// encoding/json's own bound, so both decoders draw the line at the same
// place. The scanner does not recurse, so a deep frame costs no Go stack,
// only a bit per level.
const maxDepth = 10000

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

// kinds is the stack of open containers of a value being scanned, one bit
// per level (1: object, 0: array).
type kinds struct {
	n    int
	head [2]uint64 // the first 128 levels: no allocation for ordinary frames
	rest []uint64  // deeper levels
}

func (k *kinds) word(i int) *uint64 {
	if i < 128 {
		return &k.head[i/64]
	}
	j := (i - 128) / 64
	for len(k.rest) <= j {
		k.rest = append(k.rest, 0)
	}
	return &k.rest[j]
}

func (k *kinds) push(object bool) {
	w, bit := k.word(k.n), uint64(1)<<(k.n%64)
	if object {
		*w |= bit
	} else {
		*w &^= bit
	}
	k.n++
}

func (k *kinds) topIsObject() bool {
	return *k.word(k.n - 1)&(uint64(1)<<((k.n-1)%64)) != 0
}

// value skips one JSON value, validating it, and returns its span. depth is
// how many containers enclose it already (0 for a whole frame).
func (s *scanner) value(depth int) (start, end int, err *DecodeError) {
	s.skipSpace()
	start = s.pos
	var open kinds
	for {
		// A value begins at pos.
		if s.pos >= len(s.b) {
			return 0, 0, s.errf("unexpected end of input")
		}
		switch c := s.b[s.pos]; {
		case c == '{' || c == '[':
			if depth+open.n >= maxDepth {
				return 0, 0, s.errf("nesting too deep")
			}
			s.pos++
			s.skipSpace()
			if s.pos < len(s.b) && s.b[s.pos] == c+2 { // '}' is '{'+2, ']' is '['+2
				s.pos++
				break // empty: a whole value
			}
			open.push(c == '{')
			if c == '{' {
				if err := s.key(); err != nil {
					return 0, 0, err
				}
			}
			s.skipSpace()
			continue
		case c == '"':
			if _, err := s.stringEnd(); err != nil {
				return 0, 0, err
			}
		case c == 't':
			err = s.literal("true")
		case c == 'f':
			err = s.literal("false")
		case c == 'n':
			err = s.literal("null")
		case c == '-' || (c >= '0' && c <= '9'):
			err = s.number()
		default:
			return 0, 0, s.errf("unexpected character")
		}
		if err != nil {
			return 0, 0, err
		}
		// A value ended: close what it ends, or go on to the next member.
		for {
			if open.n == 0 {
				return start, s.pos, nil
			}
			s.skipSpace()
			object := open.topIsObject()
			if s.pos >= len(s.b) {
				if object {
					return 0, 0, s.errf("unexpected end of object")
				}
				return 0, 0, s.errf("unexpected end of array")
			}
			c := s.b[s.pos]
			if c == ',' {
				s.pos++
				if object {
					if err := s.key(); err != nil {
						return 0, 0, err
					}
				}
				break
			}
			if object && c == '}' || !object && c == ']' {
				s.pos++
				open.n--
				continue
			}
			if object {
				return 0, 0, s.errf("expected ',' or '}'")
			}
			return 0, 0, s.errf("expected ',' or ']'")
		}
		s.skipSpace()
	}
}

// key reads an object's key and its colon; pos is then at the value.
func (s *scanner) key() *DecodeError {
	s.skipSpace()
	if _, err := s.stringEnd(); err != nil {
		return err
	}
	s.skipSpace()
	if s.pos >= len(s.b) || s.b[s.pos] != ':' {
		return s.errf("expected ':'")
	}
	s.pos++
	return nil
}

func (s *scanner) literal(lit string) *DecodeError {
	if len(s.b)-s.pos < len(lit) || string(s.b[s.pos:s.pos+len(lit)]) != lit {
		return s.errf("invalid literal")
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) number() *DecodeError {
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
		return s.errf("invalid number")
	}
	if s.pos < len(s.b) && s.b[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return s.errf("invalid number")
		}
	}
	if s.pos < len(s.b) && (s.b[s.pos] == 'e' || s.b[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.b) && (s.b[s.pos] == '+' || s.b[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return s.errf("invalid number")
		}
	}
	return nil
}

// stringEnd validates the JSON string at pos and moves past it. It
// reports whether the string has escapes (its body is not its value).
func (s *scanner) stringEnd() (escaped bool, err *DecodeError) {
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return false, s.errf("expected string")
	}
	s.pos++
	for {
		if s.pos >= len(s.b) {
			return false, s.errf("unterminated string")
		}
		c := s.b[s.pos]
		switch {
		case c == '"':
			s.pos++
			return escaped, nil
		case c == '\\':
			escaped = true
			s.pos++
			if s.pos >= len(s.b) {
				return false, s.errf("unterminated string")
			}
			switch s.b[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				if len(s.b)-s.pos < 5 || !isHex4(s.b[s.pos+1:s.pos+5]) {
					return false, s.errf("invalid unicode escape")
				}
				s.pos += 5
			default:
				return false, s.errf("invalid escape")
			}
		case c < 0x20:
			return false, s.errf("control character in string")
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.b[s.pos:])
			if r == utf8.RuneError && size == 1 {
				return false, s.errf("invalid UTF-8")
			}
			s.pos += size
		}
	}
}

// unquote is the small codec's way from a validated string literal (quotes
// included) to its value.
func unquote(lit []byte) string {
	body := lit[1 : len(lit)-1]
	for _, c := range body {
		if c == '\\' {
			return unescape(body)
		}
	}
	return string(body)
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
