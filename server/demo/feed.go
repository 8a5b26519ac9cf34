//go:build !js

package demo

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The demo feed: one small update per FeedInterval to the "feed" topic,
// produced by this node once a Demo is made over it (unless
// Options.NoFeed), delivered like any topic. A Server alone runs no feed and
// answers no demo method: both are the demo's, an application's server has
// neither.

// start makes the server the demo's server, once (New's attach calls it
// the first time only): it adds the demo's methods (echo and time; an
// application's own method of either name stays) and, unless NoFeed,
// starts the feed until the server closes. Not after Close.
func (d *state) start() {
	d.ctl.AddMethod("echo", func(_ context.Context, params json.RawMessage) (any, error) {
		if params == nil {
			return json.RawMessage("null"), nil
		}
		return params, nil
	})
	d.ctl.AddMethod("time", func(context.Context, json.RawMessage) (any, error) {
		return json.RawMessage(`{"unixMs":` + itoa64(d.opts.Now().UnixMilli()) + `}`), nil
	})
	if d.do.NoFeed {
		return
	}
	// The feed exists from the start, so a subscribe before its first
	// update is served. A failure (JetStream away) is retried by every
	// update. Bounded by Options.HistoryTimeout.
	if err := d.ctl.CreateTopic(context.Background(), protocol.DefaultTopic); err != nil {
		d.log.Warn("feed topic not created", "cause", errKind(err))
	}
	d.feedOn.Store(true)
	if !d.ctl.Go(d.runFeed) {
		d.feedOn.Store(false) // the server is closed
	}
}

// runFeed appends one update per FeedInterval to the feed topic until ctx
// (the server's) ends; the hub delivers it to the subscribers (of every
// node, on JetStream).
func (d *state) runFeed(ctx context.Context) {
	t := time.NewTicker(d.do.FeedInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.produce(ctx, now)
		}
	}
}

func (d *state) produce(ctx context.Context, now time.Time) {
	if d.serviceDown.Load() || d.ctl.Frozen() {
		return
	}
	d.feedValue++
	v := d.feedValue
	data := []byte(`{"ts":` + itoa64(now.UnixMilli()) + `,"value":` + itoa64(50+(v*37)%50) + `}`)
	seq, err := d.ctl.Append(ctx, protocol.DefaultTopic, data)
	if err != nil {
		// Logged when it starts failing and when it recovers, not 4 times a
		// second while the history backend is away.
		if ctx.Err() == nil && !d.feedFailing {
			d.feedFailing = true
			d.log.Warn("feed updates not stored: the history backend failed", "cause", errKind(err))
		}
		return
	}
	if d.feedFailing {
		d.feedFailing = false
		d.log.Info("feed updates stored again")
	}
	d.feedSeq.Store(seq)
}

// errKind names a history error for the log without its text (which can
// quote a topic or an address).
func errKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "history backend error"
}
