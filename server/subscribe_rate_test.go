//go:build !js

package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// A connection that subscribes and unsubscribes in a loop is answered
// rate_limited past its SubscribeBurst (64 by default), refilled at
// SubscribeRate (20/s), with a retryAfterMs and the topic; the connection
// stays, and a subscribe after the wait is served. Before, every subscribe
// was served as fast as the client sent them, each loading the topic
// (on JetStream a consumer per subscribe: hundreds of MB in seconds).
func TestSubscribeChurnIsRateLimitedPerConnection(t *testing.T) {
	clock := newTestClock() // the bucket refills by Options.Now
	f := newFixture(t, &Options{Now: clock.now}, DemoOptions{NoFeed: true})
	p := f.dial()
	const n = 100
	for range n {
		p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
		p.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: "room"})
	}
	subscribed, limited, unsubscribed := 0, 0, 0
	var retry int64
	deadline := time.After(10 * time.Second)
	for subscribed+limited < n || unsubscribed < n {
		select {
		case m := <-p.frames:
			switch m.Type {
			case protocol.TypeSubscribed:
				subscribed++
			case protocol.TypeUnsubscribed:
				unsubscribed++
			case protocol.TypeError:
				if m.Error == nil || m.Error.Code != protocol.ErrRateLimited || m.Topic != "room" || m.Error.RetryAfterMs <= 0 {
					t.Fatalf("error frame %+v, want rate_limited about room with a retryAfterMs", m)
				}
				limited++
				retry = max(retry, m.Error.RetryAfterMs)
			}
		case <-deadline:
			t.Fatalf("answers within 10s: %d subscribed, %d rate_limited, %d unsubscribed of %d", subscribed, limited, unsubscribed, n)
		}
	}
	// 64 at once, and none more: the clock stood (one per 50 ms after).
	if subscribed != 64 || limited != n-subscribed {
		t.Fatalf("%d subscribed, %d rate_limited of %d; want the burst of 64 (and the refill) served, the rest limited", subscribed, limited, n)
	}
	// /metrics counts them, one series with no label.
	if want := "\nwsready_subscribe_rate_limited_total " + strconv.Itoa(limited) + "\n"; !strings.Contains(scrapeMetrics(t, f), want) {
		t.Errorf("/metrics: want %q", want)
	}
	if retry > 100 {
		t.Fatalf("retryAfterMs %d, want at most one token's wait (50 ms at 20/s)", retry)
	}
	clock.advance(time.Duration(retry) * time.Millisecond)
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room"})
	if sub := p.next(protocol.TypeSubscribed, 2*time.Second); sub.Topic != "room" {
		t.Fatalf("a subscribe after the wait: %+v", sub)
	}
}
