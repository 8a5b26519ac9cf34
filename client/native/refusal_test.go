//go:build !js

package native

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// The walkthrough's case, against the real server: the app's only topic
// is refused (forbidden, with the Authorize hook's message). READY means
// the server took every topic the app asked for, so WaitReady fails at
// once (not at ctx's end) with a *SubscribeError naming the topic, the
// server's code and its message; once the app gives the topic up the
// client is READY on the same connection.
func TestWaitReadyFailsFastOnARefusedTopic(t *testing.T) {
	_, url := topicServer(t, server.Options{Authorize: func(_ context.Context, _ server.Identity, a server.Action) error {
		if a.Kind == server.ActSubscribe && a.Topic == "user.alice" {
			return &server.Error{Code: "forbidden", Message: "user.alice is private to alice"}
		}
		return nil
	}}, demo.Options{NoFeed: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &Options{Config: fastStage7(21)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leave, err := c.Subscribe(ctx, "user.alice", nil, nil)
	if leave == nil {
		t.Fatalf("Subscribe: %v", err)
	}
	start := time.Now()
	err = c.WaitReady(ctx)
	took := time.Since(start)
	var se *SubscribeError
	if err == nil || !errors.As(err, &se) || se.Topic != "user.alice" || se.Code != "forbidden" ||
		!strings.Contains(err.Error(), "user.alice is private to alice") {
		t.Fatalf("WaitReady with the only topic refused: %v (after %v); want a *SubscribeError naming user.alice, forbidden and the server's message", err, took)
	}
	if took > 5*time.Second || ctx.Err() != nil {
		t.Fatalf("WaitReady took %v: it waited for ctx instead of failing fast", took)
	}
	if st := c.State(); st.Ready {
		t.Fatalf("state %+v: READY with the refusal", st)
	}
	opens := c.Stats().Opens
	leave()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady after the app gave the topic up: %v", err)
	}
	if n := c.Stats().Opens; n != opens {
		t.Fatalf("%d opens, then %d: the connection was not kept", opens, n)
	}
}
