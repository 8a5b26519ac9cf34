package client

import (
	"testing"
	"time"
)

// Terminal means terminal in every state: a terminal close that
// arrives while the page is hidden or the browser offline ends the session
// there and then; it is not recorded as a wait, and the next Visible or
// Online dials nothing.
func TestATerminalCloseWhileHiddenOrOfflineEndsTheSession(t *testing.T) {
	type setup struct {
		name  string
		tweak func(*Config)
		// lead brings the client to where the next failure is terminal and
		// returns the socket that failure closes.
		lead func(h *harness) SocketID
		code int
		want Terminal
	}
	ready := func(h *harness) SocketID { return h.ready() }
	cases := []setup{
		{"ended 1000", nil, ready, 1000, Ended},
		{"forbidden 4003", nil, ready, 4003, Forbidden},
		{"forbidden 1008", nil, ready, 1008, Forbidden},
		{"refresh exhausted", withAuth, func(h *harness) SocketID {
			h.c.TokenReady("t", h.now)
			h.drain()
			s := h.ready()
			for range 2 { // two refreshes that never get back to READY
				h.closedWith(s, 4001, "")
				h.c.TokenReady("t", h.now)
				h.drain()
				s = h.last()
				h.open(s)
			}
			return s
		}, 4001, RefreshExhausted},
		{"gave_up by budget", func(c *Config) { c.Budget = 2 }, func(h *harness) SocketID {
			s := h.ready()
			for range 2 { // the budget's two attempts, each opening and failing
				h.closed(s)
				h.advanceToDial()
				s = h.last()
				h.open(s)
			}
			return s
		}, 1006, GaveUp},
		{"gave_up by window", func(c *Config) { c.Window = 5 * time.Second }, func(h *harness) SocketID {
			s := h.ready()
			h.closed(s)
			h.advanceToDial()
			s = h.ready()
			h.keepAlive(s, 4500*time.Millisecond) // READY when the window runs out, short of the cooldown
			return s
		}, 1006, GaveUp},
	}
	for _, stage := range []int{6, 7} {
		for _, wait := range []string{"hidden", "offline"} {
			for _, tc := range cases {
				t.Run("stage "+itoa64(int64(stage))+"/"+wait+"/"+tc.name, func(t *testing.T) {
					var tweaks []func(*Config)
					if tc.tweak != nil {
						tweaks = append(tweaks, tc.tweak)
					}
					h := newHarness(t, stage, tweaks...)
					h.start()
					s := tc.lead(h)
					if st := h.state(); st.Ended != NotEnded {
						t.Fatalf("ended before the close: %+v", st)
					}
					if wait == "hidden" {
						h.c.Hidden(h.now)
					} else {
						h.c.Offline(h.now)
					}
					h.drain()
					dials, tokens := len(h.dials), len(h.tokens)
					h.closedWith(s, tc.code, "")
					if st := h.state(); st.Ended != tc.want {
						t.Fatalf("state %+v, want ended %s", st, tc.want)
					}
					if r := lastRecord(t, h); r.Outcome != Outcome(tc.want) {
						t.Fatalf("record %+v, want outcome %s", r, tc.want)
					}
					h.c.Visible(h.now)
					h.c.Online(h.now)
					h.drain()
					h.advance(10 * time.Minute)
					if len(h.dials) != dials || len(h.tokens) != tokens || !h.timer.IsZero() {
						t.Fatalf("dials %v tokens %v timer %v after visible and online", h.dials, h.tokens, h.timer)
					}
					if st := h.state(); st.Ended != tc.want {
						t.Fatalf("state %+v after visible and online", st)
					}
				})
			}
		}
	}
}
