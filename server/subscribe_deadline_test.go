//go:build !js

package server

import (
	"context"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// aheadHistory says a topic's last seq is 5 more than its store delivers:
// the node's copy of the topic never catches up with what it was told.
type aheadHistory struct{ History }

func (h aheadHistory) Info(ctx context.Context, topic string) (TopicInfo, error) {
	ti, err := h.History.Info(ctx, topic)
	ti.Last += 5
	return ti, err
}

// A subscribe held until the topic's copy catches up is answered within
// HistoryTimeout whatever the store does: unavailable (the client asks
// again), never silence. Before, it waited until someone published past
// the promised seq; with a store that never delivers them, for good. The
// connection stays usable.
func TestAWaitingSubscribeIsAnsweredWithinHistoryTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	h := aheadHistory{NewMemoryHistory(Retention{MaxMsgs: 10, MaxBytes: 1 << 10, MaxAge: time.Hour}, 4, nil)}
	f := newFixture(t, &Options{History: h, HistoryTimeout: timeout}, DemoOptions{NoFeed: true})
	if _, err := f.srv.Publish(context.Background(), "news", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	p := f.dial()
	start := time.Now()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "news", HasSince: true, Since: 0})
	m, ok := p.maybe(protocol.TypeError, 5*time.Second)
	if !ok {
		t.Fatal("a subscribe waiting for its topic to catch up was not answered within 5 s")
	}
	if d := time.Since(start); m.Topic != "news" || m.Error == nil || m.Error.Code != protocol.ErrUnavailable || d < timeout || d > timeout+2*time.Second {
		t.Fatalf("after %v: %+v; want unavailable about news after %v", d, m, timeout)
	}
	p.send(protocol.Message{Type: protocol.TypeProbe, ID: 7})
	if a := p.next(protocol.TypeProbeAck, 2*time.Second); a.ID != 7 {
		t.Fatalf("probe ack %+v", a)
	}
}
