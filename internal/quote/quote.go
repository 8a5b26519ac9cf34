// Package quote quotes text for error messages as strconv.QuoteToASCII
// does, without strconv's quoting code (it and its tables of
// printable runes were 4 KB of the browser client's wasm, brotli). Every
// rune beyond ASCII is escaped, so nothing invisible or reordering (U+200B,
// U+202E) reaches a message raw, whoever sent the text.
package quote

import "unicode/utf8"

// ASCII returns s double-quoted with Go escapes, as strconv.QuoteToASCII:
// \a \b \f \n \r \t \v \\ \", \xNN for other control bytes and invalid
// UTF-8, \uNNNN or \UNNNNNNNN for runes beyond ASCII.
func ASCII(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
			case r < 0x10000:
				b = append(b, '\\', 'u')
				for sh := 12; sh >= 0; sh -= 4 {
					b = append(b, hex[r>>uint(sh)&0xf])
				}
			default:
				b = append(b, '\\', 'U')
				for sh := 28; sh >= 0; sh -= 4 {
					b = append(b, hex[r>>uint(sh)&0xf])
				}
			}
			continue
		}
		i++
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\v':
			b = append(b, '\\', 'v')
		default:
			if c < ' ' || c == 0x7f {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return string(append(b, '"'))
}
