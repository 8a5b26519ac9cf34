//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/bridge"
	"github.com/wsready/wsready/protocol"
)

// connectJS implements __wsready.connect({url, stage, onState, onUpdate,
// onEvent, ...}). It returns a handle {request, publish, subscribe, state,
// stats, close, ...} or {error} for bad options; it never throws. The JS
// wrapper (web/static/wsready.js) is the page's API over it.
func connectJS(args []safejs.Value) any {
	if len(args) < 1 || args[0].Type() != safejs.TypeObject {
		return errorValue("wsready.connect: pass an options object {url, stage}")
	}
	g := jsGetter{args[0]}
	o, err := bridge.ParseOptions(g)
	if err != nil {
		return errorValue(err.Error())
	}
	cb := func(name string) safejs.Value {
		v, _ := g.get(name)
		return v
	}
	d, err := newDriver(o, callbacks{onState: cb("onState"), onUpdate: cb("onUpdate"), onEvent: cb("onEvent"), onRecord: cb("onRecord"),
		onLost: cb("onContinuityLost"), onTopic: cb("onTopicError"), onPresence: cb("onPresence"), token: cb("token"), warm: cb("warm"), warmLock: cb("warmLock"), frameOnly: cb("frameOnly")})
	if err != nil {
		return errorValue("wsready.connect: " + err.Error())
	}
	h, err := safejs.Global().Get("Object")
	if err == nil {
		h, err = h.New()
	}
	if err != nil {
		return errorValue("wsready.connect: " + err.Error())
	}
	// One Go function serves every method of the handle: a JS function per
	// name, each calling d.method with its index. A Go function per method
	// (each a closure wrapped by funcOf) cost the wasm about 1 KB of code
	// apiece; a case of one switch costs what its body does.
	for i, name := range handleMethods {
		jf, _ := funcOf(func(_ safejs.Value, a []safejs.Value) any { return d.method(i, a) })
		d.handle = append(d.handle, jf)
		h.Set(name, jf)
	}
	return h
}

// handleMethods names the handle's methods, in d.method's order.
var handleMethods = [...]string{"request", "publish", "subscribe", "unsubscribe", "topics", "cursors", "state", "stats", "close", "cancel", "reconnect", "dispose"}

// The handle's methods, by their index in handleMethods.
const (
	mRequest = iota
	mPublish
	mSubscribe
	mUnsubscribe
	mTopics
	mCursors
	mState
	mStats
	mClose
	mCancel
	mReconnect
	mDispose
)

// method runs the handle's method m with the page's arguments a.
//
// request(method, params, timeoutMs, ticket, queue, key) and
// publish(topic, data, timeoutMs, ticket, queue, key): params and data are
// JSON strings. subscribe(topic, since?, presence?) and unsubscribe(topic):
// the JS wrapper keeps the per-topic callbacks and calls these for the
// first, a change of presence, and the last.
//
// state and stats read the core from the JS thread. In WebAssembly Go and
// JS share one thread, and the loop goroutine only runs while JS is not, so
// the read cannot race a step. After close they keep returning the final
// values (stopped: true).
func (d *driver) method(m int, a []safejs.Value) any {
	switch m {
	case mRequest, mPublish:
		what := handleMethods[m]
		name, body := argString(a, 0), []byte(nil)
		if s, ok := argStringOK(a, 1); ok {
			body = []byte(s)
		}
		if m == mRequest {
			if name == "" {
				return errorValue("request: method must be a non-empty string")
			}
			if body != nil && !protocol.Valid(body) {
				return errorValue("request: params must be a JSON string")
			}
		} else {
			if !protocol.ValidTopic(name) {
				return errorValue("publish: " + protocol.ErrBadTopic.Error())
			}
			if body == nil || !protocol.Valid(body) {
				return errorValue("publish: data must be a JSON string")
			}
		}
		ro, ticket, msg := callOptions(a)
		if msg != "" {
			return errorValue(what + ": " + msg)
		}
		var p safejs.Value
		var err error
		if m == mRequest {
			p, err = d.request(name, body, ro, ticket)
		} else {
			p, err = d.publish(name, body, ro, ticket)
		}
		if err != nil {
			return errorValue(what + ": " + err.Error())
		}
		return p
	case mSubscribe:
		topic := argString(a, 0)
		if !protocol.ValidTopic(topic) {
			return errorValue("subscribe: " + protocol.ErrBadTopic.Error())
		}
		var s bridge.TabSub
		if len(a) > 1 && a[1].Type() == safejs.TypeNumber {
			f, _ := a[1].Float()
			if f < 0 || f > 1<<53 || f != float64(int64(f)) {
				return errorValue("subscribe: since must be a whole number >= 0")
			}
			s.Since, s.HasSince = int64(f), true
		}
		if len(a) > 2 && a[2].Type() == safejs.TypeBoolean {
			s.Presence, _ = a[2].Bool()
		}
		d.q.Push(func(now time.Time) { d.subscribe(topic, s, now) })
	case mUnsubscribe:
		if topic, ok := argStringOK(a, 0); ok {
			d.q.Push(func(now time.Time) { d.unsubscribe(topic, now) })
		}
	case mTopics:
		ts := d.core.Topics()
		if d.tabs != nil {
			d.tabs.view(ts) // a follower's: what the leader's connection took
		}
		arr, err := safejs.Global().Get("Array")
		if err == nil {
			arr, err = arr.New()
		}
		if err != nil {
			return nil
		}
		for _, t := range ts {
			v, _ := jsObject(bridge.TopicValue(t))
			arr.Call("push", v)
		}
		return arr
	case mCursors:
		return bridge.FormatCursors(d.core.Cursors())
	case mState:
		v, _ := jsObject(bridge.StateValue(d.core.State(), d.tabsMode))
		return v
	case mStats:
		v, _ := jsObject(bridge.StatsValue(d.core.Stats()))
		return v
	case mClose:
		p, err := d.stop()
		if err != nil {
			return errorValue("close: " + err.Error())
		}
		return p
	case mCancel:
		if len(a) > 0 && a[0].Type() == safejs.TypeNumber {
			f, _ := a[0].Float()
			ticket := ticketKey(f)
			d.q.Push(func(now time.Time) { d.cancel(ticket, now) })
		}
	case mReconnect:
		d.q.Push(func(now time.Time) { d.core.Reconnect(now) })
	case mDispose:
		d.dispose()
	}
	return nil
}

func argStringOK(a []safejs.Value, i int) (string, bool) {
	if len(a) > i && a[i].Type() == safejs.TypeString {
		s, err := a[i].String()
		return s, err == nil
	}
	return "", false
}

func argString(a []safejs.Value, i int) string {
	s, _ := argStringOK(a, i)
	return s
}

// callOptions reads a request's or a publish's options from its
// arguments 2..5: timeoutMs (0: the client's), the wrapper's ticket, queue,
// key. msg says what is wrong with them.
func callOptions(a []safejs.Value) (o client.RequestOptions, ticket uint64, msg string) {
	if len(a) > 2 && a[2].Type() == safejs.TypeNumber {
		ms, _ := a[2].Float()
		if ms < 0 || ms > 1e9 || ms != float64(int64(ms)) {
			return o, 0, "timeoutMs must be a whole number of milliseconds, 0 to 1e9"
		}
		o.Timeout = time.Duration(ms) * time.Millisecond
	}
	if len(a) > 3 && a[3].Type() == safejs.TypeNumber {
		f, _ := a[3].Float()
		ticket = ticketKey(f)
	}
	if len(a) > 4 && a[4].Type() == safejs.TypeBoolean {
		o.Queue, _ = a[4].Bool()
	}
	if key, ok := argStringOK(a, 5); ok {
		if !protocol.ValidKey(key) {
			return o, 0, "key must be 1 to 64 of A-Z a-z 0-9 - _"
		}
		o.Key = key
	}
	return o, ticket, ""
}
