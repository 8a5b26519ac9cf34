package protocol

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestQuote: Quote reads as strconv.Quote for every string of ASCII and
// invalid UTF-8 bytes and for printable runes beyond ASCII; it keeps a
// rune strconv.Quote would escape as not printable.
func TestQuote(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := Quote(s), strconv.Quote(s); got != want {
			t.Fatalf("Quote(%q) = %s, want %s", s, got, want)
		}
	}
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("a" + string([]byte{byte(c)}) + "b")
	}
	for _, s := range []string{"", "wss://h/p?a=1&b=<2>", `q"\`, "héllo, 世界 🙂", "\xff\xfe", "é\xc3"} {
		check(s)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		s := string(b)
		printable := true
		for _, x := range s {
			if x >= utf8.RuneSelf && x != utf8.RuneError && !unicode.IsPrint(x) {
				printable = false
			}
		}
		if printable {
			check(s)
		}
	}
	if got := Quote("a\u200bb"); got != "\"a\u200bb\"" {
		t.Errorf("Quote keeps U+200B: got %s", got)
	}
}
