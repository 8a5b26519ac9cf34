//go:build !js

package server

import (
	"context"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The demo feed: one small update per FeedInterval to the "feed" topic,
// produced by this node once a Demo is made over it (unless
// Options.NoFeed), delivered like any topic. A Server alone runs no feed and
// answers no demo method: both are the demo's, an application's server has
// neither.

// startDemo makes s the demo's server, once: it adds the demo's methods
// (echo and time; an application's own method of either name stays) and,
// unless NoFeed, starts the feed. Not after Close.
func (s *Server) startDemo() *demoFaults {
	s.demoOnce.Do(func() {
		d := &demoFaults{s: s}
		var h faultHook = d
		s.fx.Store(&h)
		s.methods.addMissing(demoMethods(s))
		if s.opts.NoFeed {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.wg.Add(1) // under s.mu with closed false: Close's Wait follows it
		d.feedOn.Store(true)
		s.mu.Unlock()
		// The feed exists from the start, so a subscribe before its first
		// update is served. A failure (JetStream away) is retried by every
		// update.
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.HistoryTimeout)
		if err := s.hub.h.Create(ctx, protocol.DefaultTopic); err != nil {
			s.log.Warn("feed topic not created", "cause", errKind(err))
		}
		cancel()
		go d.runFeed()
	})
	return s.faults().(*demoFaults)
}

// runFeed appends one update per FeedInterval to the feed topic; the hub
// delivers it to the subscribers (of every node, on JetStream).
func (d *demoFaults) runFeed() {
	s := d.s
	defer s.wg.Done()
	t := time.NewTicker(s.opts.FeedInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			d.produce(now)
		}
	}
}

func (d *demoFaults) produce(now time.Time) {
	s := d.s
	if d.serviceDown.Load() || d.freeze.isFrozen() {
		return
	}
	d.feedValue++
	v := d.feedValue
	data := []byte(`{"ts":` + itoa64(now.UnixMilli()) + `,"value":` + itoa64(50+(v*37)%50) + `}`)
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.HistoryTimeout)
	seq, err := s.hub.h.Append(ctx, protocol.DefaultTopic, data, true)
	cancel()
	if err != nil {
		// Logged when it starts failing and when it recovers, not 4 times a
		// second while the history backend is away.
		if s.ctx.Err() == nil && !d.feedFailing {
			d.feedFailing = true
			s.log.Warn("feed updates not stored: the history backend failed", "cause", errKind(err))
		}
		return
	}
	if d.feedFailing {
		d.feedFailing = false
		s.log.Info("feed updates stored again")
	}
	d.feedSeq.Store(seq)
}
