//go:build !js

package server

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/protocol"
)

// namesWithSeparators are the names the mapping must tell apart: the
// separators, the word bytes they might be confused with, and the longest.
var namesWithSeparators = []string{"a.b", "a:b", "a/b", "a_b", "a-b", "ab", "a.b.c", "a.b:c", "a:b.c",
	strings.Repeat("ab.", 42) + "ab", strings.Repeat("a", protocol.MaxTopicBytes)}

// Every valid name maps to a stream name JetStream takes (no '.', '/',
// '*', '>' or space, at most 255 bytes), the map is one to one, and the
// stream name leads back to its topic; a name without a separator keeps
// the stream it always had.
func TestStreamNamesAreOneToOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09-_.:/"
	names := append([]string(nil), namesWithSeparators...)
	for len(names) < 20000 {
		b := make([]byte, 1+r.IntN(protocol.MaxTopicBytes))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if protocol.ValidTopic(string(b)) {
			names = append(names, string(b))
		}
	}
	seen := map[string]string{}
	for _, topic := range names {
		name := streamName(topic)
		if other, ok := seen[name]; ok && other != topic {
			t.Fatalf("%q and %q share the stream %s", topic, other, name)
		}
		seen[name] = topic
		if len(name) > 255 || strings.ContainsAny(name, ".*>/\\ \t") {
			t.Fatalf("%q: stream name %q is not one JetStream takes", topic, name)
		}
		if back, ok := topicOfStream(name); !ok || back != topic {
			t.Fatalf("%q: stream %s leads back to %q, %v", topic, name, back, ok)
		}
		if !strings.ContainsAny(topic, ".:/") && name != "WSREADY_"+topic {
			t.Fatalf("%q: an existing name's stream moved to %s", topic, name)
		}
	}
	for _, foreign := range []string{"WSREADY_a..b", "WSREADYX_", "WSREADYX_c4", "WSREADYX_C5H62", "WSREADYX_!!", "OTHER_x", "WSREADY_", "WSREADYX_c5h62"} {
		// c5h62 is "a.b" escaped, but uppercase is not what streamName
		// makes; "c4" decodes to "a", which has no separator.
		if topic, ok := topicOfStream(foreign); ok && streamName(topic) != foreign {
			t.Fatalf("%s taken for topic %q", foreign, topic)
		}
	}
}

// Names with separators, and the longest name, each round-trip through a
// real embedded JetStream in a stream of their own: a seq of 1 each, their
// own data back, one stream each, and a History opened again finds them all
// (its start check names each stream's topic).
func TestTopicsWithSeparatorsRoundTripThroughJetStream(t *testing.T) {
	ns, err := natsembed.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := natsembed.Connect(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lim := Retention{MaxMsgs: 100, MaxBytes: 1 << 20, MaxAge: time.Hour}
	h, err := NewJetStreamHistory(ctx, nc, JetStreamOptions{Retention: lim, MaxTopics: 64, MarksDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i, topic := range namesWithSeparators {
		data := []byte(`{"i":` + itoa64(int64(i)) + `}`)
		if seq, err := h.Append(ctx, topic, data, true); err != nil || seq != 1 {
			t.Fatalf("append to %q: seq %d, %v (a seq past 1 means a stream it shares)", topic, seq, err)
		}
	}
	js, _ := jetstream.New(nc)
	var streams []string
	for name := range js.StreamNames(ctx).Name() {
		streams = append(streams, name)
	}
	if len(streams) != len(namesWithSeparators) {
		t.Fatalf("%d streams for %d topics: %v", len(streams), len(namesWithSeparators), streams)
	}
	h2, err := NewJetStreamHistory(ctx, nc, JetStreamOptions{Retention: lim, MaxTopics: 64, MarksDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i, topic := range namesWithSeparators {
		info, err := h2.Info(ctx, topic)
		if err != nil || info.First != 1 || info.Last != 1 {
			t.Fatalf("%q in a History opened again: %+v, %v", topic, info, err)
		}
		got := make(chan Entry, 4)
		stop, err := h2.Watch(ctx, topic, 1, func(e Entry) {
			if e.Stream == "" {
				got <- e
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-got:
			if want := `{"i":` + itoa64(int64(i)) + `}`; string(e.Data) != want || e.Seq != 1 {
				t.Fatalf("%q: watched %d %s, want 1 %s", topic, e.Seq, e.Data, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q: nothing watched", topic)
		}
		stop()
	}
	if n, err := h2.(*jsHistory).count(ctx); err != nil || n != len(namesWithSeparators) {
		t.Fatalf("the topic cap counts %d streams, %v", n, err)
	}
}

// A client subscribes to and publishes on a name with every separator,
// through a server on JetStream.
func TestAClientUsesATopicWithSeparatorsOnJetStream(t *testing.T) {
	ns, err := natsembed.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := natsembed.Connect(ns)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewJetStreamHistory(context.Background(), nc, JetStreamOptions{Retention: Retention{MaxMsgs: 10, MaxBytes: 1 << 20, MaxAge: time.Hour},
		MaxTopics: 8, CloseConn: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newAppFixture(t, &Options{History: h, Publish: true})
	const topic = "org:7/room.lobby"
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic})
	if m := p.next(protocol.TypeSubscribed, 5*time.Second); m.Topic != topic || m.From != 1 {
		t.Fatalf("subscribed %+v", m)
	}
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: topic, Data: []byte(`"hi"`)})
	// The response and the update may come in either order.
	var resp, upd *protocol.Message
	deadline := time.After(5 * time.Second)
	for resp == nil || upd == nil {
		select {
		case m := <-p.frames:
			switch {
			case m.Type == protocol.TypeResponse && m.ID == 1:
				resp = &m
			case m.Type == protocol.TypeUpdate:
				upd = &m
			}
		case <-deadline:
			t.Fatalf("within 5 s: response %+v, update %+v", resp, upd)
		}
	}
	if string(resp.Result) != `{"seq":1}` {
		t.Fatalf("publish: %+v", resp)
	}
	if upd.Topic != topic || upd.Seq != 1 || string(upd.Data) != `"hi"` {
		t.Fatalf("update %+v", upd)
	}
}
