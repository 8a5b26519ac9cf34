//go:build js && wasm

package main

import (
	"time"

	"github.com/hack-pad/safejs"
)

// watcher feeds the window's online/offline events, the page's visibility
// and its resume from a freeze to the core. Its callbacks only push onto
// the driver's queue.
type watcher struct {
	doc safejs.Value // the document, when there is a page
	ls  []listener   // every listener added, for release
}

type listener struct {
	target safejs.Value
	name   string
	fn     safejs.Func
}

// listen adds step as target's listener for the event name, kept for
// release.
func (w *watcher) listen(target safejs.Value, name string, step func()) error {
	fn, err := funcOf(func(safejs.Value, []safejs.Value) any {
		step()
		return nil
	})
	if err != nil {
		return err
	}
	w.ls = append(w.ls, listener{target, name, fn})
	_, err = target.Call("addEventListener", name, fn.Value())
	return err
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
	if err := d.watch.listen(win, "online", func() { d.q.Push(func(now time.Time) { d.core.Online(now) }) }); err != nil {
		return err
	}
	return d.watch.listen(win, "offline", func() { d.q.Push(func(now time.Time) { d.core.Offline(now) }) })
}

// watchVisibility feeds the page's visibility to the core (no reconnect is
// scheduled while the page is hidden, stage 6), and its resume from a
// freeze: Chromium fires resume before the close of the sockets it
// dropped meanwhile, which the core then redials at once (stage 8).
func (d *driver) watchVisibility() error {
	doc, err := safejs.Global().Get("document")
	if err != nil || doc.IsUndefined() || doc.IsNull() {
		return nil // a worker: no page to be hidden
	}
	d.watch.doc = doc
	step := func() {
		hidden := d.hidden()
		d.q.Push(func(now time.Time) {
			if hidden {
				d.core.Hidden(now)
			} else {
				d.core.Visible(now)
			}
		})
	}
	if err := d.watch.listen(doc, "visibilitychange", step); err != nil {
		return err
	}
	step()
	return d.watch.listen(doc, "resume", func() { d.q.Push(func(now time.Time) { d.core.Resumed(now) }) })
}

// release removes the watcher's listeners and drops its callbacks.
func (w *watcher) release() {
	for _, l := range w.ls {
		l.target.Call("removeEventListener", l.name, l.fn.Value())
		l.fn.Release()
	}
	w.ls = nil
	w.doc = safejs.Undefined()
}
