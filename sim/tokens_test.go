package sim

import (
	"testing"
	"time"
)

// Without refresh a fleet pays one handshake per client per token life
// (a fleet issued tokens together all in one second); with it none, and
// its refreshes spread over 15% of the life: no second holds more than
// about 1/9 of the fleet for a 60 s token.
func TestTokenExpiries(t *testing.T) {
	c := TokenConfig{Clients: 10000, Life: time.Minute, Horizon: 5 * time.Minute, Seed: 1}
	off, err := RunTokens(c, false)
	if err != nil {
		t.Fatal(err)
	}
	if off.Handshakes != 4*c.Clients || off.PeakHandshakes != c.Clients || off.Refreshes != 0 {
		t.Fatalf("refresh off, issued together: %+v; want %d handshakes, all %d in one second", off, 4*c.Clients, c.Clients)
	}
	on, err := RunTokens(c, true)
	if err != nil {
		t.Fatal(err)
	}
	if on.Handshakes != 0 || on.Refreshes < 4*c.Clients || on.PeakRefreshes > c.Clients*2/9 {
		t.Fatalf("refresh on, issued together: %+v; want 0 handshakes, at least %d refreshes, none of the seconds over 2/9 of the fleet", on, 4*c.Clients)
	}
	c.Spread = c.Life
	steady, _ := RunTokens(c, false)
	if steady.PeakHandshakes > c.Clients/60*2 {
		t.Fatalf("refresh off, issued over a life: peak %d/s, want about %d", steady.PeakHandshakes, c.Clients/60)
	}
	if _, err := RunTokens(TokenConfig{Clients: 1, Life: 0, Horizon: time.Second}, true); err == nil {
		t.Fatal("a zero token life was taken")
	}
}
