package client

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

func (h *harness) update(s SocketID, topic string, seq int64) {
	h.frame(s, protocol.Message{Type: protocol.TypeUpdate, Topic: topic, Seq: seq, Data: []byte(`{}`)})
}

func (h *harness) subscribedAt(s SocketID, topic string, from, head int64, stream string) {
	h.frame(s, protocol.Message{Type: protocol.TypeSubscribed, Topic: topic, From: from, Head: head, Stream: stream})
}

// lastSubscribe returns the last subscribe frame for topic on socket s.
func (h *harness) lastSubscribe(s SocketID, topic string) protocol.Message {
	h.t.Helper()
	for i := len(h.sockets[s].sent) - 1; i >= 0; i-- {
		if m := h.sockets[s].sent[i]; m.Type == protocol.TypeSubscribe && m.Topic == topic {
			return m
		}
	}
	h.t.Fatalf("no subscribe to %s on socket %d: %v", topic, s, h.sentTypes(s))
	return protocol.Message{}
}

func (h *harness) seqs(topic string) []int64 {
	var out []int64
	for _, u := range h.updates {
		if u.Topic == topic {
			out = append(out, u.Seq)
		}
	}
	return out
}

// readyAt brings the current socket to READY with a subscribed that says
// where the feed stands.
func (h *harness) readyAt(from, head int64, stream string) SocketID {
	h.t.Helper()
	s := h.openAt(from, head, stream)
	if !h.state().Ready {
		h.t.Fatalf("not ready: %+v", h.state())
	}
	return s
}

// openAt opens the current socket, pings, and acknowledges the feed with
// a subscribed that says where it stands; other topics wait.
func (h *harness) openAt(from, head int64, stream string) SocketID {
	h.t.Helper()
	s := h.last()
	h.open(s)
	h.ping(s, 1000)
	h.subscribedAt(s, "feed", from, head, stream)
	return s
}

func TestResumeSubscribesWithTheCursorAndDropsDuplicates(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.last()
	h.open(s)
	if m := h.lastSubscribe(s, "feed"); m.HasSince {
		t.Fatalf("the first subscribe has no cursor to send, sent since=%d", m.Since)
	}
	h.ping(s, 1000)
	h.subscribedAt(s, "feed", 11, 10, "A")
	h.update(s, "feed", 11)
	h.update(s, "feed", 12)
	h.closed(s)
	h.advanceToDial()
	s2 := h.last()
	h.open(s2)
	m := h.lastSubscribe(s2, "feed")
	if !m.HasSince || m.Since != 12 || m.Stream != "A" {
		t.Fatalf("resubscribe = %+v, want since 12 in stream A", m)
	}
	h.ping(s2, 1000)
	h.subscribedAt(s2, "feed", 13, 15, "A")
	h.update(s2, "feed", 12) // a duplicate at the seam
	for seq := int64(13); seq <= 16; seq++ {
		h.update(s2, "feed", seq)
	}
	if got, want := h.seqs("feed"), []int64{11, 12, 13, 14, 15, 16}; !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	st := h.c.Stats()
	if st.DuplicatesDropped != 1 || st.Duplicates != 0 || st.Replayed != 3 || st.SeqGaps != 0 || st.MissedUpdates != 0 || len(h.lost) != 0 {
		t.Fatalf("stats %+v lost %v", st, h.lost)
	}
	if c := h.c.Cursors(); len(c) != 1 || c[0] != (Cursor{Topic: "feed", Stream: "A", Seq: 16}) {
		t.Fatalf("cursors %+v", c)
	}
}

func TestResumePastRetentionIsOneContinuityLostWithTheRange(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.readyAt(1, 0, "A")
	h.update(s, "feed", 1)
	h.update(s, "feed", 2)
	h.closed(s)
	h.advanceToDial()
	s2 := h.readyAt(40, 45, "A") // the server kept 40..45 only
	for seq := int64(40); seq <= 46; seq++ {
		h.update(s2, "feed", seq)
	}
	if want := []ContinuityLost{{Topic: "feed", From: 3, To: 39}}; !reflect.DeepEqual(h.lost, want) {
		t.Fatalf("lost %+v, want %+v", h.lost, want)
	}
	st := h.c.Stats()
	if st.ContinuityLost != 1 || st.MissedUpdates != 37 || st.SeqGaps != 1 || st.LastSeq != 46 {
		t.Fatalf("stats %+v", st)
	}
	if ts := h.c.Topics()[0]; ts.Lost != 37 || ts.Delivered != 9 || ts.Replayed != 6 {
		t.Fatalf("topic stats %+v", ts)
	}
}

func TestResumeInANewStreamIsAResetContinuityLost(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.readyAt(8, 7, "A")
	h.update(s, "feed", 8)
	h.closed(s)
	h.advanceToDial()
	s2 := h.readyAt(1, 3, "B") // the server restarted without its history
	h.update(s2, "feed", 1)
	h.update(s2, "feed", 2)
	if want := []ContinuityLost{{Topic: "feed", From: 9, Reset: true}}; !reflect.DeepEqual(h.lost, want) {
		t.Fatalf("lost %+v, want %+v", h.lost, want)
	}
	if got := h.seqs("feed"); !reflect.DeepEqual(got, []int64{8, 1, 2}) {
		t.Fatalf("delivered %v: the new stream's updates must not be taken for duplicates", got)
	}
}

func TestBeforeStage7AReconnectLosesAndCountsWhatItMissed(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	s := h.readyAt(1, 0, "A")
	h.update(s, "feed", 1)
	h.update(s, "feed", 2)
	h.closed(s)
	h.advanceToDial()
	s2 := h.readyAt(9, 8, "A")
	if m := h.lastSubscribe(s2, "feed"); m.HasSince {
		t.Fatalf("stage 6 resubscribed with since %d", m.Since)
	}
	h.update(s2, "feed", 9)
	h.update(s2, "feed", 9) // delivered twice: no cursor to drop it
	st := h.c.Stats()
	if st.SeqGaps != 1 || st.MissedUpdates != 6 || st.Duplicates != 1 || st.DuplicatesDropped != 0 || len(h.lost) != 0 {
		t.Fatalf("stats %+v lost %v", st, h.lost)
	}
}

func TestAppTopicsAreSubscribedResumedAndLeft(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	if h.c.Subscribe("bad topic", 0, false, h.now) {
		t.Fatal("an invalid topic name was accepted")
	}
	h.c.Subscribe("chat", 0, false, h.now) // before open: sent on open
	h.drain()
	s := h.openAt(1, 0, "A")
	if m := h.lastSubscribe(s, "chat"); m.HasSince {
		t.Fatalf("first chat subscribe %+v", m)
	}
	if h.state().Ready {
		t.Fatal("READY before chat was acknowledged")
	}
	h.subscribedAt(s, "chat", 5, 4, "C")
	if !h.state().Ready {
		t.Fatalf("not READY with feed and chat acknowledged: %+v", h.state())
	}
	h.update(s, "chat", 5)
	h.frame(s, protocol.Message{Type: protocol.TypeError, Topic: "news", Error: &protocol.ErrorBody{Code: "unknown_topic"}})
	if len(h.topicErrs) != 0 {
		t.Fatalf("an error about a topic we never asked for was passed on: %v", h.topicErrs)
	}
	h.c.Subscribe("news", 0, false, h.now)
	h.drain()
	h.frame(s, protocol.Message{Type: protocol.TypeError, Topic: "news", Error: &protocol.ErrorBody{Code: "unknown_topic"}})
	if !reflect.DeepEqual(h.topicErrs, []string{"news:unknown_topic"}) {
		t.Fatalf("topic errors %v", h.topicErrs)
	}
	// The subscribe deadline retries the refused topic, not the others.
	n := h.count(protocol.TypeSubscribe, s)
	h.keepAlive(s, 2500*time.Millisecond)
	if got := h.count(protocol.TypeSubscribe, s); got != n+1 || h.lastSubscribe(s, "news").Topic != "news" {
		t.Fatalf("subscribes %d -> %d", n, got)
	}
	// news was joined while READY: its refusal (for now) is the app's to
	// hear (the topic error), not a reason to refuse every request.
	if !h.state().Ready {
		t.Fatal("a topic joined while READY and not served yet took READY away")
	}
	h.closed(s)
	h.advanceToDial()
	s2 := h.openAt(1, 0, "A")
	if m := h.lastSubscribe(s2, "chat"); !m.HasSince || m.Since != 5 || m.Stream != "C" {
		t.Fatalf("chat resubscribe %+v", m)
	}
	h.subscribedAt(s2, "chat", 6, 5, "C")
	h.subscribedAt(s2, "news", 1, 0, "N")
	if !h.state().Ready {
		t.Fatalf("not READY with every topic acknowledged: %+v", h.state())
	}
	h.c.Unsubscribe("chat", h.now)
	h.drain()
	if last := h.sockets[s2].sent[len(h.sockets[s2].sent)-1]; last.Type != protocol.TypeUnsubscribe || last.Topic != "chat" {
		t.Fatalf("last frame %+v, want unsubscribe chat", last)
	}
	h.update(s2, "chat", 6)
	if got := h.seqs("chat"); !reflect.DeepEqual(got, []int64{5}) {
		t.Fatalf("chat delivered %v after unsubscribe", got)
	}
	h.c.Unsubscribe("feed", h.now) // the service topic stays
	h.drain()
	if !h.state().Ready {
		t.Fatal("unsubscribing the app from the service topic dropped the service")
	}
}

func TestPublishSettlesWithTheResponse(t *testing.T) {
	h := newHarness(t, 7)
	h.start()
	s := h.readyAt(1, 0, "A")
	id := h.c.Publish("chat", []byte(`{"t":"hi"}`), 0, h.now)
	h.drain()
	last := h.sockets[s].sent[len(h.sockets[s].sent)-1]
	if last.Type != protocol.TypePublish || last.ID != id || last.Topic != "chat" || string(last.Data) != `{"t":"hi"}` {
		t.Fatalf("sent %+v", last)
	}
	h.frame(s, protocol.Message{Type: protocol.TypeResponse, ID: id, Result: []byte(`{"seq":7}`)})
	if e := h.settled[id]; e.Err != nil || string(e.Result) != `{"seq":7}` {
		t.Fatalf("settled %+v", e)
	}
	for _, bad := range []struct {
		topic string
		data  []byte
	}{{"a..b", []byte(`1`)}, {"chat", []byte(`{`)}, {"chat", nil}} {
		id := h.c.Publish(bad.topic, bad.data, 0, h.now)
		h.drain()
		if e := h.settled[id]; !errors.Is(e.Err, ErrInvalidRequest) {
			t.Fatalf("publish %q %q settled with %v, want ErrInvalidRequest", bad.topic, bad.data, e.Err)
		}
	}
}

func TestCursorsFromConfigAreResumedOnTheFirstSubscribe(t *testing.T) {
	h := newHarness(t, 7, func(c *Config) {
		c.Cursors = []Cursor{{Topic: "feed", Stream: "A", Seq: 30}, {Topic: "bad.name", Seq: 1}, {Topic: "chat", Seq: 2}}
	})
	h.start()
	s := h.last()
	h.open(s)
	if m := h.lastSubscribe(s, "feed"); !m.HasSince || m.Since != 30 || m.Stream != "A" {
		t.Fatalf("first subscribe %+v", m)
	}
	if h.count(protocol.TypeSubscribe, s) != 1 {
		t.Fatalf("a persisted cursor subscribed a topic the app did not ask for: %v", h.sentTypes(s))
	}
}

// Before stage 7 an app's since holds until something is delivered: a
// resend at the subscribe timeout still carries it; after a delivery and a
// reconnect the subscribe is live only.
func TestAnAppSinceBeforeStage7HoldsUntilADelivery(t *testing.T) {
	h := newHarness(t, 6)
	h.start()
	h.c.Subscribe("chat", 3, true, h.now)
	h.drain()
	s := h.openAt(1, 0, "A")
	if m := h.lastSubscribe(s, "chat"); !m.HasSince || m.Since != 3 {
		t.Fatalf("first chat subscribe %+v", m)
	}
	h.keepAlive(s, 2500*time.Millisecond) // no subscribed for chat: resent
	if m := h.lastSubscribe(s, "chat"); !m.HasSince || m.Since != 3 || h.count(protocol.TypeSubscribe, s) < 3 {
		t.Fatalf("resent chat subscribe %+v (%d subscribes)", m, h.count(protocol.TypeSubscribe, s))
	}
	h.subscribedAt(s, "chat", 4, 5, "C")
	h.update(s, "chat", 4)
	h.closed(s)
	h.advanceToDial()
	s2 := h.openAt(1, 0, "A")
	if m := h.lastSubscribe(s2, "chat"); m.HasSince {
		t.Fatalf("stage 6 resubscribed chat with since %d after a delivery", m.Since)
	}
}
