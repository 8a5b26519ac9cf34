//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/internal/stages"
)

// driver runs one core in the browser. JS callbacks (socket events, the
// timer, online/offline, visibility, other tabs, API calls) only push onto
// the queue; one goroutine (loop) drains it, steps the core and carries out
// its effects (apply). A frame received is the exception: its step runs in
// its callback when nothing is queued nor running (stepNow). The concerns live in their own files: transport.go,
// websocket.go and http.go (sockets), buffered.go (send-side liveness),
// tabs.go (one connection for many tabs), timer.go, network.go
// (online/offline and visibility), token.go, promise.go (requests as
// Promises), js.go.
type driver struct {
	urls    []string
	nextURL int
	cfg     client.Config
	core    *client.Core
	q       *bridge.Queue
	cb      callbacks

	open     opener // how sockets reach the server
	sockets  map[client.SocketID]transport
	buf      bufWatch
	timer    *timer
	watch    watcher
	promises map[uint64]promise
	tickets  map[uint64]uint64 // JS ticket (ticketKey) -> request id, while pending
	aborted  map[uint64]bool   // tickets (ticketKey) aborted before their request step ran (at most maxAborted)
	handle   []safejs.Func     // the page's handle: released by its dispose, so state() works after close()
	stopped  bool
	busy     bool           // a step is running (loop or stepNow): a frame waits in the queue
	clock    stepClock      // the steps' time (clock.go)
	onStop   []safejs.Value // resolve functions of close() promises

	// The app's topics (subscribe), and what the core is subscribed to by
	// this driver: the app's, and while this tab leads the other tabs'
	// (syncTopics). topic -> presence.
	local      map[string]bridge.TabSub
	coreTopics map[string]bool
	tabs       *tabs // nil unless tabsMode is TabsOn
	tabsMode   bridge.Tabs

	// The last update's topic and its JS string (deliver).
	updTopic   string
	updTopicJS safejs.Value
	// out is the Uint8Array deliver copies an update's data into, outCap
	// its length (growOut).
	out    safejs.Value
	outCap int
}

// callbacks are the page's functions (undefined when not given).
type callbacks struct {
	onState, onUpdate, onEvent, onRecord, onLost, onTopic, onPresence, token safejs.Value
	// warm is wsready.js's takeWarm (the socket preconnect() opened), for
	// the first dial only: dial clears it. warmLock is its takeWarmLock
	// (the tabs' lock preconnect() took), for the first lock request.
	warm, warmLock safejs.Value
	// frameOnly is wsready.js's: it wraps a socket's message handler so
	// that it is handed event.data, not the event (openWebSocket).
	frameOnly safejs.Value
}

func newDriver(o bridge.Options, cb callbacks) (*driver, error) {
	off, err := stages.Disabled(o.Stage)
	if err != nil {
		return nil, err
	}
	cfg := o.Config(client.Config{Disable: off, Rand: random})
	cfg.Trace = isFunc(cb.onEvent)
	cfg.Auth = isFunc(cb.token)
	d := &driver{urls: o.URLs, cb: cb, q: bridge.NewQueue(),
		clock: stepClock{every: fullEvery}, open: openTransport, sockets: map[client.SocketID]transport{}, promises: map[uint64]promise{},
		tickets: map[uint64]uint64{}, aborted: map[uint64]bool{},
		local: map[string]bridge.TabSub{}, coreTopics: map[string]bool{}, tabsMode: bridge.TabsOff}
	if o.Tabs {
		d.tabs, d.tabsMode = newTabs(d, o.URL)
		if d.tabs != nil {
			d.tabs.first = cb.warmLock
		}
		// Until the lock is granted this tab follows whoever holds it.
		cfg.Follower = d.tabs != nil
	}
	d.cfg = cfg
	d.buf.on = !cfg.Disable.WhereUsersAre
	d.core, err = client.New(cfg)
	if err != nil {
		if d.tabs != nil {
			d.tabs.close(false)
		}
		return nil, err
	}
	d.timer, err = newTimer(func() { d.q.Push(func(now time.Time) { d.core.Tick(now) }) })
	if err != nil {
		return nil, err
	}
	if err := d.watchNetworkAndVisibility(); err != nil {
		d.watch.release()
		d.timer.release()
		return nil, err
	}
	go d.loop()
	d.q.Push(func(now time.Time) {
		d.core.Start(now)
		if d.tabs != nil {
			d.tabs.start(now)
		}
	})
	return d, nil
}

func (d *driver) loop() {
	for range d.q.Ready() {
		if d.busy {
			// A frame's step is running in its callback (stepNow) and the
			// page, called from it, called the client: syscall/js runs
			// every goroutine before that call returns, this one too. The
			// queue waits for the step to end (it wakes the loop): the core
			// is never stepped while its effects are being read.
			continue
		}
		d.steps(d.q.Take(), false)
		if d.stopped {
			// Steps queued behind the stop still run against the stopped
			// core, so every request made meanwhile settles (NotReady).
			for _, step := range d.q.Close() {
				step(time.Now())
				d.apply()
			}
			d.release()
			return
		}
	}
}

// steps runs steps (the loop's batch, or stepNow's one: a frame) and
// carries out their effects, then lets the other tabs know this one is
// alive. A frame's step reads only the monotonic clock (clock.go).
func (d *driver) steps(steps []bridge.Job, frame bool) {
	d.busy = true
	var now time.Time
	for _, step := range steps {
		if frame {
			now = d.clock.frame()
		} else {
			now = d.clock.now()
		}
		step(now)
		d.apply()
	}
	if d.tabs != nil {
		if len(steps) == 0 {
			now = d.clock.now()
		}
		d.tabs.beatSoon(now) // the last step's time: a read of the clock is a call into JavaScript
	}
	d.busy = false
}

// stepNow runs step inside the browser's callback that calls it (a frame
// received) when the driver is idle: nothing queued and no step running
// (a step's effects call the page, whose calls come back as callbacks).
// That saves a hop to the loop's goroutine per frame (a wake and two
// switches of Go's scheduler). It never blocks: the core's steps are pure
// and the driver's effects only call JavaScript. Otherwise step is
// queued, behind what is already there, as before. A stop it made is
// left to the loop, which releases what the driver holds. It reports
// whether the loop was woken (the step queued, the page's calls queued
// meanwhile, or the stop): called from a wasm export, which returns to
// JavaScript without running goroutines, the caller must let it run.
func (d *driver) stepNow(step bridge.Job) (wake bool) {
	if d.busy || !d.q.Idle() {
		d.q.Push(step)
		return true
	}
	d.steps([]bridge.Job{step}, true)
	if d.stopped || !d.q.Idle() {
		d.q.Wake() // the loop sees stopped, or takes what the page queued meanwhile
		return true
	}
	return false
}

// apply carries out the core's effects. The sockets sent on are looked at
// for their buffered bytes after the batch: that steps the core again,
// which must not happen while its effects are being read.
func (d *driver) apply() {
	for {
		var sentOn []client.SocketID
		for _, e := range d.core.Effects() {
			switch e.Kind {
			case client.EffDial:
				d.dial(e.Socket, e.Transport, e.Token)
			case client.EffSend:
				if d.send(e.Socket, e.Frame) && d.buf.on {
					sentOn = append(sentOn, e.Socket)
				}
			case client.EffClose:
				d.closeSocket(e.Socket, e.Code, e.Reason)
			case client.EffTimer:
				d.timer.set(e.At)
			case client.EffSettle:
				if d.tabs == nil || !d.tabs.answer(e.ID, e.Result, e.Err) {
					d.settle(e.ID, e.Result, e.Err)
				}
			case client.EffState:
				d.call(d.cb.onState, bridge.StateValue(e.State, d.tabsMode))
				if d.tabs != nil && d.tabs.leading && e.State.Ended != client.Stopped {
					d.tabs.state(e.State) // a stop is this tab's: the next leader takes over
				}
				if e.State.Ended == client.Stopped {
					d.stopped = true
				}
			case client.EffUpdate:
				if d.tabs != nil && d.tabs.leading {
					d.tabs.update(e.Update)
				}
				if d.wants(e.Update.Topic) && isFunc(d.cb.onUpdate) {
					d.deliver(e.Update)
				}
			case client.EffPresence:
				if d.tabs != nil && d.tabs.leading {
					d.tabs.presence(e.Presence)
				}
				if d.tabs == nil || d.local[e.Presence.Topic].Presence {
					d.call(d.cb.onPresence, bridge.PresenceValue(e.Presence))
				}
			case client.EffLog:
				if d.tabs != nil && d.tabs.leading {
					d.tabs.logged(e.Event.Kind)
				}
				d.call(d.cb.onEvent, bridge.EventValue(e.Event))
			case client.EffRecord:
				d.call(d.cb.onRecord, bridge.RecordValue(e.Record))
			case client.EffToken:
				d.askToken(e.Force)
			case client.EffContinuityLost:
				if d.tabs != nil && d.tabs.leading {
					d.tabs.lost(e.Lost)
				}
				if d.wants(e.Lost.Topic) {
					d.call(d.cb.onLost, bridge.LostValue(e.Lost))
				}
			case client.EffTopicError:
				if d.tabs != nil && d.tabs.leading {
					d.tabs.topicError(e.TopicError)
				}
				if d.wants(e.TopicError.Topic) {
					d.call(d.cb.onTopic, bridge.TopicErrorValue(e.TopicError))
				}
			case client.EffProbeHTTP:
				d.probeHTTP()
			case client.EffForward:
				if d.tabs != nil {
					d.tabs.forward(e.ID, e.Frame)
				}
			}
		}
		if len(sentOn) == 0 {
			return
		}
		for _, id := range sentOn {
			d.noteBuffered(id)
		}
	}
}

// wants reports whether the app asked for topic's updates: with tabs the
// core also holds the other tabs' topics (while this one leads), and a
// follower's may still hold what it subscribed for them.
func (d *driver) wants(topic string) bool {
	if d.tabs == nil {
		return true
	}
	_, ok := d.local[topic]
	return ok || topic == d.cfg.Topic
}

// syncTopics subscribes the core to what is wanted (the app's topics, and
// while this tab leads the other tabs') and unsubscribes it from the rest.
func (d *driver) syncTopics(now time.Time) {
	want := d.local
	if d.tabs != nil && d.tabs.leading {
		want = d.tabs.remote.Want(d.local)
	}
	sub, unsub := bridge.DiffTopics(d.coreTopics, want)
	for _, t := range unsub {
		d.core.Unsubscribe(t, now)
		delete(d.coreTopics, t)
	}
	for _, c := range sub {
		d.core.SubscribeWith(c.Topic, client.SubscribeOptions{Since: c.Sub.Since, HasSince: c.Sub.HasSince, Presence: c.Sub.Presence}, now)
		d.coreTopics[c.Topic] = c.Sub.Presence
	}
}

// subscribe and unsubscribe are the app's (the JS wrapper calls them for a
// topic's first subscriber, a change of presence, and its last).
func (d *driver) subscribe(topic string, s bridge.TabSub, now time.Time) {
	d.local[topic] = s
	d.syncTopics(now)
	if d.tabs != nil && !d.tabs.leading {
		d.tabs.announce(now)
	}
}

func (d *driver) unsubscribe(topic string, now time.Time) {
	delete(d.local, topic)
	d.syncTopics(now)
	if d.tabs != nil && !d.tabs.leading {
		d.tabs.announce(now)
	}
}

// announced is what this (follower) tab asks the leader for: the app's
// topics and the service topic, each from this tab's cursor if it has
// one, so a leader that subscribes for it first replays what it missed.
func (d *driver) announced() map[string]bridge.TabSub {
	out := make(map[string]bridge.TabSub, len(d.local)+1)
	for t, s := range d.local {
		out[t] = bridge.TabSub{Presence: s.Presence, Since: s.Since, HasSince: s.HasSince}
	}
	if d.cfg.Topic != "" {
		if _, ok := out[d.cfg.Topic]; !ok {
			out[d.cfg.Topic] = bridge.TabSub{}
		}
	}
	for _, c := range d.core.Cursors() {
		if s, ok := out[c.Topic]; ok {
			s.Since, s.HasSince = c.Seq, true
			out[c.Topic] = s
		}
	}
	return out
}

// hidden reports whether the page is hidden (false without a page).
func (d *driver) hidden() bool {
	if d.watch.doc.Type() != safejs.TypeObject {
		return false
	}
	v, err := d.watch.doc.Get("hidden")
	if err != nil {
		return false
	}
	b, _ := v.Bool()
	return b
}

// event reports a driver-side trace event (a failed send or close, the
// tab's part).
func (d *driver) event(kind string, s client.SocketID, detail string) {
	d.call(d.cb.onEvent, bridge.EventValue(client.Event{Kind: kind, Socket: s, Detail: detail}))
}

// call invokes a page callback; a callback that throws is reported on the
// console, never allowed to stop the driver.
func (d *driver) call(fn safejs.Value, arg map[string]any) {
	if !isFunc(fn) {
		return
	}
	v, err := jsObject(arg)
	d.invoke(fn, v, err)
}

// invoke calls fn with v, unless making v failed (err); a failure is
// reported on the console.
func (d *driver) invoke(fn safejs.Value, v safejs.Value, err error) {
	if err == nil {
		_, err = fn.Invoke(v)
	}
	if err != nil {
		consoleError("wsready: callback failed: " + err.Error())
	}
}

// deliver hands u to the page's onUpdate in one call, onUpdate(topic,
// seq, epoch, n, bytes), which wsready.js makes the page's object of (the
// data is bytes' first n, UTF-8, read during the call): an update is the
// per-frame path, and building the object from Go cost five crossings of
// the JS boundary more (Object, new, a Set per key), each a js.Value with
// its finalizer. The data goes by copy into one Uint8Array kept across
// updates, not as a JS string: a string made from Go is a js.Value with a
// finalizer, one registered and run per update (and the string's Go copy
// allocated first). The topic's JS string is kept for the next update of
// the same topic (one, so the cache needs no bound). When the data is in
// the frame being stepped and the page holds that frame as text (inText:
// export.go) it goes as its offset there instead (at; -1 otherwise):
// nothing copied, nothing decoded.
func (d *driver) deliver(u client.Update) {
	if u.Topic != d.updTopic || d.updTopicJS.Type() != safejs.TypeString {
		v, err := safejs.ValueOf(u.Topic)
		if err != nil {
			consoleError("wsready: callback failed: " + err.Error())
			return
		}
		d.updTopic, d.updTopicJS = u.Topic, v
	}
	at := -1
	if inText != nil && len(u.Data) > 0 {
		at = indexIn(inText, u.Data)
	}
	if at < 0 && (len(u.Data) > d.outCap || d.out.Type() != safejs.TypeObject) {
		if err := d.growOut(len(u.Data)); err != nil {
			consoleError("wsready: callback failed: " + err.Error())
			return
		}
	}
	if at < 0 && len(u.Data) > 0 {
		if _, err := safejs.CopyBytesToJS(d.out, u.Data); err != nil {
			consoleError("wsready: callback failed: " + err.Error())
			return
		}
	}
	if _, err := d.cb.onUpdate.Invoke(d.updTopicJS, float64(u.Seq), float64(u.Epoch), len(u.Data), d.out, at); err != nil {
		consoleError("wsready: callback failed: " + err.Error())
	}
}

// indexIn is where data last is in frame, -1 nowhere (any place it is
// holds the same text). Not bytes.Index: package bytes costs the wasm 3.9
// KB of brotli, and a frame is short, its data usually at its end.
func indexIn(frame, data []byte) int {
	for i := len(frame) - len(data); i >= 0; i-- {
		if frame[i] == data[0] && string(frame[i:i+len(data)]) == string(data) {
			return i
		}
	}
	return -1
}

// minOut is the first size of deliver's buffer (1 KiB); it doubles from
// there to fit the largest update's data, at most protocol.MaxFrameBytes
// (64 KiB: the data came in one frame).
const minOut = 1 << 10

// growOut makes deliver's buffer a new Uint8Array of at least n bytes.
func (d *driver) growOut(n int) error {
	c := max(d.outCap, minOut)
	for c < n {
		c *= 2
	}
	ctor, err := safejs.Global().Get("Uint8Array")
	if err != nil {
		return err
	}
	v, err := ctor.New(c)
	if err != nil {
		return err
	}
	d.out, d.outCap = v, c
	return nil
}

// release runs after Stop: it closes every socket the driver still knows
// (the current one is already closing; at stages 0-2 replaced sockets may
// still be open), leaves the tabs' election, drops every callback but the
// page's handle, and resolves the close() promises.
func (d *driver) release() {
	for id := range d.sockets {
		d.closeSocket(id, 1000, "client stopped")
		d.forget(id)
	}
	if d.tabs != nil {
		d.tabs.close(true)
	}
	d.buf.release()
	d.timer.release()
	d.watch.release()
	for _, resolve := range d.onStop {
		resolve.Invoke()
	}
	d.onStop = nil
}

// stop asks the core to stop and returns a Promise that resolves once every
// socket is closed and every callback released.
func (d *driver) stop() (safejs.Value, error) {
	p, resolve, err := newPromise()
	if err != nil {
		return safejs.Undefined(), err
	}
	if !d.q.Push(func(now time.Time) {
		d.onStop = append(d.onStop, resolve)
		d.core.Stop(now)
	}) {
		resolve.Invoke() // already stopped
	}
	return p, nil
}

// dispose releases the page's handle; the JS wrapper calls it when the
// handle is garbage collected.
func (d *driver) dispose() {
	for _, f := range d.handle {
		f.Release()
	}
	d.handle = nil
}
