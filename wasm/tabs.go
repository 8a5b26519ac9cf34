//go:build js && wasm

package main

import (
	"math"
	"strconv"
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/protocol"
)

// Many tabs, one connection (stage 8). The tabs of one origin that connect
// to one server URL elect a leader with a Web Lock named "wsready:<url>":
// the tab whose lock request is granted leads, and only its core holds a
// connection. Every other tab's core follows (client.Config.Follower, then
// BecameFollower/BecameLeader) and is fed over a BroadcastChannel of the
// same name: the leader relays its state, updates, presence events,
// continuity losses and topic errors; a follower sends the topics its app
// wants (the leader subscribes their union, bridge.TabTopics) and the
// requests and publishes its core forwards (EffForward), which the leader
// sends through its own core and answers (Relayed). Each request still
// settles in its own tab, with its own timeout.
//
// The server's answers to the subscribes reach the leader's core only, so
// the leader also relays them (answers, kind "a"): which topics its
// connection has taken and which were refused last, with the server's
// code. It posts them when they may have changed (after a batch of steps
// with a subscribe answered, refused or dropped, or a new state) and
// whenever a follower announces its topics (at once after a change, and
// every bridge.Announce), so a tab that wants a topic the leader's
// connection answered before it asked hears that answer too. A follower
// tells its app what concerns the topics it wants, once per answer
// (told): a "subscribed" event for a taken topic (its topics() then says
// subscribed), the topic error for a refused one. This is what
// client.subscribed() waits for. The leader's core emits a "subscribed"
// trace event only with Config.Trace (the JS wrapper always asks for
// events); without it a taken topic is relayed with the next announce.
//
// The leader relays updates only while it knows a follower (one whose
// announce it heard and that has not said goodbye nor been forgotten): a
// tab alone posts none, where each post cost about 150 us of the main
// thread per update (docs/browser-bench.md). A follower announces itself
// at its start, on a new leader's "lead" and whenever its topics change,
// each topic with its cursor. The leader keeps the updates it posted to no
// tab (the last relayKeep, at most relayKeepBytes of data); on a
// follower's announce it posts those of each topic past that follower's
// cursor, in order, and forgets them, so a follower that joins a leader
// that was alone (a handover: the old leader steps down, or a tab that
// resumes from its session's cursor) gets every update after its cursor,
// no gap. Past what the leader kept, the follower's core counts the gap as
// missed (topics() and stats), as it would for a lost message; so does a
// second follower whose cursor is behind the first one's when both catch
// up (the first catch-up's updates reach it first: a handover's followers
// normally share one cursor, the last update the old leader relayed).
//
// Leader loss. A closed or crashed leader tab releases its lock, and the
// next tab's pending request is granted. A frozen or hung one keeps it, so
// the leader broadcasts a heartbeat (bridge.Heartbeat, and with any other
// message it posts; bridge.AloneHeartbeat while it knows no other tab,
// each of which announces itself when it starts and is answered at once); a follower that hears nothing for about a second
// (bridge.SilentAfter plus its own jitter; longer for a hidden leader,
// whose timers the browser slows) takes the lock with {steal: true}. A page
// the browser freezes says so first (the freeze event): its followers take
// over at once. A leader whose lock was stolen (its lock request rejects)
// or that hears a leader that outranks it (a higher term: each new leader
// counts one up from the highest it heard) steps down without dialling and
// closes its socket; it then waits for the lock again.
//
// Without Web Locks or BroadcastChannel (old browsers, some workers), or
// when the lock request fails (an opaque origin), every tab keeps its own
// connection and the state says tabs: "unsupported".
//
// Every browser callback here only reads what it was given and pushes a
// step onto the driver's queue, except two lifecycle handlers that must
// post before the page freezes or goes (they read fields only the loop
// writes: in WebAssembly the loop is parked while a handler runs).
type tabs struct {
	d     *driver
	id    string // this tab's, random
	name  string // the lock's and the channel's
	bc    safejs.Value
	locks safejs.Value
	funcs []safejs.Func // the channel's, the interval's and the lifecycle handlers
	beat  safejs.Value  // setInterval's id
	off   []func()      // removes the lifecycle listeners

	gen      int          // the current lock request's number: answers to older ones are ignored
	leading  bool         // this tab's lock request was granted and not stolen
	release  safejs.Value // resolves the promise that holds the lock
	abort    safejs.Value // aborts the lock request waiting in the queue
	first    safejs.Value // wsready.js's takeWarmLock, for the first request (see requestLock)
	stealing bool         // a {steal: true} request is on its way
	term     uint64       // this tab's term while it leads
	maxTerm  uint64       // the highest term heard

	leaderID     string // the tab this one follows
	leaderTerm   uint64
	leaderHidden bool
	lastBeat     time.Time // when the leader was last heard
	lastTick     time.Time
	lastSent     time.Time // the leader's last post
	lastAnnounce time.Time
	silent       time.Duration // bridge.SilentAfter plus this tab's jitter

	remote bridge.TabTopics   // the leader's: what the other tabs want
	fwd    map[uint64]fwdFrom // the leader's: requests forwarded, by its own core's id
	closed bool

	// The subscribes' answers (relayed, see above). The leader's: the last
	// refusal's code per topic of its core (until taken or no longer
	// wanted), and whether the answers changed since it last posted them.
	// A follower's: what its app was told of each topic it wants, taken
	// (told) or the refusal's code; none: nothing yet, or taken no longer.
	refused    map[string]string
	answersDue bool
	told       map[string]string

	// The updates the leader delivered and posted to no tab (see above),
	// oldest first, and the bytes of their data.
	kept      []client.Update
	keptBytes int
}

// The bounds of the leader's kept updates: 1,024 updates, 256 KiB of
// their data (past them the older half goes; an update of more than 256
// KiB is not kept: a follower past its cursor sees a gap instead).
const (
	relayKeep      = 1024
	relayKeepBytes = 256 << 10
)

// taken is told's word for a topic the leader's connection took (no error
// code is "+": protocol.ValidErrorCode).
const taken = "+"

// fwdFrom is a forwarded request's origin: the tab and its core's id.
type fwdFrom struct {
	tab string
	id  uint64
}

// newTabs prepares the election for url, or reports TabsUnsupported when
// the browser lacks Web Locks or BroadcastChannel. Nothing is requested
// until start (the core must exist first).
func newTabs(d *driver, url string) (*tabs, bridge.Tabs) {
	g := safejs.Global()
	nav, err := g.Get("navigator")
	if err != nil || nav.Type() != safejs.TypeObject {
		return nil, bridge.TabsUnsupported
	}
	locks, err := nav.Get("locks")
	if err != nil || locks.Type() != safejs.TypeObject {
		return nil, bridge.TabsUnsupported
	}
	if req, err := locks.Get("request"); err != nil || req.Type() != safejs.TypeFunction {
		return nil, bridge.TabsUnsupported
	}
	ctor, err := g.Get("BroadcastChannel")
	if err != nil || ctor.Type() != safejs.TypeFunction {
		return nil, bridge.TabsUnsupported
	}
	t := &tabs{d: d, id: strconv.FormatUint(uint64(random()*(1<<53)), 36), name: "wsready:" + url, locks: locks,
		beat: safejs.Undefined(), release: safejs.Undefined(), abort: safejs.Undefined(), first: safejs.Undefined(),
		silent: bridge.SilentAfter + time.Duration(random()*float64(bridge.SilentJitter)), fwd: map[uint64]fwdFrom{},
		refused: map[string]string{}, told: map[string]string{}}
	bc, err := ctor.New(t.name)
	if err != nil {
		return nil, bridge.TabsUnsupported
	}
	t.bc = bc
	onMsg, err := funcOf(func(_ safejs.Value, args []safejs.Value) any {
		if len(args) > 0 {
			if data, err := args[0].Get("data"); err == nil && data.Type() == safejs.TypeObject {
				if m, ok := readTabMsg(data); ok {
					d.q.Push(func(now time.Time) { t.handle(m, now) })
				}
			}
		}
		return nil
	})
	if err != nil {
		bc.Call("close")
		return nil, bridge.TabsUnsupported
	}
	t.funcs = append(t.funcs, onMsg)
	bc.Set("onmessage", onMsg.Value())
	return t, bridge.TabsOn
}

// start begins the election: the lock is asked for, the heartbeat runs,
// and the leader (if any) hears which topics this tab wants.
func (t *tabs) start(now time.Time) {
	t.lastBeat, t.lastTick = now, now
	tick, err := funcOf(func(safejs.Value, []safejs.Value) any {
		t.d.q.Push(t.tick)
		return nil
	})
	if err == nil {
		t.funcs = append(t.funcs, tick)
		if id, err := safejs.Global().Call("setInterval", tick.Value(), bridge.Heartbeat.Milliseconds()); err == nil {
			t.beat = id
		}
	}
	t.listen()
	t.requestLock(false)
	t.announce(now)
}

// listen adds the two lifecycle handlers that post at once: a leader whose
// page the browser freezes hands over (freeze), a tab that goes says so
// (pagehide).
func (t *tabs) listen() {
	add := func(target safejs.Value, name string, fn func()) {
		if target.Type() != safejs.TypeObject {
			return
		}
		f, err := funcOf(func(safejs.Value, []safejs.Value) any {
			fn()
			return nil
		})
		if err != nil {
			return
		}
		if _, err := target.Call("addEventListener", name, f.Value()); err != nil {
			f.Release()
			return
		}
		t.funcs = append(t.funcs, f)
		t.off = append(t.off, func() { target.Call("removeEventListener", name, f.Value()) })
	}
	if doc, err := safejs.Global().Get("document"); err == nil {
		add(doc, "freeze", func() {
			if t.leading && !t.closed {
				t.post("freeze", nil)
			}
		})
	}
	add(safejs.Global(), "pagehide", func() {
		if !t.closed {
			t.post("bye", nil)
		}
	})
}

// requestLock asks for the lock: queued behind the holder, or taking it
// from the holder (steal). Its answers come back as steps tagged with
// this request's number. The first request goes through wsready.js's
// takeWarmLock (t.first), which has locks.request's signature: it hands
// this request the lock preconnect() holds or asked for, when it did (no
// second request, no IPC round trip, no moment between that lock's
// release and this request for another tab to take it), and asks as usual
// otherwise.
func (t *tabs) requestLock(steal bool) {
	t.gen++
	g := t.gen
	opts := map[string]any{}
	if steal {
		opts["steal"] = true
	} else if ctor, err := safejs.Global().Get("AbortController"); err == nil && ctor.Type() == safejs.TypeFunction {
		if ac, err := ctor.New(); err == nil {
			if sig, err := ac.Get("signal"); err == nil {
				t.abort = ac
				opts["signal"] = sig
			}
		}
	}
	optsV, err := jsObject(opts)
	if err != nil {
		t.d.q.Push(func(now time.Time) { t.lockFailed(g, now) })
		return
	}
	// The callback holds the lock until the promise it returns resolves:
	// the step that takes the grant keeps its resolve function.
	cb, err := funcOf(func(safejs.Value, []safejs.Value) any {
		p, resolve, err := newPromise()
		if err != nil {
			return nil // the lock goes back at once
		}
		if !t.d.q.Push(func(now time.Time) { t.granted(g, resolve, now) }) {
			resolve.Invoke() // the client has stopped
		}
		return p
	})
	if err != nil {
		t.d.q.Push(func(now time.Time) { t.lockFailed(g, now) })
		return
	}
	var req safejs.Value
	if first := t.first; isFunc(first) && !steal {
		t.first = safejs.Undefined()
		req, err = first.Invoke(t.name, optsV, cb.Value())
	} else {
		req, err = t.locks.Call("request", t.name, optsV, cb.Value())
	}
	if err == nil {
		err = then(req, func(safejs.Value) {
			cb.Release() // the lock was released: the callback is done with
		}, func(safejs.Value) {
			cb.Release()
			t.d.q.Push(func(now time.Time) { t.lockFailed(g, now) })
		})
	}
	if err != nil {
		cb.Release()
		t.d.q.Push(func(now time.Time) { t.lockFailed(g, now) })
	}
}

// granted: lock request g was granted. A stale grant (an older request, a
// closed client) is handed back at once.
func (t *tabs) granted(g int, resolve safejs.Value, now time.Time) {
	if t.closed || g != t.gen || t.leading {
		resolve.Invoke()
		return
	}
	t.leading, t.stealing, t.release, t.abort = true, false, resolve, safejs.Undefined()
	t.maxTerm++
	t.term, t.leaderID, t.leaderTerm = t.maxTerm, t.id, t.maxTerm
	t.remote.Reset()
	t.kept, t.keptBytes = nil, 0 // what it kept when it last led is old
	t.post("lead", nil)
	t.d.event("leader", 0, "this tab leads the tabs of "+t.name+" (term "+strconv.FormatUint(t.term, 10)+")")
	t.d.core.BecameLeader(now)
	t.d.syncTopics(now)
	// Its core answers for itself now; the other tabs hear its answers
	// (none yet).
	t.told, t.refused = map[string]string{}, map[string]string{}
	t.postAnswers()
}

// lockFailed: lock request g was rejected. Ours to ignore if it was an
// older one (we aborted it before a steal); if this tab led, its lock was
// stolen: it steps down; otherwise the lock cannot be had here at all, and
// the tab keeps a connection of its own.
func (t *tabs) lockFailed(g int, now time.Time) {
	if t.closed || g != t.gen {
		return
	}
	if t.leading {
		t.stepDown(now, "another tab took the lock")
		return
	}
	t.d.event("tabs", 0, "the Web Lock was refused: this tab keeps a connection of its own")
	t.close(false)
	t.d.tabs, t.d.tabsMode = nil, bridge.TabsUnsupported
	t.d.core.BecameLeader(now)
	t.d.syncTopics(now)
}

// stepDown makes this tab a follower: its core closes its socket without
// dialling again, what the other tabs wanted is forgotten (the new leader
// hears it from them), and the lock is asked for again, queued.
func (t *tabs) stepDown(now time.Time, why string) {
	t.leading = false
	if !t.release.IsUndefined() {
		t.release.Invoke() // harmless if stolen: the lock is no longer ours
		t.release = safejs.Undefined()
	}
	t.remote.Reset()
	t.lastBeat = now
	// The new leader's answers are what counts now.
	t.told, t.refused = map[string]string{}, map[string]string{}
	t.d.event("follower", 0, "this tab steps down: "+why)
	t.d.core.BecameFollower(now)
	t.d.syncTopics(now)
	t.requestLock(false)
	t.announce(now)
}

// steal takes the lock from a leader that went silent.
func (t *tabs) steal(now time.Time) {
	t.stealing = true
	queued := t.abort
	t.abort = safejs.Undefined()
	t.d.event("tabs", 0, "the leader tab went silent: taking the lock")
	t.requestLock(true)
	if !queued.IsUndefined() {
		queued.Call("abort") // its rejection carries an older number: ignored
	}
}

// tick runs every bridge.Heartbeat: the leader beats and forgets silent
// tabs; a follower re-announces its topics and watches the leader.
func (t *tabs) tick(now time.Time) {
	if t.closed {
		return
	}
	late := now.Sub(t.lastTick) > 2*time.Second
	t.lastTick = now
	if t.leading {
		if now.Sub(t.lastSent) >= t.heartbeat()-bridge.Heartbeat/2 { // the interval's own jitter
			t.post("hb", nil)
		}
		if t.remote.Expire(now, bridge.ForgetTab) {
			t.d.syncTopics(now)
		}
		return
	}
	if late {
		// This tab slept (a frozen page, a suspended laptop): its view of
		// the leader is old, not the leader's silence. Listen again first.
		t.lastBeat = now
	}
	if now.Sub(t.lastAnnounce) >= bridge.Announce {
		t.announce(now)
	}
	silent := t.silent
	if t.leaderHidden {
		silent = bridge.SilentAfterHidden
	}
	if !t.stealing && now.Sub(t.lastBeat) > silent {
		t.steal(now)
	}
}

// beatSoon posts a heartbeat if the leader has posted nothing for a
// heartbeat: the driver calls it after every batch of steps, so a leader
// whose timers the browser slows still beats while it has work.
func (t *tabs) beatSoon(now time.Time) {
	if t.leading && !t.closed && t.answersDue {
		t.postAnswers()
	}
	if t.leading && !t.closed && now.Sub(t.lastSent) >= t.heartbeat() {
		t.post("hb", nil)
	}
}

// heartbeat is how often the leader beats: bridge.Heartbeat while another
// tab is known to it, bridge.AloneHeartbeat while none is.
func (t *tabs) heartbeat() time.Duration {
	if t.remote.Len() > 0 {
		return bridge.Heartbeat
	}
	return bridge.AloneHeartbeat
}

// announce tells the leader which topics this tab wants.
func (t *tabs) announce(now time.Time) {
	t.lastAnnounce = now
	for topic := range t.told {
		if !t.d.wants(topic) {
			delete(t.told, topic) // given up: asked again, it is answered again
		}
	}
	t.post("subs", map[string]any{"subs": bridge.FormatSubs(t.d.announced())})
}

// heard takes a leader's word (from, its term, whether its page is
// hidden): a leader that outranks this one makes it step down; the leader
// to follow is the one that outranks the others.
func (t *tabs) heard(from string, term uint64, hidden bool, now time.Time) {
	t.maxTerm = max(t.maxTerm, term)
	if t.leading {
		if !bridge.Outranks(term, from, t.term, t.id) {
			return // it will hear this tab and step down
		}
		t.stepDown(now, "a tab that outranks it leads")
	}
	if t.leaderID == "" || from == t.leaderID || bridge.Outranks(term, from, t.leaderTerm, t.leaderID) {
		t.leaderID, t.leaderTerm, t.leaderHidden, t.lastBeat = from, term, hidden, now
	}
}

// handle takes a message from another tab.
func (t *tabs) handle(m tabMsg, now time.Time) {
	if t.closed || m.from == t.id {
		return
	}
	if m.term > 0 {
		t.heard(m.from, m.term, m.hidden, now)
	}
	fromLeader := !t.leading && m.from == t.leaderID && m.term > 0
	d := t.d
	switch m.kind {
	case "lead":
		if !t.leading {
			t.stealing = false
			t.announce(now)
		}
	case "freeze":
		if fromLeader && !t.stealing {
			t.steal(now)
		}
	case "s":
		if fromLeader {
			d.core.LeaderState(m.state, now)
		}
	case "u":
		if fromLeader {
			d.core.LeaderUpdate(m.update, now)
		}
	case "p":
		if fromLeader && d.local[m.presence.Topic].Presence {
			d.call(d.cb.onPresence, bridge.PresenceValue(m.presence))
		}
	case "l":
		if fromLeader && d.wants(m.lost.Topic) {
			d.call(d.cb.onLost, bridge.LostValue(m.lost))
		}
	case "e":
		if fromLeader && d.wants(m.topicErr.Topic) {
			t.told[m.topicErr.Topic] = m.topicErr.Code
			d.call(d.cb.onTopic, bridge.TopicErrorValue(m.topicErr))
		}
	case "a":
		if fromLeader {
			t.answered(m.answers)
		}
	case "r":
		if m.to == t.id {
			d.core.Relayed(m.id, m.result, m.err, now)
		}
	case "subs":
		if t.leading {
			isNew, err := t.remote.Set(m.from, m.subs, now)
			if err != nil {
				d.event("tabs", 0, err.Error())
			}
			d.syncTopics(now)
			if isNew {
				t.state(d.core.State())
			}
			t.catchUp(m.subs)
			t.postAnswers() // what it wants may have been answered before it asked
		}
	case "bye":
		if t.leading && t.remote.Drop(m.from) {
			d.syncTopics(now)
		}
		if m.from == t.leaderID {
			t.leaderID = "" // its lock is on its way to a waiting tab
		}
	case "fwd":
		if t.leading {
			t.forwarded(m.from, m.id, m.frame, now)
		}
	}
}

// forwarded sends a follower's request or publish through this tab's core
// and remembers whose it is; the answer goes back in answer.
func (t *tabs) forwarded(from string, id uint64, frame []byte, now time.Time) {
	refuse := func(kind error, detail string) {
		t.post("r", withTo(bridge.ReplyValue(nil, &client.RequestError{Kind: kind, Detail: detail}), from, id))
	}
	if len(t.fwd) >= bridge.MaxForwarded {
		refuse(client.ErrNotReady, "the leader tab has "+strconv.Itoa(bridge.MaxForwarded)+" forwarded requests in flight")
		return
	}
	m, err := protocol.Decode(frame)
	if err != nil {
		refuse(client.ErrInvalidRequest, "the frame is not a request")
		return
	}
	o := client.RequestOptions{Key: m.Key, Queue: m.Key != ""}
	var lid uint64
	switch m.Type {
	case protocol.TypeRequest:
		o.Timeout = time.Duration(m.TimeoutMs) * time.Millisecond
		lid = t.d.core.RequestWith(m.Method, m.Params, o, now)
	case protocol.TypePublish:
		lid = t.d.core.PublishWith(m.Topic, m.Data, o, now)
	default:
		refuse(client.ErrInvalidRequest, "only requests and publishes are forwarded")
		return
	}
	t.fwd[lid] = fwdFrom{tab: from, id: id}
}

// answer relays the answer to a forwarded request; it reports whether id
// was one.
func (t *tabs) answer(id uint64, result []byte, err error) bool {
	f, ok := t.fwd[id]
	if !ok {
		return false
	}
	delete(t.fwd, id)
	t.post("r", withTo(bridge.ReplyValue(result, err), f.tab, f.id))
	return true
}

func withTo(v map[string]any, to string, id uint64) map[string]any {
	v["to"], v["id"] = to, float64(id)
	return v
}

// forward sends this (follower) tab's request to the leader.
func (t *tabs) forward(id uint64, frame []byte) {
	t.post("fwd", map[string]any{"id": float64(id), "frame": string(frame)})
}

// What the leader relays.
func (t *tabs) state(st client.State) {
	t.answersDue = true // a new socket: its topics are asked for again
	t.post("s", bridge.LeaderStateValue(st))
}
func (t *tabs) update(u client.Update) {
	if t.remote.Len() > 0 { // a follower hears it
		t.post("u", bridge.UpdateValue(u))
		return
	}
	// Kept for a follower that announces a cursor before it; past the
	// bounds the older half goes (one copy per relayKeep/2 updates).
	t.kept = append(t.kept, u)
	t.keptBytes += len(u.Data)
	for len(t.kept) > relayKeep || t.keptBytes > relayKeepBytes {
		t.kept = append(t.kept[:0], t.kept[(len(t.kept)+1)/2:]...)
		t.keptBytes = 0
		for _, k := range t.kept {
			t.keptBytes += len(k.Data)
		}
	}
}

// catchUp posts, in order, the kept updates of each topic subs gives a
// cursor for, past that cursor, and forgets them (every follower has them
// now): a follower announcing its cursor to a leader that was alone gets
// what it missed.
func (t *tabs) catchUp(subs map[string]bridge.TabSub) {
	rest := t.kept[:0]
	for _, u := range t.kept {
		if s, ok := subs[u.Topic]; ok && s.HasSince && u.Seq > s.Since {
			t.post("u", bridge.UpdateValue(u))
			t.keptBytes -= len(u.Data)
		} else {
			rest = append(rest, u)
		}
	}
	clear(t.kept[len(rest):])
	t.kept = rest
}
func (t *tabs) presence(p client.PresenceEvent) { t.post("p", bridge.PresenceValue(p)) }
func (t *tabs) lost(l client.ContinuityLost) {
	t.post("l", map[string]any{"topic": l.Topic, "lfrom": float64(l.From), "lto": float64(l.To), "reset": l.Reset})
}
func (t *tabs) topicError(e client.TopicError) {
	t.refused[e.Topic] = e.Code
	t.answersDue = true
	t.post("e", bridge.TopicErrorValue(e))
}

// logged notes one of the leader core's trace events: a subscribe taken
// or dropped changes the answers the other tabs hear (after the batch).
func (t *tabs) logged(kind string) {
	if kind == "subscribed" || kind == "unsubscribed" {
		t.answersDue = true
	}
}

// postAnswers (the leader) relays its core's answers to the subscribes:
// each topic taken, and each refused last (with the code) and not taken
// since. A refusal is forgotten once the topic is taken or no longer
// subscribed. (Unsorted and posted whole: a follower compares each answer
// with what its app was told.)
func (t *tabs) postAnswers() {
	if !t.leading || t.closed {
		return
	}
	t.answersDue = false
	d := t.d
	for topic := range t.refused {
		if _, ok := d.coreTopics[topic]; !ok && topic != d.cfg.Topic {
			delete(t.refused, topic)
		}
	}
	var b []byte
	for _, ts := range d.core.Topics() {
		code, refused := t.refused[ts.Topic]
		switch {
		case ts.Subscribed:
			delete(t.refused, ts.Topic)
			b = append(append(b, ts.Topic...), " +\n"...)
		case refused:
			b = append(append(append(append(b, ts.Topic...), " -"...), code...), '\n')
		}
	}
	t.post("a", map[string]any{"ans": string(b)})
}

// answered (a follower) takes the leader's answers and tells the app what
// concerns its topics and was not told yet: a "subscribed" event for a
// topic taken, the topic error for one refused. A topic the leader no
// longer has (its connection dropped) is answered again when it is back.
func (t *tabs) answered(ans map[string]string) {
	d := t.d
	for topic := range d.local {
		t.tell(topic, ans)
	}
	if topic := d.cfg.Topic; topic != "" {
		if _, ok := d.local[topic]; !ok {
			t.tell(topic, ans)
		}
	}
}

func (t *tabs) tell(topic string, ans map[string]string) {
	code, ok := ans[topic]
	was := t.told[topic]
	switch {
	case ok && code == "":
		if was != taken {
			t.told[topic] = taken
			t.d.event("subscribed", 0, "the leader tab's connection has "+topic)
		}
	case ok:
		if was != code {
			t.told[topic] = code
			t.d.call(t.d.cb.onTopic, map[string]any{"topic": topic, "code": code})
		}
	case was == taken:
		delete(t.told, topic)
	}
}

// view makes a follower's topics() say what the leader's connection took
// of this tab's topics (its own core, which holds no connection, would
// say none, or what it took while it led).
func (t *tabs) view(ts []client.TopicStats) {
	if t.leading || t.closed {
		return
	}
	for i := range ts {
		ts[i].Subscribed = t.d.wants(ts[i].Topic) && t.told[ts[i].Topic] == taken
	}
}

// maxAnswers bounds the answers a follower reads from one message: every
// topic the other tabs may want (bridge.MaxTabs of bridge.MaxTabTopics)
// and the leader's own app's.
const maxAnswers = bridge.MaxTabs*bridge.MaxTabTopics + 1024

// parseAnswers reads postAnswers' text (one line per topic: "topic +"
// taken, "topic -code" refused): topic -> "" (taken) or the refusal's
// code, from the first maxAnswers lines; a line that is not well formed is
// skipped.
func parseAnswers(s string) map[string]string {
	out := map[string]string{}
	for n := 0; len(s) > 0 && n < maxAnswers; n++ {
		line, rest, _ := cut(s, '\n')
		s = rest
		topic, ans, ok := cut(line, ' ')
		if !ok || !protocol.ValidTopic(topic) {
			continue
		}
		switch {
		case ans == "+":
			out[topic] = ""
		case len(ans) > 1 && ans[0] == '-' && protocol.ValidErrorCode(ans[1:]):
			out[topic] = ans[1:]
		}
	}
	return out
}

// post broadcasts a message of kind with fields; a leader's carries its
// term and whether its page is hidden (every one is a heartbeat).
func (t *tabs) post(kind string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["k"], fields["from"] = kind, t.id
	if t.leading {
		fields["term"], fields["hidden"] = float64(t.term), t.d.hidden()
		t.lastSent = time.Now()
	}
	v, err := jsObject(fields)
	if err == nil {
		_, err = t.bc.Call("postMessage", v)
	}
	if err != nil {
		consoleError("wsready: tabs: cannot post to the other tabs: " + err.Error())
	}
}

// close leaves the election: the other tabs hear goodbye (say), the lock
// goes back (or the queued request is withdrawn), and every callback is
// dropped.
func (t *tabs) close(say bool) {
	if t.closed {
		return
	}
	if say {
		t.post("bye", nil)
	}
	t.closed = true
	t.gen++
	if !t.release.IsUndefined() {
		t.release.Invoke()
	}
	if !t.abort.IsUndefined() {
		t.abort.Call("abort")
	}
	t.leading = false
	g := safejs.Global()
	if !t.beat.IsUndefined() {
		g.Call("clearInterval", t.beat)
	}
	for _, off := range t.off {
		off()
	}
	t.bc.Set("onmessage", safejs.Null())
	t.bc.Call("close")
	for _, f := range t.funcs {
		f.Release()
	}
	t.funcs, t.off = nil, nil
}

// cut slices s around the first c, as strings.Cut does (which costs the
// wasm about 6 KB more, measured: its generic string search comes along).
func cut(s string, c byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// tabMsg is a message from another tab, read at once from the channel's
// structured clone; only the fields of its kind are set.
type tabMsg struct {
	kind, from, to string
	term           uint64
	hidden         bool
	id             uint64
	state          client.State
	update         client.Update
	presence       client.PresenceEvent
	lost           client.ContinuityLost
	topicErr       client.TopicError
	result         []byte
	err            error
	frame          []byte
	subs           map[string]bridge.TabSub
	answers        map[string]string
}

// readTabMsg reads a message; ok is false for one that is not wsready's or
// is malformed (any page of the origin may post on the channel).
func readTabMsg(v safejs.Value) (m tabMsg, ok bool) {
	g := jsGetter{v}
	str := func(name string) string { s, _, _ := g.String(name); return s }
	num := func(name string) uint64 {
		f, ok, err := g.Number(name)
		if !ok || err != nil || f < 0 || f > 1<<53 || f != math.Trunc(f) {
			return 0
		}
		return uint64(f)
	}
	m.kind, m.from, m.to = str("k"), str("from"), str("to")
	if m.kind == "" || m.from == "" || len(m.from) > 32 {
		return m, false
	}
	m.term, m.id = num("term"), num("id")
	m.hidden, _, _ = g.Bool("hidden")
	topic := str("topic")
	switch m.kind {
	case "s":
		m.state = bridge.ParseLeaderState(g)
	case "u":
		data := str("data")
		if !protocol.ValidTopic(topic) || len(data) > protocol.MaxFrameBytes || !protocol.Valid([]byte(data)) {
			return m, false
		}
		m.update = client.Update{Topic: topic, Seq: int64(num("seq")), Data: []byte(data), Epoch: num("epoch")}
	case "p":
		m.presence = client.PresenceEvent{Topic: topic, Event: str("event"), User: str("user")}
	case "l":
		reset, _, _ := g.Bool("reset")
		m.lost = client.ContinuityLost{Topic: topic, From: int64(num("lfrom")), To: int64(num("lto")), Reset: reset}
	case "e":
		m.topicErr = bridge.ParseTopicError(g, "topic", "code", "message")
	case "r":
		m.result, m.err = bridge.ParseReply(g, m.id)
	case "fwd":
		f := str("frame")
		if len(f) > protocol.MaxFrameBytes {
			return m, false
		}
		m.frame = []byte(f)
	case "subs":
		m.subs = bridge.ParseSubs(str("subs"))
	case "a":
		m.answers = parseAnswers(str("ans"))
	}
	return m, true
}
