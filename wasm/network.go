//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
	"github.com/wsready/wsready/client"
)

// watcher feeds the window's online/offline events and the page's
// visibility to the core. Its callbacks only push onto the driver's queue.
type watcher struct {
	netFns map[string]safejs.Func // "online", "offline"
	doc    safejs.Value           // the document, when there is a page
	docFn  safejs.Func            // visibilitychange
	resFn  safejs.Func            // resume (a frozen page runs again)
}

// watchNetworkAndVisibility starts the watcher: navigator.onLine now, then
// window online/offline, and the page's visibility (watchVisibility).
func (d *driver) watchNetworkAndVisibility() error {
	win := safejs.Global()
	if nav, err := win.Get("navigator"); err == nil && !nav.IsUndefined() {
		if on, err := nav.Get("onLine"); err == nil {
			if b, err := on.Bool(); err == nil && !b {
				d.q.Push(func(now time.Time) { d.core.Offline(now) })
			}
		}
	}
	if err := d.watchVisibility(); err != nil {
		return err
	}
	for name, step := range map[string]func(*client.Core, time.Time){
		"online":  (*client.Core).Online,
		"offline": (*client.Core).Offline,
	} {
		fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
			d.q.Push(func(now time.Time) { step(d.core, now) })
			return nil
		})
		if err != nil {
			return err
		}
		if d.watch.netFns == nil {
			d.watch.netFns = map[string]safejs.Func{}
		}
		d.watch.netFns[name] = fn
		if _, err := win.Call("addEventListener", name, fn.Value()); err != nil {
			return err
		}
	}
	return nil
}

// watchVisibility feeds the page's visibility to the core: no reconnect is
// scheduled while the page is hidden (stage 6).
func (d *driver) watchVisibility() error {
	doc, err := safejs.Global().Get("document")
	if err != nil || doc.IsUndefined() || doc.IsNull() {
		return nil // a worker: no page to be hidden
	}
	step := func() {
		hidden := false
		if v, err := doc.Get("hidden"); err == nil {
			hidden, _ = v.Bool()
		}
		d.q.Push(func(now time.Time) {
			if hidden {
				d.core.Hidden(now)
			} else {
				d.core.Visible(now)
			}
		})
	}
	fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
		step()
		return nil
	})
	if err != nil {
		return err
	}
	d.watch.docFn, d.watch.doc = fn, doc
	if _, err := doc.Call("addEventListener", "visibilitychange", fn.Value()); err != nil {
		return err
	}
	step()
	// A frozen page's resume comes before the close of the sockets the
	// browser dropped meanwhile (Chromium): the core redials them at once.
	if d.watch.resFn, err = funcOf(func(safejs.Value, []safejs.Value) any {
		d.q.Push(func(now time.Time) { d.core.Resumed(now) })
		return nil
	}); err != nil {
		return err
	}
	_, err = doc.Call("addEventListener", "resume", d.watch.resFn.Value())
	return err
}

// release removes the watcher's listeners and drops its callbacks.
func (w *watcher) release() {
	win := safejs.Global()
	for name, fn := range w.netFns {
		win.Call("removeEventListener", name, fn.Value())
		fn.Release()
	}
	w.netFns = nil
	if !w.doc.IsUndefined() && !w.doc.IsNull() {
		w.doc.Call("removeEventListener", "visibilitychange", w.docFn.Value())
		w.docFn.Release()
		w.doc.Call("removeEventListener", "resume", w.resFn.Value())
		w.resFn.Release()
	}
	w.doc = safejs.Undefined()
}
