//go:build !js

package native

import (
	"context"
	"errors"
	"testing"

	"github.com/wsready/wsready/protocol"
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
