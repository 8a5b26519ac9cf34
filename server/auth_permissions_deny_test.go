//go:build !js

package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// subscribeRules is an Authorize hook written for subscribes only: each
// user may subscribe to its own user.<id> topic and to public ones, and it
// says nothing about any other action.
func subscribeRules(_ context.Context, id Identity, a Action) error {
	if a.Kind == ActSubscribe && strings.HasPrefix(a.Topic, "user.") && a.Topic != "user."+id.User {
		return &Error{Code: "forbidden", Message: "not your topic"}
	}
	return nil
}

// A hook written for subscribes never lets a client publish, even with
// publishing on: bob cannot publish into alice's private topic (nor his
// own), and alice, subscribed there, receives nothing. Signed in through
// the real ticket endpoint, on real sockets.
func TestASubscribeHookDoesNotAllowPublishing(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, IssueTickets: true, Publish: true, Authorize: subscribeRules})
	alice, bob := f.dialAs(t, "alice"), f.dialAs(t, "bob")
	alice.join("user.alice", false)
	bob.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "user.alice"})
	if m := bob.next(protocol.TypeError, 2*time.Second); m.Topic != "user.alice" || m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("bob's subscribe to user.alice: %+v", m)
	}
	for i, topic := range []string{"user.alice", "user.bob"} {
		id := uint64(i + 1)
		bob.send(protocol.Message{Type: protocol.TypePublish, ID: id, Topic: topic, Data: []byte(`"from bob"`)})
		if m := bob.response(id, 2*time.Second); m.Error == nil || m.Error.Code != protocol.ErrForbidden {
			t.Fatalf("bob's publish to %s: %+v, want forbidden", topic, m)
		}
	}
	if m, ok := alice.maybe(protocol.TypeUpdate, 300*time.Millisecond); ok && m.Topic == "user.alice" {
		t.Fatalf("alice received bob's publish: %+v", m)
	}
}

// Publishing off refuses every publish, however permissive the hook.
func TestPublishOffRefusesEvenWithAPermissiveHook(t *testing.T) {
	allow := func(context.Context, Identity, Action) error { return nil }
	f := newFixture(t, &Options{Auth: AuthOptional, IssueTickets: true, Authorize: allow})
	p := f.dialAs(t, "alice")
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: "user.alice", Data: []byte(`1`)})
	if m := p.response(1, 2*time.Second); m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("publish with publishing off and a permissive hook: %+v, want forbidden", m)
	}
}

// A hook written for subscribes keeps a private topic's members private:
// bob, who may not join user.alice, may not ask who is in it either.
func TestASubscribeHookKeepsAPrivateTopicsPresencePrivate(t *testing.T) {
	f := newFixture(t, &Options{Auth: AuthOptional, IssueTickets: true, Authorize: subscribeRules})
	alice, bob := f.dialAs(t, "alice"), f.dialAs(t, "bob")
	alice.join("user.alice", true)
	bob.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: protocol.MethodPresence, Params: []byte(`{"topic":"user.alice"}`)})
	if m := bob.response(1, 2*time.Second); m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("bob's presence request for user.alice: %+v, want forbidden", m)
	}
	alice.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: protocol.MethodPresence, Params: []byte(`{"topic":"user.alice"}`)})
	if m := alice.response(1, 2*time.Second); m.Error != nil || !strings.Contains(string(m.Result), `"alice"`) {
		t.Fatalf("alice's presence request for her own topic: %+v, want her in it", m)
	}
}
