//go:build !js

package server

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// A client in long polls moves its session onto a stream
// (GET sse?ping=1&lastEventId=): the stream's first event is a ping, at
// once, though the next interval's is 10 s away, so an idle session's
// stream is not judged silent; then the updates past the client's id, each
// once (none the polls delivered again). Before, such a stream carried
// nothing until a ping interval passed or an update came.
func TestHTTPStreamFromLongPollsPingsAtOnceAndResumes(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: 10 * time.Second, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	id := f.newSession(t, "{}")
	f.poll(t, id, "", true) // the welcome, and the first ping
	sendFrames(t, f, id, protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	last := ""
	for deadline, subscribed := time.Now().Add(5*time.Second), false; !subscribed; {
		if time.Now().After(deadline) {
			t.Fatal("no subscribed within 5 s of polls")
		}
		evs, _, _ := f.poll(t, id, last, false)
		for _, e := range evs {
			if e.hasID {
				last = e.id
			}
			subscribed = subscribed || strings.Contains(e.data, `"type":"subscribed"`)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 5 {
		if _, err := f.srv.Publish(ctx, "room", []byte(`{"n":`+strconv.Itoa(i+1)+`}`)); err != nil {
			t.Fatal(err)
		}
		if i == 2 { // the polls deliver 1 to 3; 4 and 5 wait for the stream
			for got := 0; got < 3; {
				evs, _, _ := f.poll(t, id, last, false)
				for _, e := range evs {
					if e.hasID {
						last = e.id
						got++
					}
				}
			}
		}
	}

	q := url.Values{"session": {id}, "ping": {"1"}, "lastEventId": {last}}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, f.base()+"/sse?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []sseEvent
	var firstAt time.Duration
	readEvents(resp.Body, func(e sseEvent) {
		if len(evs) == 0 {
			firstAt = time.Since(t0)
		}
		evs = append(evs, e)
	}) // until sctx ends the stream
	if len(evs) == 0 || !strings.Contains(evs[0].data, `"type":"ping"`) || firstAt > time.Second {
		t.Fatalf("the stream's events %+v (the first after %v); want a ping first, at once", evs, firstAt)
	}
	var updates []string
	for _, e := range evs[1:] {
		if strings.Contains(e.data, `"type":"update"`) {
			updates = append(updates, e.data)
		}
	}
	if len(updates) != 2 || !strings.Contains(updates[0], `"seq":4`) || !strings.Contains(updates[1], `"seq":5`) {
		t.Fatalf("the stream's updates %q; want seq 4 and 5, once each", updates)
	}
}

// A stream probe (GET sse?probe=1) checks the path, not the session: a
// ping at once, the response held open, and meanwhile the session's
// frames go on to its polls (the probe takes none); one probe per session
// at a time (429 for a second).
func TestHTTPStreamProbeTakesNothingFromTheSession(t *testing.T) {
	f := newFixture(t, &Options{PingInterval: 10 * time.Second, SweepGrace: 5 * time.Second}, DemoOptions{NoFeed: true})
	id := f.newSession(t, "{}")
	f.poll(t, id, "", true)
	sendFrames(t, f, id, protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	last := ""
	for deadline, subscribed := time.Now().Add(5*time.Second), false; !subscribed; {
		if time.Now().After(deadline) {
			t.Fatal("no subscribed within 5 s of polls")
		}
		evs, _, _ := f.poll(t, id, last, false)
		for _, e := range evs {
			if e.hasID {
				last = e.id
			}
			subscribed = subscribed || strings.Contains(e.data, `"type":"subscribed"`)
		}
	}
	probe := func() (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base()+"/sse?session="+id+"&probe=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, cancel
	}
	resp, cancel := probe()
	defer cancel()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("probe: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	pinged := make(chan sseEvent, 1)
	go readEvents(resp.Body, func(e sseEvent) {
		select {
		case pinged <- e:
		default:
		}
	})
	select {
	case e := <-pinged:
		if !strings.Contains(e.data, `"type":"ping"`) {
			t.Fatalf("the probe's first event %+v; want a ping", e)
		}
	case <-time.After(time.Second):
		t.Fatal("no ping on the probe within 1 s (the next interval's is 10 s away)")
	}
	if r2, c2 := probe(); r2.StatusCode != http.StatusTooManyRequests {
		c2()
		t.Fatalf("a second probe while one is out: %d, want 429", r2.StatusCode)
	} else {
		r2.Body.Close()
		c2()
	}
	ctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	seq, err := f.srv.Publish(ctx, "room", []byte(`1`))
	if err != nil {
		t.Fatal(err)
	}
	evs, _, _ := f.poll(t, id, last, false)
	got := false
	for _, e := range evs {
		got = got || strings.Contains(e.data, `"seq":`+strconv.FormatInt(seq, 10))
	}
	if !got {
		t.Fatalf("the poll beside the probe: %+v; want the update (the probe takes nothing)", evs)
	}
}
