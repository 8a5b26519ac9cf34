//go:build !js

package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// AuthorizePublish decides publishes when publishing is on: a user may
// publish to its own topic, which its subscribers receive, and not to
// another's (the hook's own code reaches the client); the hook is told
// the action and the topic.
func TestAuthorizePublishAllowsWhatItNames(t *testing.T) {
	seen := make(chan Action, 16)
	f := newFixture(t, &Options{Auth: AuthOptional, IssueTickets: true, Publish: true, Authorize: subscribeRules,
		AuthorizePublish: func(_ context.Context, id Identity, a Action) error {
			seen <- a
			if a.Topic != "user."+id.User {
				return &Error{Code: "not_yours", Message: "publish to your own topic"}
			}
			return nil
		}})
	alice, alice2, bob := f.dialAs(t, "alice"), f.dialAs(t, "alice"), f.dialAs(t, "bob")
	alice.join("user.alice", false)
	alice2.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: "user.alice", Data: []byte(`"hi"`)})
	if m := alice2.response(1, 2*time.Second); m.Error != nil || string(m.Result) != `{"seq":1}` {
		t.Fatalf("alice's publish to her own topic: %+v %+v", m, m.Error)
	}
	if m := alice.next(protocol.TypeUpdate, 2*time.Second); m.Topic != "user.alice" || string(m.Data) != `"hi"` {
		t.Fatalf("alice's update: %+v", m)
	}
	if a := <-seen; a != (Action{Kind: ActPublish, Topic: "user.alice"}) {
		t.Fatalf("the hook was told %+v", a)
	}
	bob.send(protocol.Message{Type: protocol.TypePublish, ID: 2, Topic: "user.alice", Data: []byte(`"from bob"`)})
	if m := bob.response(2, 2*time.Second); m.Error == nil || m.Error.Code != "not_yours" {
		t.Fatalf("bob's publish to user.alice: %+v, want not_yours", m)
	}
	if m, ok := alice.maybe(protocol.TypeUpdate, 300*time.Millisecond); ok {
		t.Fatalf("alice received %+v after bob's refused publish", m)
	}
}

// A publish hook without publishing on would never be asked: New says so.
func TestAuthorizePublishWithoutPublishIsRefused(t *testing.T) {
	_, err := New(&Options{AuthorizePublish: func(context.Context, Identity, Action) error { return nil }, Logger: discard()})
	if err == nil || !strings.Contains(err.Error(), "Options.AuthorizePublish is set while Publish is off") {
		t.Fatalf("New: %v, want AuthorizePublish refused", err)
	}
}
