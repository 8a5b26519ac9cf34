package client

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wsready/wsready/protocol"
)

func noTopic(c *Config) { c.Topic = "" }

func (h *harness) welcome(s SocketID) {
	h.frame(s, protocol.Message{Type: protocol.TypeWelcome, Session: "q1Zb3kPm9tV0xY2zA4cD6e"})
}

func (h *harness) subscribedTo(s SocketID, topic string) {
	h.frame(s, protocol.Message{Type: protocol.TypeSubscribed, Topic: topic})
}

func (h *harness) topicError(s SocketID, topic, code string) {
	h.frame(s, protocol.Message{Type: protocol.TypeError, Topic: topic, Error: &protocol.ErrorBody{Code: code, Message: "no"}})
}

// The library's default is no topic: the client subscribes to nothing.
func TestTheDefaultConfigWantsNoTopic(t *testing.T) {
	cfg := Config{Rand: func() float64 { return 0.5 }}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Config().Topic != "" || len(c.Topics()) != 0 {
		t.Fatalf("topic %q, topics %+v", c.Config().Topic, c.Topics())
	}
	cfg.Topic = "not a topic"
	if _, err := New(cfg); err == nil {
		t.Fatal("an invalid Config.Topic was accepted")
	}
}

// A client that asked for nothing is READY after open, the first ping and
// the server's welcome, in either order, at every stage with a service
// layer; it sends no subscribe.
func TestWithNoTopicTheWelcomeIsTheService(t *testing.T) {
	for stage := 4; stage <= maxStage; stage++ {
		for _, welcomeFirst := range []bool{false, true} {
			h := newHarness(t, stage, noTopic)
			h.start()
			s := h.last()
			h.open(s)
			if welcomeFirst {
				h.welcome(s)
				if st := h.state(); st.Service != Up || st.Ready {
					t.Fatalf("stage %d, welcome before the ping: %+v", stage, st)
				}
				h.ping(s, 1000)
			} else {
				h.ping(s, 1000)
				if st := h.state(); st.Service != Pending || st.Ready {
					t.Fatalf("stage %d before the welcome: %+v", stage, st)
				}
				h.welcome(s)
			}
			if !h.state().Ready {
				t.Fatalf("stage %d: not READY after open, ping and welcome: %+v", stage, h.state())
			}
			if n := h.count(protocol.TypeSubscribe, s); n != 0 {
				t.Fatalf("stage %d sent %d subscribes with no topic wanted", stage, n)
			}
			// A new socket waits for its own welcome.
			h.closed(s)
			h.advanceToDial()
			s2 := h.last()
			h.open(s2)
			h.ping(s2, 1000)
			if h.state().Service != Pending {
				t.Fatalf("stage %d: the last socket's welcome counted for the next: %+v", stage, h.state())
			}
		}
	}
}

// Without a welcome (a server that sends none) a client that asked for
// nothing stays Pending, and the socket is never torn down for it.
func TestWithNoTopicAndNoWelcomeTheSocketStays(t *testing.T) {
	h := newHarness(t, 7, noTopic)
	h.start()
	s := h.last()
	h.open(s)
	h.keepAlive(s, time.Minute)
	if st := h.state(); st.Service != Pending || st.Transport != Up || st.Protocol != Up || h.sockets[s].closed || len(h.dials) != 1 {
		t.Fatalf("after a minute of pings and no welcome: %+v, closed %v, dials %d", st, h.sockets[s].closed, len(h.dials))
	}
	h.welcome(s)
	if !h.state().Ready {
		t.Fatal("the late welcome did not make it READY")
	}
}

// Before stage 4 there is no service layer: a welcome changes nothing.
func TestBeforeStage4TheWelcomeIsOnlyCounted(t *testing.T) {
	h := newHarness(t, 3, noTopic)
	h.start()
	h.open(1)
	h.ping(1, 1000)
	if st := h.state(); !st.Ready || st.Service != Off {
		t.Fatalf("stage 3 with no topic: %+v", st)
	}
	h.welcome(1)
	if st := h.state(); !st.Ready || st.Service != Off || h.c.Stats().Welcomes != 1 {
		t.Fatalf("after the welcome: %+v", st)
	}
}

// With topics, the service is Up when every one is acknowledged; a topic
// the app adds while READY makes it Pending until its own acknowledgement;
// losing any one (unsubscribed) makes it Pending and it is asked for
// again at once; the subscribe deadline asks again for every topic still
// unanswered, and only those.
func TestEveryWantedTopicIsTheService(t *testing.T) {
	h := newHarness(t, 7, noTopic)
	h.c.Subscribe("a", 0, false, h.now)
	h.c.Subscribe("b", 0, false, h.now)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 1000)
	h.welcome(s) // topics are wanted: the welcome alone is not enough
	h.subscribedTo(s, "a")
	if st := h.state(); st.Service != Pending {
		t.Fatalf("with b unanswered: %+v", st)
	}
	h.keepAlive(s, 2*time.Second) // the subscribe deadline: b again, not a
	if h.count(protocol.TypeSubscribe, s) != 3 || h.lastSubscribe(s, "b").Topic != "b" {
		t.Fatalf("after the subscribe timeout: %v", h.sockets[s].sent)
	}
	h.subscribedTo(s, "b")
	if !h.state().Ready {
		t.Fatalf("every topic acknowledged: %+v", h.state())
	}
	h.c.Subscribe("c", 0, false, h.now)
	h.drain()
	if !h.state().Ready {
		t.Fatal("a topic added while READY took READY away before its answer")
	}
	h.subscribedTo(s, "c")
	if !h.state().Ready {
		t.Fatal("not READY once c was acknowledged")
	}
	n := h.count(protocol.TypeSubscribe, s)
	h.frame(s, protocol.Message{Type: protocol.TypeUnsubscribed, Topic: "b", Reason: "service_unavailable"})
	if st := h.state(); st.Service != Pending || st.Transport != Up || st.Protocol != Up || h.count(protocol.TypeSubscribe, s) != n+1 {
		t.Fatalf("after b was dropped: %+v, subscribes %d -> %d", st, n, h.count(protocol.TypeSubscribe, s))
	}
	h.keepAlive(s, 10*time.Second)
	if h.sockets[s].closed || len(h.dials) != 1 {
		t.Fatal("the socket was torn down for the service")
	}
	// Leaving the one topic that is not served brings the service back.
	h.c.Unsubscribe("b", h.now)
	h.drain()
	if !h.state().Ready {
		t.Fatalf("after leaving b: %+v", h.state())
	}
}

// A topic the app may not have (forbidden, invalid_topic,
// too_many_subscriptions, or a code of the app's own, which a server's
// Authorize hook may refuse with) holds the service layer Down: READY
// means the server took every topic the app asked for. It is not asked
// for again on this socket (no hammering the server for the same
// answer), the socket stays, and READY comes once the app unsubscribes
// it; the next socket asks again. The server's transient errors
// (unknown_topic, unavailable, ...) keep the service Pending and are
// retried at the subscribe deadline.
func TestARefusedTopicHoldsReadinessUntilDropped(t *testing.T) {
	for _, code := range []string{protocol.ErrForbidden, protocol.ErrInvalidTopic, protocol.ErrTooManySubs, "not_a_member"} {
		h := newHarness(t, 7)
		h.c.Subscribe("secret", 0, false, h.now)
		h.start()
		s := h.openAt(1, 0, "A")
		h.topicError(s, "secret", code)
		if st := h.state(); st.Ready || st.Service != Down || len(h.topicErrs) != 1 || h.topicErrs[0] != "secret:"+code {
			t.Fatalf("%s: state %+v, topic errors %v; want the service down, not READY", code, st, h.topicErrs)
		}
		n := h.count(protocol.TypeSubscribe, s)
		h.keepAlive(s, 10*time.Second)
		if h.count(protocol.TypeSubscribe, s) != n {
			t.Fatalf("%s: a refused topic was asked for again on the same socket", code)
		}
		if st := h.state(); st.Ready || st.Transport != Up || h.sockets[s].closed {
			t.Fatalf("%s: 10 s later: %+v; want the socket kept, not READY", code, st)
		}
		h.closed(s)
		h.advanceToDial()
		s2 := h.openAt(2, 1, "A")
		if h.lastSubscribe(s2, "secret").Topic != "secret" || h.state().Ready {
			t.Fatalf("%s: the next socket did not ask again, or was READY before its answer: %+v", code, h.state())
		}
		h.topicError(s2, "secret", code)
		if h.state().Ready {
			t.Fatalf("%s: READY with the refusal on the second socket", code)
		}
		h.c.Unsubscribe("secret", h.now)
		h.drain()
		if st := h.state(); !st.Ready || st.Service != Up {
			t.Fatalf("%s: after the app gave the topic up: %+v", code, st)
		}
		if h.count(protocol.TypeUnsubscribe, s2) != 1 {
			t.Fatalf("%s: no unsubscribe sent", code)
		}
	}
	// A refusal of a topic the app adds while READY holds it too; an
	// answer on the next socket that takes it is READY.
	h := newHarness(t, 7)
	h.start()
	s := h.openAt(1, 0, "A")
	if !h.state().Ready {
		t.Fatalf("not READY: %+v", h.state())
	}
	h.c.Subscribe("secret", 0, false, h.now)
	h.drain()
	if !h.state().Ready {
		t.Fatal("a topic joining took READY away before its answer")
	}
	h.topicError(s, "secret", protocol.ErrForbidden)
	if h.state().Ready {
		t.Fatal("READY with a topic joined while READY refused")
	}
	h.closed(s)
	h.advanceToDial()
	s2 := h.openAt(2, 1, "A")
	h.subscribedTo(s2, "secret") // allowed now
	if !h.state().Ready {
		t.Fatalf("the next socket took it: %+v", h.state())
	}
	for _, code := range []string{protocol.ErrUnknownTopic, protocol.ErrUnavailable, protocol.ErrTooManyTopics, protocol.ErrInternal, protocol.ErrTimeout, protocol.ErrRateLimited} {
		h := newHarness(t, 7)
		h.c.Subscribe("later", 0, false, h.now)
		h.start()
		s := h.openAt(1, 0, "A")
		h.topicError(s, "later", code)
		if h.state().Ready {
			t.Fatalf("%s made the service Up", code)
		}
		n := h.count(protocol.TypeSubscribe, s)
		h.keepAlive(s, 2*time.Second)
		if h.count(protocol.TypeSubscribe, s) != n+1 {
			t.Fatalf("%s was not retried at the subscribe deadline", code)
		}
	}
}

// Stats.Updates counts every topic's updates; LastSeq follows the first
// topic: Config.Topic's, or with none the first one the app subscribed to.
func TestStatsCountEveryTopicAndFollowTheFirst(t *testing.T) {
	h := newHarness(t, 7, noTopic)
	h.c.Subscribe("first", 0, false, h.now)
	h.c.Subscribe("second", 0, false, h.now)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 1000)
	h.subscribedAt(s, "first", 1, 0, "F")
	h.subscribedAt(s, "second", 1, 0, "S")
	h.update(s, "first", 1)
	h.update(s, "second", 1)
	h.update(s, "second", 2)
	h.update(s, "second", 3)
	h.update(s, "first", 2)
	if st := h.c.Stats(); st.Updates != 5 || st.LastSeq != 2 {
		t.Fatalf("updates %d, last seq %d; want 5 and first's 2", st.Updates, st.LastSeq)
	}
}

// The state names the refused topic with the server's code and message
// (cut to MaxTopicErrorMessage bytes at a rune boundary) and counts the
// refusals; the first named topic is the one named, and giving it up
// names the next.
func TestTheStateNamesARefusedTopic(t *testing.T) {
	h := newHarness(t, 7, noTopic)
	h.c.Subscribe("a", 0, false, h.now)
	h.c.Subscribe("b", 0, false, h.now)
	h.start()
	s := h.last()
	h.open(s)
	h.ping(s, 1000)
	h.welcome(s)
	long := strings.Repeat("é", MaxTopicErrorMessage) // 2 bytes a rune
	h.frame(s, protocol.Message{Type: protocol.TypeError, Topic: "b", Error: &protocol.ErrorBody{Code: "not_a_member", Message: "b is for members"}})
	h.frame(s, protocol.Message{Type: protocol.TypeError, Topic: "a", Error: &protocol.ErrorBody{Code: protocol.ErrForbidden, Message: long}})
	st := h.state()
	if st.Refusals != 2 || st.Refused.Topic != "a" || st.Refused.Code != protocol.ErrForbidden || st.Ready {
		t.Fatalf("state %+v; want a (forbidden) named, 2 refusals", st)
	}
	if m := st.Refused.Message; len(m) != MaxTopicErrorMessage || !utf8.ValidString(m) {
		t.Fatalf("message of %d bytes (valid UTF-8: %v); want it cut to %d", len(m), utf8.ValidString(m), MaxTopicErrorMessage)
	}
	h.c.Unsubscribe("a", h.now)
	h.drain()
	st = h.state()
	if st.Refusals != 1 || st.Refused != (TopicError{Topic: "b", Code: "not_a_member", Message: "b is for members"}) || st.Ready {
		t.Fatalf("after giving a up: %+v; want b named", st)
	}
	h.c.Unsubscribe("b", h.now)
	h.drain()
	if st = h.state(); st.Refusals != 0 || st.Refused != (TopicError{}) || !st.Ready {
		t.Fatalf("after giving both up: %+v", st)
	}
}

// A connection held from READY only by a refused topic is working: the
// reconnect window running out does not end the session or close it.
func TestARefusalDoesNotSpendTheWindow(t *testing.T) {
	h := newHarness(t, 7, func(c *Config) { c.Window = 10 * time.Second })
	h.c.Subscribe("secret", 0, false, h.now)
	h.start()
	h.closed(h.last()) // a failure starts the run and its window
	h.advanceToDial()
	s := h.openAt(2, 0, "A")
	h.topicError(s, "secret", protocol.ErrForbidden)
	h.keepAlive(s, 15*time.Second)
	if st := h.state(); st.Ended != NotEnded || st.Transport != Up || h.sockets[s].closed {
		t.Fatalf("the window ran out with a refused topic: %+v", st)
	}
}
