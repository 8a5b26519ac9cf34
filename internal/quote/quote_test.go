package quote

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// ASCII reads as strconv.QuoteToASCII for every byte, a few strings of
// many scripts, invalid UTF-8, and random bytes.
func TestASCIIIsQuoteToASCII(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := ASCII(s), strconv.QuoteToASCII(s); got != want {
			t.Fatalf("ASCII(%q) = %s, want %s", s, got, want)
		}
	}
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("a" + string([]byte{byte(c)}) + "b")
	}
	for _, s := range []string{"", "wss://h/p?a=1&b=<2>", `q"\`, "héllo, 世界 🙂", "\xff\xfe", "é\xc3",
		"a\u200bb", "\u202eevil", "\U0010ffff", "\ufffd", "\xed\xa0\x80"} {
		check(s)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		check(string(b))
		rs := make([]rune, r.IntN(8))
		for i := range rs {
			rs[i] = rune(r.IntN(0x110000))
		}
		check(string(rs))
	}
}
