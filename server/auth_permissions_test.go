//go:build !js

package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Authorize refuses one call with a typed error and the socket stays: a
// subscribe gets an error frame about its topic, a publish and a request a
// response error; an *Error's own code reaches the client, any other error
// is forbidden with a fixed message (never the error's text).
func TestAuthorizeRefusesOneCallNotTheSocket(t *testing.T) {
	var seen []Action
	rules := func(_ context.Context, id Identity, a Action) error {
		seen = append(seen, a)
		switch {
		case a.Kind == ActSubscribe && a.Topic == "private-b":
			return errors.New("secret reason the client must not see")
		case a.Kind == ActPublish && a.Topic == "ro":
			return &Error{Code: "read_only", Message: "this room is read-only"}
		case a.Kind == ActRequest && a.Method == "time":
			return errors.New("no")
		}
		return nil
	}
	f := newFixture(t, &Options{Publish: true, Authorize: rules, AuthorizePublish: rules})
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "private-b"})
	if m := p.next(protocol.TypeError, time.Second); m.Topic != "private-b" || m.Error.Code != protocol.ErrForbidden || m.Error.Message != "not allowed" {
		t.Fatalf("refused subscribe: %+v %+v", m, m.Error)
	}
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: "ro", Data: []byte(`1`)})
	if m := p.next(protocol.TypeResponse, time.Second); m.ID != 1 || m.Error == nil || m.Error.Code != "read_only" {
		t.Fatalf("refused publish: %+v", m)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "time"})
	if m := p.next(protocol.TypeResponse, time.Second); m.ID != 2 || m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("refused request: %+v", m)
	}
	// The same socket still works for what is allowed.
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "public"})
	if m := p.next(protocol.TypeSubscribed, time.Second); m.Topic != "public" {
		t.Fatalf("allowed subscribe: %+v", m)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 3, Method: "echo", Params: []byte(`7`)})
	if m := p.next(protocol.TypeResponse, time.Second); m.ID != 3 || string(m.Result) != "7" {
		t.Fatalf("allowed request: %+v", m)
	}
	if len(seen) < 5 {
		t.Fatalf("the hook saw %d actions: %+v", len(seen), seen)
	}
}

// Without a hook, publishing follows Options.Publish: off, refused; on,
// any client may publish (wsready serve -publish).
func TestWithoutAuthorizePublishFollowsThePublishOption(t *testing.T) {
	f := newFixture(t, &Options{})
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: "x", Data: []byte(`1`)})
	if m := p.next(protocol.TypeResponse, time.Second); m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("publish with publishing off: %+v", m)
	}
	on := newFixture(t, &Options{Publish: true})
	p = on.dial()
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 2, Topic: "x", Data: []byte(`1`)})
	if m := p.response(2, time.Second); m.Error != nil || string(m.Result) != `{"seq":1}` {
		t.Fatalf("publish with publishing on and no hook: %+v %+v", m, m.Error)
	}
}
