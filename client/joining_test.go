package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// A topic the app adds while READY does not take READY away while its
// subscribe is on the way (a request made in that round trip is sent, not
// refused NotReady); after a reconnect READY waits for it like any other,
// and an unsubscribed from the server makes it count again.
func TestATopicAddedWhileReadyDoesNotDropReady(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.ready()
	n := len(h.states)
	h.c.Subscribe("chat", 0, false, h.now)
	h.drain()
	for _, st := range h.states[n:] {
		if !st.Ready {
			t.Fatalf("READY dropped when the app added a topic: %+v", st)
		}
	}
	id := h.request()
	if e, ok := h.settled[id]; ok {
		t.Fatalf("a request in the subscribe's round trip settled at once: %+v", e)
	}
	if h.count(protocol.TypeSubscribe, s) != 2 {
		t.Fatalf("subscribes sent: %d", h.count(protocol.TypeSubscribe, s))
	}
	h.frame(s, protocol.Message{Type: protocol.TypeSubscribed, Topic: "chat"})

	// The service drops it: READY waits for it again.
	h.frame(s, protocol.Message{Type: protocol.TypeUnsubscribed, Topic: "chat", Reason: "service_unavailable"})
	if h.state().Ready {
		t.Fatal("still READY after the server dropped a wanted topic")
	}
	h.frame(s, protocol.Message{Type: protocol.TypeSubscribed, Topic: "chat"})
	if !h.state().Ready {
		t.Fatalf("not READY once the topic is back: %+v", h.state())
	}

	// After a reconnect both topics hold READY until answered.
	h.closed(s)
	h.advanceToDial()
	s2 := h.last()
	h.open(s2)
	h.ping(s2, 1000)
	h.subscribed(s2)
	if h.state().Ready {
		t.Fatal("READY after a reconnect before every topic was answered")
	}
	h.frame(s2, protocol.Message{Type: protocol.TypeSubscribed, Topic: "chat"})
	if !h.state().Ready {
		t.Fatalf("not READY with both topics answered: %+v", h.state())
	}
	_ = time.Second
}
