//go:build !js

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// A peer that asks for 1,000 results over the cap (echo with params just
// under the frame cap, or a method whose result is too big) gets 1,000
// internal errors but does not write
// 1,000 ERROR lines: a handful, then, once a minute has passed on the
// server's clock, one line that says how many were left out; Close logs
// what is still owed.
func TestOversizedResultsLogAHandfulOfLinesAndACount(t *testing.T) {
	// A string of 65,300 bytes: over the result cap (the frame cap less
	// 256), and a request frame that carries it is within the frame cap.
	params := []byte(`"` + strings.Repeat("a", 65298) + `"`)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	big := json.RawMessage(params)
	f := newFixture(t, &Options{Now: func() time.Time { return time.Unix(0, clock.Load()) },
		Methods: map[string]Method{"big": func(context.Context, *Call) (any, error) { return big, nil }}}, DemoOptions{NoFeed: true})
	var logs logBuf
	f.srv.log = logs.logger()
	p := f.dial()
	id := uint64(0)
	ask := func(method string) {
		t.Helper()
		id++
		m := protocol.Message{Type: protocol.TypeRequest, ID: id, Method: method}
		if method == "echo" {
			m.Params = params
		}
		p.send(m)
		if m := p.response(id, 5*time.Second); m.Error == nil || m.Error.Code != protocol.ErrInternal {
			t.Fatalf("an oversized result answered %+v, want an internal error", m)
		}
	}
	// The first 10 by echo, as a peer would; the rest by an application's
	// method with a tiny request and the same oversized result, to spare
	// the CPU 64 MB of params (the log line is the same).
	for range 10 {
		ask("echo")
	}
	for range 990 {
		ask("big")
	}
	const msg = `msg="method result not sent"`
	if n := len(logs.lines("ERROR", msg)); n < 1 || n > 5 {
		t.Fatalf("1,000 oversized results logged %d ERROR lines, want 1 to 5", n)
	}
	clock.Add(int64(61 * time.Second))
	ask("big")
	if got := logs.lines("ERROR", msg, "suppressed=995"); len(got) != 1 {
		t.Fatalf("a minute on, the next line does not say suppressed=995:\n%s", strings.Join(logs.lines("ERROR"), "\n"))
	}
	for range 10 {
		ask("big")
	}
	f.srv.Close()
	if got := logs.lines("ERROR", msg, "suppressed=6"); len(got) != 1 {
		t.Fatalf("Close did not log suppressed=6 (10 more: 4 let through, 6 left out):\n%s", strings.Join(logs.lines("ERROR"), "\n"))
	}
	if strings.Contains(logs.String(), "aaaa") {
		t.Fatal("the peer's params reached the log")
	}
}

// stuckHistory is the memory History whose Info waits for its context to
// end: a fake, because the point is a subscribe that is still loading its
// topic when its connection goes away, every time.
type stuckHistory struct {
	History
	entered chan struct{}
}

func (h *stuckHistory) Info(ctx context.Context, topic string) (TopicInfo, error) {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return TopicInfo{}, ctx.Err()
}

// A subscribe cut short because its client left (unsubscribe and close
// while the topic loads) is not the History failing: no WARN, and it does
// not start a run of failures.
func TestASubscribeItsClientCancelledIsNotAWarning(t *testing.T) {
	h := &stuckHistory{History: NewMemoryHistory(Retention{MaxMsgs: 10, MaxBytes: 1 << 20, MaxAge: time.Hour}, 16, time.Now), entered: make(chan struct{}, 1)}
	f := newFixture(t, &Options{History: h, HistoryTimeout: time.Minute}, DemoOptions{NoFeed: true})
	var logs logBuf
	f.srv.log = logs.logger() // debug
	for i := range 3 {
		p := f.dial()
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: fmt.Sprint("news", i)})
		select {
		case <-h.entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the subscribe did not reach the History")
		}
		p.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: fmt.Sprint("news", i)})
		p.ws.CloseNow()
		waitFor(t, 5*time.Second, "the subscribe's end logged", func() bool {
			return strings.Count(logs.String(), "subscribe") > i || len(logs.lines("WARN")) > 0
		})
	}
	if w := logs.lines("WARN"); len(w) > 0 {
		t.Fatalf("a subscribe its own client cancelled logged a WARN:\n%s", strings.Join(w, "\n"))
	}
	if n := len(logs.lines("DEBUG", "subscribe cut short")); n != 3 {
		t.Fatalf("%d debug lines for 3 cancelled subscribes, want 3:\n%s", n, logs.String())
	}
}

// With NATS stopped, 100 subscribes to new topics and 20 publishes all
// fail, and the server logs one WARN for the subscribes and one for the
// publishes, not one per operation (the docs' promise); when NATS is back
// the first subscribe that loads a topic and the first publish stored
// log one INFO each, with how many failed.
func TestJetStreamDownLogsOneLineWhenItFailsAndOneWhenItRecovers(t *testing.T) {
	dir := t.TempDir()
	ns, err := natsembed.Start(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := ns.ClientURL()
	defer func() { ns.Shutdown() }()
	lim := Retention{MaxMsgs: 100, MaxBytes: 1 << 20, MaxAge: time.Hour}
	h, err := ConnectJetStream(context.Background(), url, JetStreamOptions{Retention: lim, MaxTopics: 256, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	// SubscribeRate high: the test counts the backend's refusals, not the
	// rate limiter's (its own test is TestSubscribeChurnIsRateLimitedPerConnection).
	f := newFixture(t, &Options{History: h, Publish: true, MaxTopics: 256, HistoryTimeout: time.Second, SubscribeRate: 1e6, SubscribeBurst: 1000}, DemoOptions{NoFeed: true})
	var logs logBuf
	f.srv.log = logs.logger()
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat"})
	p.next(protocol.TypeSubscribed, 5*time.Second)

	ns.Shutdown()
	ns.WaitForShutdown()
	// subscribe answers subscribed (true) or an error frame (false).
	subscribe := func(topic string) bool {
		t.Helper()
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic})
		deadline := time.After(5 * time.Second)
		for {
			select {
			case m := <-p.frames:
				switch {
				case m.Type == protocol.TypeSubscribed && m.Topic == topic:
					return true
				case m.Type == protocol.TypeError && m.Topic == topic:
					if m.Error == nil || m.Error.Code != protocol.ErrUnavailable {
						t.Fatalf("subscribe with NATS down: %+v", m)
					}
					return false
				}
			case <-deadline:
				t.Fatalf("no answer to a subscribe to %s", topic)
			}
		}
	}
	id := uint64(0)
	publish := func() bool {
		t.Helper()
		id++
		p.send(protocol.Message{Type: protocol.TypePublish, ID: id, Topic: "chat", Data: []byte(`1`)})
		return p.response(id, 5*time.Second).Error == nil
	}
	subFailed, pubFailed := 0, 0
	for i := range 100 {
		if subscribe(fmt.Sprint("t", i)) {
			t.Fatal("a subscribe to a new topic succeeded with NATS down")
		}
		subFailed++
	}
	for range 20 {
		if publish() {
			t.Fatal("a publish succeeded with NATS down")
		}
		pubFailed++
	}
	if w := logs.lines("WARN"); len(w) != 2 || len(logs.lines("WARN", "subscribe")) != 1 || len(logs.lines("WARN", "publish")) != 1 {
		t.Fatalf("120 failures with NATS down logged %d WARN lines, want 2 (one for subscribes, one for publishes):\n%s",
			len(w), strings.Join(first(w, 5), "\n"))
	}

	ns, err = natsembed.Start(dir, url[len("nats://"):])
	if err != nil {
		t.Fatal(err)
	}
	// Each retries until NATS is back, the two within 20 s.
	deadline := time.Now().Add(20 * time.Second)
	i := 0
	if !poll.UntilEvery(time.Until(deadline), 50*time.Millisecond, func() bool {
		if subscribe(fmt.Sprint("back", i)) {
			return true
		}
		i++
		subFailed++
		return false
	}) {
		t.Fatal("no subscribe succeeded within 20 s of NATS coming back")
	}
	if !poll.UntilEvery(time.Until(deadline), 50*time.Millisecond, func() bool {
		if publish() {
			return true
		}
		pubFailed++
		return false
	}) {
		t.Fatal("no publish succeeded within 20 s of NATS coming back")
	}
	if got := logs.lines("INFO", "subscribe", fmt.Sprintf("failed=%d", subFailed)); len(got) != 1 {
		t.Fatalf("no one INFO line for subscribes with failed=%d:\n%s", subFailed, logs.String())
	}
	if got := logs.lines("INFO", "publish", fmt.Sprintf("failed=%d", pubFailed)); len(got) != 1 {
		t.Fatalf("no one INFO line for publishes with failed=%d:\n%s", pubFailed, logs.String())
	}
	if w := logs.lines("WARN"); len(w) != 2 {
		t.Fatalf("%d WARN lines in all, want 2:\n%s", len(w), strings.Join(w, "\n"))
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }
