//go:build js && wasm

package main

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/protocol"
)

// fakeTabs installs what tabs.go uses, as one browser profile's tabs
// would share them in one JS realm: navigator.locks (a lock manager with
// request, steal and an AbortSignal; __holdRejects keeps a stolen
// holder's rejection until __flushRejects, as a frozen page gets it only
// when it resumes), BroadcastChannel (instances in __channels in creation
// order, so the n-th driver's is __channels[n]; a frozen one neither posts
// nor receives until thawed, then gets what it missed), and
// add/removeEventListener on globalThis.
func fakeTabs(t *testing.T) {
	t.Helper()
	g := safejs.Global()
	saved := map[string]safejs.Value{}
	for _, name := range []string{"navigator", "BroadcastChannel", "addEventListener", "removeEventListener"} {
		saved[name], _ = g.Get(name)
	}
	js(t, nil, `
		const abortError = () => Object.assign(new Error('aborted'), { name: 'AbortError' });
		const held = new Map(), queues = new Map();
		globalThis.__holdRejects = false;
		globalThis.__pendingRejects = [];
		globalThis.__flushRejects = () => { for (const r of globalThis.__pendingRejects.splice(0)) r(); };
		const grant = (name, req) => {
			held.set(name, req);
			setTimeout(async () => {
				try { req.resolve(await req.cb({ name })); } catch (e) { req.reject(e); }
				if (held.get(name) === req) { held.delete(name); next(name); }
			}, 0);
		};
		const next = (name) => { const q = queues.get(name) || []; const n = q.shift(); if (n) grant(name, n); };
		const locks = {
			request(name, opts, cb) {
				return new Promise((resolve, reject) => {
					const req = { cb, resolve, reject };
					if (opts.signal) {
						if (opts.signal.aborted) { reject(abortError()); return; }
						opts.signal.addEventListener('abort', () => {
							const q = queues.get(name) || [];
							const i = q.indexOf(req);
							if (i >= 0) { q.splice(i, 1); reject(abortError()); }
						});
					}
					if (opts.steal) {
						const h = held.get(name);
						if (h) {
							held.delete(name);
							const rej = () => h.reject(abortError());
							if (globalThis.__holdRejects) globalThis.__pendingRejects.push(rej); else rej();
						}
						grant(name, req);
						return;
					}
					if (!held.has(name)) grant(name, req);
					else { if (!queues.has(name)) queues.set(name, []); queues.get(name).push(req); }
				});
			},
		};
		globalThis.navigator = { locks, onLine: true };
		const channels = new Map();
		globalThis.__channels = [];
		globalThis.BroadcastChannel = class {
			constructor(name) {
				this.name = name; this.onmessage = null; this.closed = false; this.frozen = false; this.missed = [];
				if (!channels.has(name)) channels.set(name, new Set());
				channels.get(name).add(this);
				globalThis.__channels.push(this);
			}
			postMessage(data) {
				if (this.closed) throw new Error('closed');
				if (this.frozen) return;
				const copy = structuredClone(data);
				for (const o of channels.get(this.name)) if (o !== this) setTimeout(() => o.deliver(copy), 0);
			}
			deliver(data) {
				if (this.closed) return;
				if (this.frozen) { this.missed.push(data); return; }
				if (this.onmessage) this.onmessage({ data });
			}
			thaw() { this.frozen = false; for (const d of this.missed.splice(0)) this.deliver(d); }
			close() { this.closed = true; channels.get(this.name).delete(this); }
		};
		globalThis.addEventListener = () => {};
		globalThis.removeEventListener = () => {};`)
	t.Cleanup(func() {
		for name, v := range saved {
			g.Set(name, v)
		}
	})
}

// tab is one driver as a page would see it: what its callbacks got.
type tab struct {
	d       *driver
	mu      sync.Mutex
	states  []map[string]any
	updates []string // topic#seq
	pres    []string // topic user event
	events  []string // kind detail
	errs    []string // the topic errors: topic code
	funcs   []safejs.Func
}

func (tb *tab) last() map[string]any {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.states) == 0 {
		return map[string]any{}
	}
	return tb.states[len(tb.states)-1]
}

func (tb *tab) got() (updates, pres []string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.updates...), append([]string(nil), tb.pres...)
}

// openTab starts a driver for ws://tabs.test/ws at stage 8 (tabs on by
// default) with topic feed, its callbacks recording into the tab.
func openTab(t *testing.T) *tab {
	t.Helper()
	return openTabWith(t, fakeGetter{"url": "ws://tabs.test/ws", "topic": "feed"})
}

// openTabWith is openTab with other options.
func openTabWith(t *testing.T, opts fakeGetter) *tab {
	t.Helper()
	tb := &tab{}
	cb := func(fn func(v safejs.Value)) safejs.Value {
		f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
			if len(args) > 0 {
				tb.mu.Lock()
				fn(args[0])
				tb.mu.Unlock()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		tb.funcs = append(tb.funcs, f)
		return f.Value()
	}
	o, err := bridge.ParseOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, set := opts["tabs"]; !set && !o.Tabs {
		t.Fatal("tabs is off by default")
	}
	d, err := newDriver(o, callbacks{
		onState: cb(func(v safejs.Value) {
			s := map[string]any{}
			for _, k := range []string{"ready", "leader", "follower", "tabs", "via"} {
				x, _ := v.Get(k)
				switch x.Type() {
				case safejs.TypeBoolean:
					s[k], _ = x.Bool()
				case safejs.TypeString:
					s[k], _ = x.String()
				}
			}
			tb.states = append(tb.states, s)
		}),
		onUpdate: func() safejs.Value { // onUpdate(topic, seq, epoch, n, bytes)
			f, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
				if len(args) > 1 {
					topic, _ := args[0].String()
					seq, _ := args[1].Float()
					tb.mu.Lock()
					tb.updates = append(tb.updates, topic+"#"+strconv.Itoa(int(seq)))
					tb.mu.Unlock()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			tb.funcs = append(tb.funcs, f)
			return f.Value()
		}(),
		onEvent: cb(func(v safejs.Value) {
			kind, _ := getString(v, "kind")
			detail, _ := getString(v, "detail")
			tb.events = append(tb.events, kind+" "+detail)
		}),
		onTopic: cb(func(v safejs.Value) {
			topic, _ := getString(v, "topic")
			code, _ := getString(v, "code")
			tb.errs = append(tb.errs, topic+" "+code)
		}),
		onPresence: cb(func(v safejs.Value) {
			topic, _ := getString(v, "topic")
			user, _ := getString(v, "user")
			ev, _ := getString(v, "event")
			tb.pres = append(tb.pres, topic+" "+user+" "+ev)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	tb.d = d
	t.Cleanup(func() {
		d.stop()
		jsRuns(20 * time.Millisecond) // the stopped driver's last callbacks run before their funcs are released
		for _, f := range tb.funcs {
			f.Release()
		}
	})
	return tb
}

// fakeGetter reads options from a Go map (as bridge's tests do).
type fakeGetter map[string]any

func (f fakeGetter) String(n string) (string, bool, error) {
	s, ok := f[n].(string)
	return s, ok, nil
}

func (f fakeGetter) Number(n string) (float64, bool, error) {
	x, ok := f[n].(float64)
	return x, ok, nil
}

func (f fakeGetter) Bool(n string) (bool, bool, error) {
	b, ok := f[n].(bool)
	return b, ok, nil
}

func socketCount(t *testing.T) int {
	t.Helper()
	n, _ := js(t, nil, `return globalThis.__sockets.length`).Int()
	return n
}

// serve plays the server on WebSocket i: open, a ping, and the feed
// subscribed.
func serve(t *testing.T, i int) {
	t.Helper()
	js(t, []string{"i"}, `const s = globalThis.__sockets[i];
		s.onopen({});
		s.onmessage({ data: '{"type":"welcome","session":"s'+i+'"}' });
		s.onmessage({ data: '{"type":"ping","intervalMs":1000}' });
		s.onmessage({ data: '{"type":"subscribed","topic":"feed","from":1,"head":0}' });`, i)
}

func frame(t *testing.T, i int, f string) {
	t.Helper()
	js(t, []string{"i", "f"}, `globalThis.__sockets[i].onmessage({ data: f })`, i, f)
}

// sentOn returns what was sent on WebSocket i.
func sentOn(t *testing.T, i int) []string {
	t.Helper()
	v := js(t, []string{"i"}, `return globalThis.__sockets[i].sent.join('\n')`, i)
	s, _ := v.String()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func closedWith(t *testing.T, i int) string {
	t.Helper()
	v := js(t, []string{"i"}, `const c = globalThis.__sockets[i].closed; return c ? c[0] + ' ' + c[1] : ''`, i)
	s, _ := v.String()
	return s
}

// Tabs of one origin and URL share one connection: the first leads and
// dials, the second follows (no socket of its own) and gets the leader's
// state and updates; its topics are subscribed by the leader and its
// presence events reach it alone; its request goes through the leader's
// socket and settles in its own tab. When the leader closes, the follower
// holds the lock within a moment and dials.
func TestTabsShareOneConnection(t *testing.T) {
	fakeWebSocket(t)
	fakeTabs(t)
	a := openTab(t)
	waitFor(t, "the first tab's socket", func() bool { return socketCount(t) == 1 })
	serve(t, 0)
	waitFor(t, "the first tab READY and leading", func() bool { s := a.last(); return s["ready"] == true && s["leader"] == true })
	if s := a.last(); s["tabs"] != "on" || s["follower"] != false || s["via"] != "websocket" {
		t.Fatalf("leader's state %v", s)
	}

	b := openTab(t)
	waitFor(t, "the second tab READY as a follower", func() bool { s := b.last(); return s["ready"] == true && s["follower"] == true })
	jsRuns(300 * time.Millisecond) // a follower that dialled anyway would have a socket by now
	if n := socketCount(t); n != 1 {
		t.Fatalf("%d sockets for two tabs", n)
	}
	if s := b.last(); s["leader"] != false || s["tabs"] != "on" {
		t.Fatalf("follower's state %v", s)
	}

	frame(t, 0, `{"type":"update","topic":"feed","seq":1,"data":{"v":1}}`)
	waitFor(t, "the update in both tabs", func() bool { ua, _ := a.got(); ub, _ := b.got(); return len(ua) == 1 && len(ub) == 1 })
	if ua, _ := a.got(); ua[0] != "feed#1" {
		t.Fatalf("leader got %v", ua)
	}

	// The follower's own topic, with presence: the leader subscribes it.
	b.d.q.Push(func(now time.Time) { b.d.subscribe("room", bridge.TabSub{Presence: true}, now) })
	waitFor(t, "the follower's topic subscribed by the leader", func() bool {
		for _, f := range sentOn(t, 0) {
			if strings.Contains(f, `"topic":"room"`) && strings.Contains(f, `"presence":true`) {
				return true
			}
		}
		return false
	})
	frame(t, 0, `{"type":"subscribed","topic":"room","from":1,"head":0}`)
	frame(t, 0, `{"type":"presence","topic":"room","event":"join","user":"ann"}`)
	frame(t, 0, `{"type":"update","topic":"room","seq":1,"data":"hi"}`)
	waitFor(t, "the presence event and the room's update in the follower", func() bool {
		ub, pb := b.got()
		return len(pb) == 1 && len(ub) == 2
	})
	ua, pa := a.got()
	ub, pb := b.got()
	if pb[0] != "room ann join" || ub[1] != "room#1" || len(pa) != 0 || len(ua) != 1 {
		t.Fatalf("leader: updates %v presence %v; follower: updates %v presence %v", ua, pa, ub, pb)
	}

	// A request from the follower goes out on the leader's socket and
	// settles in the follower.
	var answer safejs.Value
	var mu sync.Mutex
	p, err := b.d.request("echo", []byte(`{"x":1}`), client.RequestOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	done, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		mu.Lock()
		answer = args[0]
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer done.Release()
	p.Call("then", done.Value())
	var req protocol.Message
	waitFor(t, "the forwarded request on the leader's socket", func() bool {
		for _, f := range sentOn(t, 0) {
			if m, err := protocol.Decode([]byte(f)); err == nil && m.Type == protocol.TypeRequest && m.Method == "echo" {
				req = m
				return true
			}
		}
		return false
	})
	if string(req.Params) != `{"x":1}` || req.TimeoutMs <= 0 {
		t.Fatalf("forwarded %+v", req)
	}
	frame(t, 0, `{"type":"response","id":`+strconv.Itoa(int(req.ID))+`,"result":{"echoed":true}}`)
	waitFor(t, "the follower's request settled", func() bool { mu.Lock(); defer mu.Unlock(); return !answer.IsUndefined() })
	if ok, _ := answer.Get("ok"); jsTrue(ok) == false {
		t.Fatalf("the follower's request: %v", jsString(t, answer, "message"))
	}
	if r := jsString(t, answer, "result"); r != `{"echoed":true}` {
		t.Fatalf("result %s", r)
	}

	// The leader closes: the follower takes over and dials.
	closed := time.Now()
	if _, err := a.d.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower's socket", func() bool { return socketCount(t) == 2 })
	if took := time.Since(closed); took > time.Second {
		t.Fatalf("the takeover took %v: a closed leader's lock goes at once, no heartbeat timeout", took)
	}
	if c := closedWith(t, 0); c != "1000 client stopped" {
		t.Fatalf("the old leader's socket closed with %q", c)
	}
	serve(t, 1)
	// It subscribes its own topics, feed from its cursor: nothing lost.
	waitFor(t, "the new leader's subscribes", func() bool {
		room, feed := false, false
		for _, f := range sentOn(t, 1) {
			room = room || strings.Contains(f, `"topic":"room"`)
			feed = feed || strings.Contains(f, `"topic":"feed"`) && strings.Contains(f, `"since":1`)
		}
		return room && feed
	})
	frame(t, 1, `{"type":"subscribed","topic":"room","from":2,"head":1}`)
	waitFor(t, "the new leader READY", func() bool { s := b.last(); return s["ready"] == true && s["leader"] == true })
}

func jsTrue(v safejs.Value) bool { b, _ := v.Bool(); return b }

// subscribed is what the tab's topics() says is subscribed, read on its
// driver's loop, sorted.
func (tb *tab) subscribed(t *testing.T) string {
	t.Helper()
	out := make(chan string, 1)
	if !tb.d.q.Push(func(time.Time) {
		ts := tb.d.core.Topics()
		if tb.d.tabs != nil {
			tb.d.tabs.view(ts)
		}
		var names []string
		for _, s := range ts {
			if s.Subscribed {
				names = append(names, s.Topic)
			}
		}
		bridge.SortStrings(names)
		out <- strings.Join(names, " ")
	}) {
		t.Fatal("the driver stopped")
	}
	select {
	case s := <-out:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("the driver's loop did not run")
		return ""
	}
}

// count is how many of the tab's events (or topic errors) are s.
func (tb *tab) count(events bool, s string) int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	list := tb.errs
	if events {
		list = tb.events
	}
	n := 0
	for _, e := range list {
		if e == s {
			n++
		}
	}
	return n
}

// A follower tab hears the server's answers to the subscribes, which reach
// the leader's socket only (what client.subscribed() waits for): a topic
// taken is a "subscribed" event and subscribed in its topics(); a refusal
// is its topic error, once; both also for a topic the leader's connection
// had answered before the follower asked for it.
func TestTabsFollowerHearsTheSubscribesAnswers(t *testing.T) {
	fakeWebSocket(t)
	fakeTabs(t)
	a := openTab(t)
	waitFor(t, "the first tab's socket", func() bool { return socketCount(t) == 1 })
	serve(t, 0)
	waitFor(t, "the first tab READY and leading", func() bool { s := a.last(); return s["ready"] == true && s["leader"] == true })
	b := openTab(t)
	waitFor(t, "the second tab READY as a follower", func() bool { s := b.last(); return s["ready"] == true && s["follower"] == true })
	const heard = "subscribed the leader tab's connection has "
	waitFor(t, "the follower told that feed is taken", func() bool { return b.count(true, heard+"feed") == 1 })
	if got := b.subscribed(t); got != "feed" {
		t.Fatalf("the follower's topics() say %q subscribed; want feed", got)
	}

	// Answered before the follower asks: the leader's own topics.
	a.d.q.Push(func(now time.Time) {
		a.d.subscribe("own", bridge.TabSub{}, now)
		a.d.subscribe("deny", bridge.TabSub{}, now)
	})
	waitFor(t, "the leader's subscribes", func() bool {
		n := 0
		for _, f := range sentOn(t, 0) {
			if strings.Contains(f, `"topic":"own"`) || strings.Contains(f, `"topic":"deny"`) {
				n++
			}
		}
		return n == 2
	})
	frame(t, 0, `{"type":"subscribed","topic":"own","from":1,"head":0}`)
	frame(t, 0, `{"type":"error","topic":"deny","code":"forbidden","message":"no"}`)
	waitFor(t, "the leader's answers", func() bool { return a.subscribed(t) == "feed own" })
	sent := len(sentOn(t, 0))
	b.d.q.Push(func(now time.Time) {
		b.d.subscribe("own", bridge.TabSub{}, now)
		b.d.subscribe("deny", bridge.TabSub{}, now)
	})
	waitFor(t, "the follower told own is taken and deny refused", func() bool {
		return b.count(true, heard+"own") == 1 && b.count(false, "deny forbidden") == 1
	})
	if got := b.subscribed(t); got != "feed own" {
		t.Fatalf("the follower's topics() say %q subscribed; want feed own", got)
	}
	if s := sentOn(t, 0); len(s) != sent {
		t.Fatalf("the leader asked the server again for what it had: %v", s[sent:])
	}

	// Answered after the follower asks: pending until the frame comes.
	b.d.q.Push(func(now time.Time) {
		b.d.subscribe("late", bridge.TabSub{}, now)
		b.d.subscribe("late-deny", bridge.TabSub{}, now)
	})
	waitFor(t, "the leader's subscribes for the follower", func() bool {
		n := 0
		for _, f := range sentOn(t, 0) {
			if strings.Contains(f, `"topic":"late"`) || strings.Contains(f, `"topic":"late-deny"`) {
				n++
			}
		}
		return n == 2
	})
	jsRuns(100 * time.Millisecond) // nothing may tell the follower before the server answers
	if got := b.subscribed(t); got != "feed own" || b.count(true, heard+"late") != 0 || b.count(false, "late-deny forbidden") != 0 {
		t.Fatalf("before the server answered, the follower's topics() say %q subscribed, events %v, errors %v", got, b.events, b.errs)
	}
	frame(t, 0, `{"type":"subscribed","topic":"late","from":1,"head":0}`)
	frame(t, 0, `{"type":"error","topic":"late-deny","code":"forbidden","message":"no"}`)
	waitFor(t, "the follower told late is taken and late-deny refused", func() bool {
		return b.count(true, heard+"late") == 1 && b.count(false, "late-deny forbidden") == 1
	})
	// Another announce (every bridge.Announce; here a change of topics)
	// brings the answers again: told once is told once.
	b.d.q.Push(func(now time.Time) { b.d.subscribe("other", bridge.TabSub{}, now) })
	jsRuns(200 * time.Millisecond) // the announce and its answers go round
	if b.count(true, heard+"late") != 1 || b.count(false, "late-deny forbidden") != 1 || b.count(false, "deny forbidden") != 1 || b.count(true, heard+"own") != 1 {
		t.Fatalf("the follower was told twice: events %v, errors %v", b.events, b.errs)
	}
	if got := b.subscribed(t); got != "feed late own" {
		t.Fatalf("the follower's topics() say %q subscribed; want feed late own", got)
	}

	// Given up and asked again: answered again.
	b.d.q.Push(func(now time.Time) { b.d.unsubscribe("deny", now) })
	b.d.q.Push(func(now time.Time) { b.d.subscribe("deny", bridge.TabSub{}, now) })
	waitFor(t, "the follower told again that deny is refused", func() bool { return b.count(false, "deny forbidden") == 2 })
}

// parseAnswers keeps the well-formed lines only, and reads no more than
// maxAnswers lines.
func TestParseAnswers(t *testing.T) {
	got := parseAnswers("a +\nb -forbidden\nbad topic! +\nc -\nd -Bad Code\ne\nf ++\n\ng -no_odd")
	want := map[string]string{"a": "", "b": "forbidden", "g": "no_odd"}
	if len(got) != len(want) {
		t.Fatalf("parseAnswers: %v; want %v", got, want)
	}
	for k, v := range want {
		if c, ok := got[k]; !ok || c != v {
			t.Fatalf("parseAnswers: %v; want %v", got, want)
		}
	}
	long := strings.Repeat("x y\n", maxAnswers) + "z +\n"
	if got := parseAnswers(long); len(got) != 0 {
		t.Fatalf("parseAnswers read past maxAnswers lines: %v", got)
	}
}

// A frozen leader keeps its lock but stops its heartbeat: a follower takes
// the lock ({steal: true}) within about a second and dials; the old leader,
// when it runs again and hears the new one (or learns its lock was
// stolen), steps down and closes its socket without dialling again.
func TestTabsFrozenLeaderIsReplaced(t *testing.T) {
	for _, order := range []string{"heartbeat first", "rejection first"} {
		t.Run(order, func(t *testing.T) {
			fakeWebSocket(t)
			fakeTabs(t)
			a := openTab(t)
			waitFor(t, "the leader's socket", func() bool { return socketCount(t) == 1 })
			serve(t, 0)
			b := openTab(t)
			waitFor(t, "the follower READY", func() bool { s := b.last(); return s["ready"] == true && s["follower"] == true })

			js(t, nil, `globalThis.__holdRejects = true; globalThis.__channels[0].frozen = true`)
			frozen := time.Now()
			waitFor(t, "the follower's own socket", func() bool { return socketCount(t) == 2 })
			// About a second: not before the silence, and not much after it
			// (the bound leaves room for a loaded machine).
			if took := time.Since(frozen); took < bridge.SilentAfter || took > 3*time.Second {
				t.Fatalf("took over %v after the freeze", took)
			}
			serve(t, 1)
			waitFor(t, "the new leader READY", func() bool { s := b.last(); return s["ready"] == true && s["leader"] == true })

			if order == "heartbeat first" {
				js(t, nil, `globalThis.__channels[0].thaw()`)
			} else {
				js(t, nil, `globalThis.__flushRejects()`)
			}
			waitFor(t, "the old leader stepping down", func() bool { return closedWith(t, 0) != "" })
			if c := closedWith(t, 0); !strings.HasPrefix(c, "1000 ") {
				t.Fatalf("the old leader closed with %q", c)
			}
			js(t, nil, `globalThis.__channels[0].thaw(); globalThis.__flushRejects()`)
			waitFor(t, "the old leader following", func() bool { s := a.last(); return s["follower"] == true && s["ready"] == true })
			jsRuns(1500 * time.Millisecond) // a second heartbeat timeout (browser timers): nobody steals back
			if n := socketCount(t); n != 2 {
				t.Fatalf("%d sockets after the old leader stepped down, want 2", n)
			}
			if s := b.last(); s["leader"] != true {
				t.Fatalf("the new leader lost its lead: %v", s)
			}
		})
	}
}

// Without Web Locks (or BroadcastChannel) every tab keeps its own
// connection and says so.
func TestTabsUnsupported(t *testing.T) {
	fakeWebSocket(t)
	fakeTabs(t)
	js(t, nil, `globalThis.navigator = { onLine: true }`)
	a := openTab(t)
	b := openTab(t)
	waitFor(t, "a socket per tab", func() bool { return socketCount(t) == 2 })
	waitFor(t, "their states", func() bool { return a.last()["tabs"] == "unsupported" && b.last()["tabs"] == "unsupported" })
	if a.last()["leader"] != false || a.last()["follower"] != false {
		t.Fatalf("%v", a.last())
	}
}

// A leader alone posts no update to the other tabs (each post is main-thread
// work for nobody). A follower that announces its cursor gets the updates
// past it the leader delivered meanwhile, in order, then every update; once
// it says goodbye the leader posts none again.
func TestTabsRelayOnlyWhileAFollowerExists(t *testing.T) {
	fakeWebSocket(t)
	fakeTabs(t)
	js(t, nil, `const post = BroadcastChannel.prototype.postMessage;
		globalThis.__kinds = [];
		BroadcastChannel.prototype.postMessage = function (d) { globalThis.__kinds.push(d.k); return post.call(this, d); };`)
	posted := func() int {
		n, _ := js(t, nil, `return globalThis.__kinds.filter((k) => k === 'u').length`).Int()
		return n
	}
	a := openTab(t)
	waitFor(t, "the first tab's socket", func() bool { return socketCount(t) == 1 })
	serve(t, 0)
	waitFor(t, "the first tab READY and leading", func() bool { s := a.last(); return s["ready"] == true && s["leader"] == true })
	for i := 1; i <= 3; i++ {
		frame(t, 0, `{"type":"update","topic":"feed","seq":`+strconv.Itoa(i)+`,"data":{"v":1}}`)
	}
	waitFor(t, "three updates in the leader", func() bool { ua, _ := a.got(); return len(ua) == 3 })
	jsRuns(50 * time.Millisecond) // a post, if the leader makes one, has its turn
	if n := posted(); n != 0 {
		t.Fatalf("the leader, alone, posted %d updates to the other tabs", n)
	}

	// A follower whose cursor is feed#1 (a tab that led before, or resumed
	// its session's cursor).
	b := openTabWith(t, fakeGetter{"url": "ws://tabs.test/ws"})
	waitFor(t, "the second tab READY as a follower", func() bool { s := b.last(); return s["ready"] == true && s["follower"] == true })
	b.d.q.Push(func(now time.Time) { b.d.subscribe("feed", bridge.TabSub{Since: 1, HasSince: true}, now) })
	waitFor(t, "the follower caught up", func() bool { ub, _ := b.got(); return len(ub) == 2 })
	frame(t, 0, `{"type":"update","topic":"feed","seq":4,"data":{"v":1}}`)
	waitFor(t, "the next update in the follower", func() bool { ub, _ := b.got(); return len(ub) >= 3 })
	jsRuns(50 * time.Millisecond) // a duplicate, if one comes, has its turn
	if ub, _ := b.got(); strings.Join(ub, " ") != "feed#2 feed#3 feed#4" {
		t.Fatalf("the follower got %v, want feed#2 feed#3 feed#4", ub)
	}
	if n := posted(); n != 3 {
		t.Fatalf("the leader posted %d updates, want 3 (two caught up, one relayed)", n)
	}

	// The follower goes: the leader posts no update again.
	if _, err := b.d.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower's goodbye", func() bool {
		n, _ := js(t, nil, `return globalThis.__kinds.filter((k) => k === 'bye').length`).Int()
		return n > 0
	})
	jsRuns(50 * time.Millisecond) // the leader takes the goodbye in
	frame(t, 0, `{"type":"update","topic":"feed","seq":5,"data":{"v":1}}`)
	waitFor(t, "the fifth update in the leader", func() bool { ua, _ := a.got(); return len(ua) == 5 })
	jsRuns(50 * time.Millisecond) // a post, if the leader makes one, has its turn
	if n := posted(); n != 3 {
		t.Fatalf("the leader posted %d updates, want 3: none once the follower left", n)
	}
}

// A leader alone beats once per bridge.AloneHeartbeat, not every
// bridge.Heartbeat (a post nobody hears is main-thread work); a tab that
// starts hears it at once all the same (its announce is answered), and
// while it follows the leader beats at bridge.Heartbeat; once it goes, the
// slow beat again.
func TestTabsLeaderAloneBeatsSlowly(t *testing.T) {
	fakeWebSocket(t)
	fakeTabs(t)
	js(t, nil, `const post = BroadcastChannel.prototype.postMessage;
		globalThis.__kinds = [];
		BroadcastChannel.prototype.postMessage = function (d) { globalThis.__kinds.push(d.k); return post.call(this, d); };`)
	beats := func() int {
		n, _ := js(t, nil, `return globalThis.__kinds.filter((k) => k === 'hb').length`).Int()
		return n
	}
	a := openTab(t)
	waitFor(t, "the first tab's socket", func() bool { return socketCount(t) == 1 })
	serve(t, 0)
	waitFor(t, "the first tab READY and leading", func() bool { s := a.last(); return s["ready"] == true && s["leader"] == true })
	n0 := beats()
	pingFor(t, 0, 1500*time.Millisecond)
	if n := beats() - n0; n > 1 {
		t.Fatalf("the leader, alone, beat %d times in 1.5 s (want at most 1: once per %v)", n, bridge.AloneHeartbeat)
	}
	b := openTabWith(t, fakeGetter{"url": "ws://tabs.test/ws"})
	waitFor(t, "the second tab READY as a follower", func() bool { s := b.last(); return s["ready"] == true && s["follower"] == true })
	n1 := beats()
	pingFor(t, 0, 1500*time.Millisecond)
	if n := beats() - n1; n < 3 {
		t.Fatalf("the leader, followed, beat %d times in 1.5 s (want about 6: every %v)", n, bridge.Heartbeat)
	}
	if s := b.last(); s["follower"] != true || s["ready"] != true {
		t.Fatalf("the follower took over: %v", s)
	}
	if _, err := b.d.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower's goodbye", func() bool {
		n, _ := js(t, nil, `return globalThis.__kinds.filter((k) => k === 'bye').length`).Int()
		return n > 0
	})
	pingFor(t, 0, 300*time.Millisecond) // the leader takes the goodbye in
	n2 := beats()
	pingFor(t, 0, 1500*time.Millisecond)
	if n := beats() - n2; n > 1 {
		t.Fatalf("the leader, alone again, beat %d times in 1.5 s (want at most 1)", n)
	}
}

// pingFor keeps WebSocket i alive for d: the server's ping (1 s interval,
// as serve announces) every 250 ms.
func pingFor(t *testing.T, i int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		frame(t, i, `{"type":"ping","intervalMs":1000}`)
		jsRuns(250 * time.Millisecond)
	}
}

// What a leader alone keeps for a follower's catch-up is bounded in count
// and bytes, the newest kept.
func TestTabsKeptUpdatesAreBounded(t *testing.T) {
	var tb tabs
	small, big := []byte(`{"v":1}`), []byte(`"`+strings.Repeat("x", protocol.MaxFrameBytes-100)+`"`)
	for i := range 5000 {
		data := small
		if i%500 == 0 {
			data = big
		}
		tb.update(client.Update{Topic: "feed", Seq: int64(i + 1), Data: data})
		sum := 0
		for _, u := range tb.kept {
			sum += len(u.Data)
		}
		if len(tb.kept) > relayKeep || sum > relayKeepBytes || sum != tb.keptBytes {
			t.Fatalf("after %d updates: %d kept, %d bytes (counted %d)", i+1, len(tb.kept), sum, tb.keptBytes)
		}
	}
	if n := len(tb.kept); n == 0 || tb.kept[n-1].Seq != 5000 {
		t.Fatalf("the newest is not kept: %d kept", n)
	}
}
