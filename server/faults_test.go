//go:build !js

package server

import (
	"context"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// A server without the demo has no fault hook, so a request and a
// publish ask nothing of the server's mutex for it: here both are served
// while the test holds s.mu. (The demo's Service down and Slow replies
// flags were read under s.mu on every request, publish and subscribe.)
func TestRequestsTakeNoServerLockWithoutTheDemo(t *testing.T) {
	testRequestsTakeNoServerLock(t, newAppFixture(t, &Options{Publish: true, Methods: pingMethod}))
}

// With the demo, its switches off, the hook's answers are its atomics: a
// request and a publish still ask nothing of the server's mutex.
func TestRequestsTakeNoServerLockWithTheDemo(t *testing.T) {
	testRequestsTakeNoServerLock(t, newFixture(t, &Options{Publish: true, Methods: pingMethod}, DemoOptions{NoFeed: true}))
}

var pingMethod = map[string]Method{"ping": func(context.Context, *Call) (any, error) { return "pong", nil }}

func testRequestsTakeNoServerLock(t *testing.T, f *fixture) {
	p := f.dial()
	p.next(protocol.TypeWelcome, 2*time.Second)
	f.srv.mu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			f.srv.mu.Unlock()
		}
	}
	defer unlock()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "ping"})
	m, ok := p.maybe(protocol.TypeResponse, 2*time.Second)
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 2, Topic: "room", Data: []byte(`{"a":1}`)})
	pub, pubOK := p.maybe(protocol.TypeResponse, 2*time.Second)
	unlock()
	if !ok {
		t.Fatal("a request waited for the server's mutex")
	}
	if m.ID != 1 || string(m.Result) != `"pong"` {
		t.Fatalf("the response: %+v", m)
	}
	if !pubOK {
		t.Fatal("a publish waited for the server's mutex")
	}
	if pub.ID != 2 || pub.Error != nil {
		t.Fatalf("the publish's response: %+v %+v", pub, pub.Error)
	}
}
