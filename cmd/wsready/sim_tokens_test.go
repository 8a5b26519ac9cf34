//go:build !js

package main

import (
	"strings"
	"testing"
)

// wsready sim -tokens prints the four rows, a fleet issued its tokens
// together paying one handshake per client per life without refresh and
// none with it; a bad token life is refused.
func TestSimTokensTable(t *testing.T) {
	var out strings.Builder
	if err := runSim([]string{"-tokens", "-clients", "1000", "-token-life", "1m", "-horizon", "5m"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 1000 | 1m0s | 0s | off | 4000 | 1000 |", "| 1000 | 1m0s | 0s | on | 0 | 0 |", "| 1000 | 1m0s | 1m0s | off | 4000 |", "| 1000 | 1m0s | 1m0s | on | 0 | 0 |"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("no row %q in:\n%s", want, out.String())
		}
	}
	if err := runSim([]string{"-tokens", "-token-life", "0s"}, &out); err == nil || !strings.Contains(err.Error(), "token life") {
		t.Fatalf("a zero token life: %v", err)
	}
}
