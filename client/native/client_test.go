//go:build !js

package native

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/testutil"
	"github.com/wsready/wsready/protocol"
	"github.com/wsready/wsready/server"
)

// Subscribe refuses a bad topic name with protocol's error and a negative
// since with its own, both wrapped, before anything reaches a server (none
// listens here).
func TestSubscribeRefusals(t *testing.T) {
	c, err := Dial(context.Background(), "ws://127.0.0.1:1/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, topic := range []string{"", "a b", "a..b", "a:", string(make([]byte, protocol.MaxTopicBytes+1))} {
		if _, err := c.Subscribe(ctx, topic, nil, nil); !errors.Is(err, protocol.ErrBadTopic) {
			t.Errorf("topic %q: %v", topic, err)
		}
	}
	since := int64(-1)
	if _, err := c.Subscribe(ctx, "chat", &since, nil); !errors.Is(err, errNegativeSince) || errors.Is(err, protocol.ErrBadTopic) {
		t.Errorf("since -1: %v", err)
	}
	c.Close()
	if _, err := c.Subscribe(ctx, "chat", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// Subscribe on a READY client returns once the server has taken the topic,
// so what is published next is delivered (a topic joined while READY does
// not take READY away, so WaitReady alone could not say it). With the
// service down the subscribe is never answered: Subscribe gives up with
// ctx, the subscription standing.
func TestSubscribeReturnsOnceTheServerTookIt(t *testing.T) {
	s := testutil.StartServer(t, server.Options{})
	c, err := Dial(context.Background(), s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		topic := "orders.t" + string(rune('a'+i))
		got := make(chan client.Update, 1)
		leave, err := c.Subscribe(ctx, topic, nil, func(u client.Update) { got <- u })
		if err != nil {
			t.Fatal(err)
		}
		defer leave() // at most 16 subscriptions a connection by default
		if _, err := s.Server.Publish(ctx, topic, []byte(`1`)); err != nil {
			t.Fatal(err)
		}
		select {
		case u := <-got:
			if u.Seq != 1 {
				t.Fatalf("%s: got seq %d", topic, u.Seq)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: published right after Subscribe returned, never delivered", topic)
		}
	}
	s.Set("serviceDown", true)
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	leave, err := c.Subscribe(short, "orders.never", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || leave == nil {
		t.Fatalf("a subscribe the service never answered: %v (leave func %v)", err, leave != nil)
	}
	leave()
}
