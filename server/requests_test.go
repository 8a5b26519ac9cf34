//go:build !js

package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// newAppFixture serves Handler alone at /ws, as an application mounts it:
// no Demo is made, so no demo method and no feed. o.Logger is kept if set.
func newAppFixture(t *testing.T, o *Options) *fixture {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.Logger == nil {
		o.Logger = discard()
	}
	srv := mustNew(t, o)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return &fixture{t: t, srv: srv, hs: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http")}
}

// response waits for the response with id, skipping other frames.
func (p *peer) response(id uint64, d time.Duration) protocol.Message {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m := p.next(protocol.TypeResponse, time.Until(deadline))
		if m.ID == id {
			return m
		}
	}
}

// An application's method is called with the connection's session, the
// method's name and the request's params, and its result is sent as JSON:
// a value marshalled, a json.RawMessage as it is, nil as null.
func TestAMethodAnswersWithItsResult(t *testing.T) {
	var got atomic.Pointer[Call]
	f := newAppFixture(t, &Options{Methods: map[string]Method{
		"cart.add": func(_ context.Context, c *Call) (any, error) {
			got.Store(c)
			var p struct{ Item string }
			if err := json.Unmarshal(c.Params, &p); err != nil {
				return nil, &Error{Code: "bad_params", Message: "params are {\"item\": ...}"}
			}
			return map[string]any{"added": p.Item, "count": 1}, nil
		},
		"raw":  func(context.Context, *Call) (any, error) { return json.RawMessage(`{"b":2,"a":1}`), nil },
		"none": func(context.Context, *Call) (any, error) { return nil, nil },
		// A method publishes through the server it was called on.
		"say": func(ctx context.Context, c *Call) (any, error) {
			seq, err := c.Server.Publish(ctx, "room.lobby", c.Params)
			return map[string]int64{"seq": seq}, err
		},
	}})
	p := f.dial()
	welcome := p.next(protocol.TypeWelcome, time.Second)
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "cart.add", Params: []byte(`{"item":"apple"}`)})
	if m := p.response(1, time.Second); m.Error != nil || string(m.Result) != `{"added":"apple","count":1}` {
		t.Fatalf("cart.add: %+v %s", m.Error, m.Result)
	}
	c := got.Load()
	if c.Method != "cart.add" || string(c.Params) != `{"item":"apple"}` || c.Session != welcome.Session || !c.Identity.Anonymous() {
		t.Fatalf("the call: %+v", c)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "raw"})
	if m := p.response(2, time.Second); string(m.Result) != `{"b":2,"a":1}` {
		t.Fatalf("raw: %s", m.Result)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 3, Method: "none"})
	if m := p.response(3, time.Second); m.Error != nil || string(m.Result) != `null` {
		t.Fatalf("none: %+v %s", m.Error, m.Result)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 4, Method: "cart.add"})
	if m := p.response(4, time.Second); m.Error == nil || m.Error.Code != "bad_params" || m.Error.Message != `params are {"item": ...}` {
		t.Fatalf("cart.add without params: %+v", m.Error)
	}
	if c.Server != f.srv {
		t.Fatalf("the call's Server is %p, want the server, %p", c.Server, f.srv)
	}
	q := f.dial() // another connection, subscribed: the update may come before p's response
	q.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "room.lobby"})
	q.next(protocol.TypeSubscribed, time.Second)
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 5, Method: "say", Params: []byte(`{"text":"hi"}`)})
	if m := p.response(5, time.Second); m.Error != nil || string(m.Result) != `{"seq":1}` {
		t.Fatalf("say: %+v %s", m.Error, m.Result)
	}
	if got := q.updatesOf("room.lobby", 1, time.Second); got[0] != 1 {
		t.Fatalf("the update say published: %v", got)
	}
}

// A method's *Error reaches the client with its code and message; any
// other error is internal with a fixed message, never the error's text;
// an *Error with a code the protocol refuses is internal too.
func TestAMethodsErrorsAreTypedOrInternal(t *testing.T) {
	f := newAppFixture(t, &Options{Methods: map[string]Method{
		"typed": func(context.Context, *Call) (any, error) {
			return nil, &Error{Code: "out_of_stock", Message: "none left"}
		},
		"wrapped": func(context.Context, *Call) (any, error) {
			return nil, errors.Join(errors.New("x"), &Error{Code: "a.b-c_1", Message: "m"})
		},
		"plain":   func(context.Context, *Call) (any, error) { return nil, errors.New("db password is hunter2") },
		"badcode": func(context.Context, *Call) (any, error) { return nil, &Error{Code: "Not Valid", Message: "hunter2"} },
		"long": func(context.Context, *Call) (any, error) {
			return nil, &Error{Code: "long", Message: strings.Repeat("é", maxErrorMessageBytes)}
		},
		"unencodable": func(context.Context, *Call) (any, error) { return func() {}, nil },
		"huge":        func(context.Context, *Call) (any, error) { return strings.Repeat("x", protocol.MaxFrameBytes), nil },
	}})
	p := f.dial()
	for i, c := range []struct{ method, code, msg string }{
		{"typed", "out_of_stock", "none left"},
		{"wrapped", "a.b-c_1", "m"},
		{"plain", protocol.ErrInternal, "internal error"},
		{"badcode", protocol.ErrInternal, "internal error"},
		{"unencodable", protocol.ErrInternal, "internal error"},
		{"huge", protocol.ErrInternal, "internal error"},
		{"nope", protocol.ErrUnknownMethod, "unknown method"},
		{"wsready.anything", protocol.ErrUnknownMethod, "unknown method"},
	} {
		id := uint64(i + 1)
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: c.method})
		m := p.response(id, time.Second)
		if m.Error == nil || m.Error.Code != c.code || m.Error.Message != c.msg || m.Result != nil {
			t.Errorf("%s: %+v %s, want %s %q", c.method, m.Error, m.Result, c.code, c.msg)
		}
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 99, Method: "long"})
	if m := p.response(99, time.Second); m.Error == nil || len(m.Error.Message) > maxErrorMessageBytes || len(m.Error.Message) < maxErrorMessageBytes-1 || !strings.HasPrefix(m.Error.Message, "éé") {
		t.Fatalf("a long message: %d bytes", len(m.Error.Message))
	}
}

// A method's context ends with the request's own timeout (timeoutMs),
// capped by MaxRequestTimeout, or DefaultRequestTimeout without one: the
// client is answered timeout then, whether or not the method has returned.
func TestAMethodsContextEndsWithTheRequestsTimeout(t *testing.T) {
	deadlines := make(chan time.Duration, 8)
	late := make(chan struct{}) // closed once the request has timed out: ignore returns then
	release := sync.OnceFunc(func() { close(late) })
	f := newAppFixture(t, &Options{MaxRequestTimeout: 400 * time.Millisecond, DefaultRequestTimeout: 250 * time.Millisecond,
		Methods: map[string]Method{
			"wait": func(ctx context.Context, _ *Call) (any, error) {
				d, _ := ctx.Deadline()
				deadlines <- time.Until(d)
				<-ctx.Done()
				return nil, ctx.Err()
			},
			"ignore": func(ctx context.Context, _ *Call) (any, error) {
				<-ctx.Done()
				<-late
				return "late", nil
			},
		}})
	t.Cleanup(release) // before the fixture's: the server's Close waits for ignore
	p := f.dial()
	for _, c := range []struct {
		timeoutMs int64
		want      time.Duration
	}{{100, 100 * time.Millisecond}, {60_000, 400 * time.Millisecond}, {0, 250 * time.Millisecond}} {
		start := time.Now()
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "wait", TimeoutMs: c.timeoutMs})
		m := p.response(1, 2*time.Second)
		took := time.Since(start)
		if m.Error == nil || m.Error.Code != protocol.ErrTimeout {
			t.Fatalf("timeoutMs %d: %+v", c.timeoutMs, m.Error)
		}
		if d := <-deadlines; d > c.want || d < c.want-50*time.Millisecond {
			t.Errorf("timeoutMs %d: the context's deadline was %v away, want %v", c.timeoutMs, d, c.want)
		}
		if took < c.want-10*time.Millisecond || took > c.want+300*time.Millisecond {
			t.Errorf("timeoutMs %d: answered after %v, want about %v", c.timeoutMs, took, c.want)
		}
	}
	start := time.Now()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "ignore", TimeoutMs: 100})
	if m := p.response(2, time.Second); m.Error == nil || m.Error.Code != protocol.ErrTimeout || time.Since(start) > 250*time.Millisecond {
		t.Fatalf("a method that overstays: %+v after %v", m.Error, time.Since(start))
	}
	release() // it returns after its request was answered
	if m, ok := p.maybe(protocol.TypeResponse, 400*time.Millisecond); ok {
		t.Fatalf("a second answer for the same request: %+v", m)
	}
}

// A panicking method is answered internal on a connection that stays; the
// log names the method, never its params.
func TestAPanickingMethodIsInternalAndLoggedWithoutParams(t *testing.T) {
	var logs logBuf
	f := newAppFixture(t, &Options{Logger: logs.logger(), Methods: map[string]Method{
		"boom": func(_ context.Context, c *Call) (any, error) { panic("boom with " + string(c.Params)) },
		"ok":   func(context.Context, *Call) (any, error) { return 1, nil },
	}})
	p, other := f.dial(), f.dial()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "boom", Params: []byte(`"secret-param"`)})
	if m := p.response(1, time.Second); m.Error == nil || m.Error.Code != protocol.ErrInternal || m.Error.Message != "internal error" {
		t.Fatalf("panic answered with %+v", m.Error)
	}
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "ok"})
	if m := p.response(2, time.Second); string(m.Result) != "1" {
		t.Fatalf("after the panic: %+v", m)
	}
	other.send(protocol.Message{Type: protocol.TypeRequest, ID: 3, Method: "ok"})
	other.response(3, time.Second)
	if len(logs.lines("ERROR", "method panicked", "method=boom")) != 1 {
		t.Fatalf("the panic was not logged with the method's name:\n%s", logs.String())
	}
	// The panic's value quotes the params here, as an application's might:
	// the log keeps the value but the request's params are not added.
	if n := strings.Count(logs.String(), "secret-param"); n > 1 {
		t.Fatalf("the params were logged %d times:\n%s", n, logs.String())
	}
}

// At most MaxConcurrentRequests calls run at once per connection; the
// reader waits for a slot (it reads nothing meanwhile: a probe waits too),
// and everything is answered once the calls end.
func TestConcurrentCallsAreBoundedAndTheReaderWaits(t *testing.T) {
	release := make(chan struct{})
	var running, most atomic.Int32
	f := newAppFixture(t, &Options{MaxConcurrentRequests: 2, Methods: map[string]Method{
		"block": func(ctx context.Context, _ *Call) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			select {
			case <-release:
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}})
	p := f.dial()
	for id := uint64(1); id <= 3; id++ {
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "block", TimeoutMs: 10_000})
	}
	p.send(protocol.Message{Type: protocol.TypeProbe, ID: 9})
	waitFor(t, time.Second, "two calls running", func() bool { return running.Load() == 2 })
	if _, ok := p.maybe(protocol.TypeProbeAck, 200*time.Millisecond); ok {
		t.Fatal("the probe behind a third call was read while two calls held both slots")
	}
	if running.Load() != 2 {
		t.Fatalf("%d calls running, want 2", running.Load())
	}
	close(release)
	seen := map[uint64]bool{}
	acked := false
	for deadline := time.After(2 * time.Second); len(seen) < 3 || !acked; {
		select {
		case m := <-p.frames:
			switch m.Type {
			case protocol.TypeResponse:
				if string(m.Result) != `"done"` {
					t.Fatalf("response %+v", m)
				}
				seen[m.ID] = true
			case protocol.TypeProbeAck:
				acked = true
			}
		case <-deadline:
			t.Fatalf("answered %v, probe acked %v", seen, acked)
		}
	}
	if !seen[1] || !seen[2] || !seen[3] || most.Load() != 2 {
		t.Fatalf("answered %v, at most %d at once", seen, most.Load())
	}
}

// A connection's end ends its calls' contexts, and the server's Close
// waits for the calls to return: no method outlives its server.
func TestAConnectionsEndEndsItsCalls(t *testing.T) {
	started := make(chan struct{}, 1)
	var returned atomic.Bool
	f := newAppFixture(t, &Options{Methods: map[string]Method{
		"hang": func(ctx context.Context, _ *Call) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // real time: the close must wait for a method that lingers
			returned.Store(true)
			return nil, ctx.Err()
		},
	}})
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "hang", TimeoutMs: 60_000})
	<-started
	p.ws.CloseNow()
	f.srv.Close()
	if !returned.Load() {
		t.Fatal("Close returned before the connection's call did")
	}
}

// New refuses method names that are the library's, empty names and nil
// methods, and a default request timeout past the cap.
func TestNewRefusesReservedAndNilMethods(t *testing.T) {
	ok := func(context.Context, *Call) (any, error) { return nil, nil }
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Methods: map[string]Method{"wsready.presence": ok}}, `Options.Methods holds "wsready.presence": names starting "wsready." are the library's`},
		{Options{Methods: map[string]Method{"wsready.mine": ok}}, `"wsready.mine"`},
		{Options{Methods: map[string]Method{"": ok}}, "Options.Methods holds an empty method name"},
		{Options{Methods: map[string]Method{"x": nil}}, `Options.Methods holds "x" with a nil Method`},
		{Options{DefaultRequestTimeout: time.Minute}, "Options.DefaultRequestTimeout is 1m0s: at most MaxRequestTimeout (30s)"},
		{Options{MaxConcurrentRequests: -1}, "Options.MaxConcurrentRequests"},
	} {
		if _, err := New(&c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want %q", err, c.want)
		}
	}
	s := mustNew(t, &Options{MaxRequestTimeout: 2 * time.Second, Methods: map[string]Method{"wsready": ok, "a.b": ok}})
	defer s.Close()
	if s.opts.DefaultRequestTimeout != 2*time.Second {
		t.Fatalf("DefaultRequestTimeout's default under a 2s cap: %v", s.opts.DefaultRequestTimeout)
	}
}

// echo and time are the demo's: a server alone answers unknown_method for
// them (naming no method), one a Demo was made over answers them, and an
// application's own method of the same name stays its own.
func TestTheDemoMethodsAreTheDemos(t *testing.T) {
	app := newAppFixture(t, nil)
	p := app.dial()
	for id, method := range []string{"echo", "time"} {
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: uint64(id + 1), Method: method})
		if m := p.response(uint64(id+1), time.Second); m.Error == nil || m.Error.Code != protocol.ErrUnknownMethod || m.Error.Message != "unknown method" {
			t.Fatalf("%s on an application's server: %+v", method, m.Error)
		}
	}
	demo := newFixture(t, &Options{Methods: map[string]Method{"echo": func(context.Context, *Call) (any, error) { return "mine", nil }}})
	q := demo.dial()
	q.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "echo", Params: []byte(`1`)})
	if m := q.response(1, time.Second); string(m.Result) != `"mine"` {
		t.Fatalf("the application's echo: %s", m.Result)
	}
	q.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "time"})
	if m := q.response(2, time.Second); !strings.HasPrefix(string(m.Result), `{"unixMs":`) {
		t.Fatalf("the demo's time: %+v", m)
	}
}

// A server alone produces no feed: its feed topic is an ordinary one a
// subscriber creates, silent, and a publisher may use. With a Demo made
// over it, the feed ticks and a client's publish to it is refused.
func TestTheFeedIsTheDemos(t *testing.T) {
	app := newAppFixture(t, &Options{Publish: true})
	p := app.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: protocol.DefaultTopic})
	if m := p.next(protocol.TypeSubscribed, time.Second); m.Head != 0 {
		t.Fatalf("subscribed to feed on an application's server: %+v", m)
	}
	if m, ok := p.maybe(protocol.TypeUpdate, 200*time.Millisecond); ok {
		t.Fatalf("an application's server produced a feed update: %+v", m)
	}
	p.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: protocol.DefaultTopic, Data: []byte(`1`)})
	if m := p.response(1, time.Second); m.Error != nil {
		t.Fatalf("publish to feed without the demo: %+v", m.Error)
	}

	demo := newFixture(t, &Options{Publish: true})
	q := demo.dial()
	q.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: protocol.DefaultTopic})
	q.next(protocol.TypeSubscribed, time.Second)
	q.updatesOf(protocol.DefaultTopic, 2, time.Second)
	q.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: protocol.DefaultTopic, Data: []byte(`1`)})
	if m := q.response(1, time.Second); m.Error == nil || m.Error.Code != protocol.ErrForbidden {
		t.Fatalf("publish to the demo's running feed: %+v", m)
	}
	quiet := newFixture(t, &Options{Publish: true}, DemoOptions{NoFeed: true})
	r := quiet.dial()
	r.send(protocol.Message{Type: protocol.TypePublish, ID: 1, Topic: protocol.DefaultTopic, Data: []byte(`1`)})
	if m := r.response(1, time.Second); m.Error != nil {
		t.Fatalf("publish to feed on a demo node that does not produce it: %+v", m.Error)
	}
}

// Slow replies delays an application's answers too, and MaxPendingReplies
// still bounds them.
func TestSlowRepliesDelayMethodAnswers(t *testing.T) {
	f := newFixture(t, &Options{MaxPendingReplies: 1,
		Methods: map[string]Method{"ok": func(context.Context, *Call) (any, error) { return 1, nil }}}, DemoOptions{SlowReplyDelay: 300 * time.Millisecond})
	f.set("slowReplies", true)
	p := f.dial()
	start := time.Now()
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 1, Method: "ok"})
	p.send(protocol.Message{Type: protocol.TypeRequest, ID: 2, Method: "ok"})
	// The two calls run at once: whichever is second finds the one
	// pending reply taken.
	first := p.next(protocol.TypeResponse, time.Second)
	if first.Error == nil || first.Error.Code != protocol.ErrTooManyPending {
		t.Fatalf("the second while one waits: %+v", first)
	}
	if m := p.response(3-first.ID, time.Second); string(m.Result) != "1" || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("slow answer %+v after %v", m, time.Since(start))
	}
}

// A reader waiting for a request slot reads nothing, the sweep's pongs
// included: the sweep does not close a peer the server itself is not
// reading (it closed it one interval plus the grace after its ping).
func TestSweepSparesAPeerWhoseReaderWaitsForASlot(t *testing.T) {
	const interval, grace = 100 * time.Millisecond, 50 * time.Millisecond
	release := make(chan struct{})
	f := newAppFixture(t, &Options{MaxConcurrentRequests: 1, SweepInterval: interval, SweepGrace: grace, Methods: map[string]Method{
		"block": func(ctx context.Context, _ *Call) (any, error) {
			select {
			case <-release:
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}})
	p := f.dial()
	for id := uint64(1); id <= 2; id++ {
		p.send(protocol.Message{Type: protocol.TypeRequest, ID: id, Method: "block", TimeoutMs: 10_000})
	}
	serverTimersRun(8 * (interval + grace)) // well past the most a silent peer may live (3 intervals plus the grace)
	if st := f.srv.Stats(); st.Open != 1 || st.Limits.SweepClosed != 0 {
		t.Fatalf("open %d, swept %d: a peer whose reader the server held was swept", st.Open, st.Limits.SweepClosed)
	}
	close(release)
	seen := map[uint64]bool{}
	for deadline := time.After(2 * time.Second); len(seen) < 2; {
		select {
		case m := <-p.frames:
			if m.Type == protocol.TypeResponse {
				seen[m.ID] = true
			}
		case <-deadline:
			t.Fatalf("answered %v, want both", seen)
		}
	}
}
