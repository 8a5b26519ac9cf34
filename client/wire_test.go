package client

import (
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Every request carries its own timeout as timeoutMs (stage 1 and up), so
// the server's handler context expires when the client stops waiting.
func TestRequestsCarryTheirOwnTimeoutAsTimeoutMs(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	h.request()
	h.c.RequestWithTimeout("slow", nil, 250*time.Millisecond, h.now)
	h.c.RequestWithTimeout("fine", nil, 1500*time.Microsecond, h.now) // rounded up to 2 ms
	h.c.RequestWithTimeout("long", nil, 2*time.Hour, h.now)           // the protocol's bound: 1 h
	h.c.Publish("chat", []byte(`1`), 0, h.now)
	h.drain()
	var got []int64
	for _, m := range h.sockets[s].sent {
		if m.Type == protocol.TypeRequest || m.Type == protocol.TypePublish {
			got = append(got, m.TimeoutMs)
		}
	}
	want := []int64{5000, 250, 2, protocol.MaxTimeoutMs, 0}
	if len(got) != len(want) {
		t.Fatalf("timeouts sent %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("timeouts sent %v, want %v (a publish has none)", got, want)
		}
	}

	// Stage 0 has no timeout: it sends none.
	h = newHarness(t, 0)
	h.start()
	h.open(1)
	h.request()
	if m := h.lastSent(1); m.Type != protocol.TypeRequest || m.TimeoutMs != 0 {
		t.Fatalf("stage 0 sent %+v", m)
	}
}

// A rate_limited error's retryAfterMs reaches the app in the ServerError.
func TestARateLimitedErrorCarriesItsRetryAfter(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	id := h.request()
	h.frame(s, protocol.Message{Type: protocol.TypeResponse, ID: id,
		Error: &protocol.ErrorBody{Code: protocol.ErrRateLimited, Message: "slow down", RetryAfterMs: 750}})
	var se *ServerError
	if err := h.settled[id].Err; !errors.As(err, &se) || se.Code != protocol.ErrRateLimited || se.RetryAfter != 750*time.Millisecond {
		t.Fatalf("settled with %v", err)
	}
}

// Presence is asked for per subscribe and delivered only for topics that
// asked; a reconnect asks again.
func TestPresenceIsAskedPerTopicAndDeliveredOnlyWhereAsked(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	if !h.c.SubscribeWith("room", SubscribeOptions{Presence: true}, h.now) || !h.c.SubscribeWith("news", SubscribeOptions{}, h.now) {
		t.Fatal("subscribe refused")
	}
	h.drain()
	subs := map[string]bool{}
	for _, m := range h.sockets[s].sent {
		if m.Type == protocol.TypeSubscribe {
			subs[m.Topic] = m.Presence
		}
	}
	if !subs["room"] || subs["news"] || subs["feed"] {
		t.Fatalf("presence asked for %v, want room only", subs)
	}
	h.frame(s, protocol.Message{Type: protocol.TypePresence, Topic: "room", Event: protocol.PresenceJoin, User: "bob"})
	h.frame(s, protocol.Message{Type: protocol.TypePresence, Topic: "news", Event: protocol.PresenceJoin, User: "bob"})
	h.frame(s, protocol.Message{Type: protocol.TypePresence, Topic: "other", Event: protocol.PresenceLeave, User: "eve"})
	if len(h.presence) != 1 || h.presence[0] != (PresenceEvent{Topic: "room", Event: protocol.PresenceJoin, User: "bob"}) {
		t.Fatalf("presence delivered %+v, want bob joining room only", h.presence)
	}
	if h.c.Stats().BadFrames != 0 {
		t.Fatal("a presence frame counted as bad")
	}

	// Turning presence off for a subscribed topic subscribes again without it.
	before := h.count(protocol.TypeSubscribe, s)
	h.c.SubscribeWith("room", SubscribeOptions{}, h.now)
	h.drain()
	if h.count(protocol.TypeSubscribe, s) != before+1 || h.lastSent(s).Presence {
		t.Fatalf("no subscribe without presence: %+v", h.lastSent(s))
	}
	h.frame(s, protocol.Message{Type: protocol.TypePresence, Topic: "room", Event: protocol.PresenceLeave, User: "bob"})
	if len(h.presence) != 1 {
		t.Fatal("presence delivered after it was turned off")
	}

	// On again, and a reconnect: the new socket's subscribe asks again.
	h.c.SubscribeWith("room", SubscribeOptions{Presence: true}, h.now)
	h.drain()
	h.closed(s)
	h.advanceToDial()
	s2 := h.last()
	h.open(s2)
	for _, m := range h.sockets[s2].sent {
		if m.Type == protocol.TypeSubscribe && m.Topic == "room" && !m.Presence {
			t.Fatalf("the resubscribe lost presence: %+v", m)
		}
	}
}

// A welcome frame is the server's, not a bad frame.
func TestAWelcomeIsCounted(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	h.open(1)
	h.frame(1, protocol.Message{Type: protocol.TypeWelcome, Session: "q1Zb3kPm9tV0xY2zA4cD6e", User: "alice"})
	if st := h.c.Stats(); st.Welcomes != 1 || st.BadFrames != 0 {
		t.Fatalf("stats %+v", st)
	}
}
