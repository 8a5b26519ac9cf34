//go:build !js

package demo

import (
	"errors"
	"fmt"
	"time"

	"github.com/wsready/wsready/server/internal/faults"
)

// Options are the demo's settings: its feed and the durations its
// switches use. A nil *Options, or any zero field, is the default; a
// negative duration is refused (New and Validate name every field they
// refuse).
type Options struct {
	// FeedInterval is the time between two feed updates. Default 250ms.
	FeedInterval time.Duration
	// NoFeed keeps this node from producing the demo's feed (New starts
	// it; a Server alone never runs one). With several demo nodes on one
	// NATS, exactly one should produce it (wsready serve -feed-leader).
	// Default: the demo's server produces it.
	NoFeed bool
	// SlowReplyDelay is how late responses arrive while Slow replies is on.
	// Default 8s (beyond the client's 5s request timeout).
	SlowReplyDelay time.Duration
	// FlapAfter is how long a connection lives while Flapping is on.
	// Default 300ms.
	FlapAfter time.Duration
	// JitterMax is the most a ping is delayed while Jitter is on (each by
	// a random 0 to JitterMax). Default 800ms.
	JitterMax time.Duration
	// RestartDowntime is how long new connections are refused after
	// Restart. Default 4s.
	RestartDowntime time.Duration
	// ShortTicketLife is a ticket's life while the Short tokens switch is
	// on. Default 5s.
	ShortTicketLife time.Duration
	// OverloadRetryAfter is the retry-after the Overload switch gives.
	// Default 5s.
	OverloadRetryAfter time.Duration
}

// Validate reports every field New would refuse, or nil.
func (o *Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// withDefaults returns a copy of o with every zero field at its default,
// or an error naming every field refused.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	var errs []error
	// One line a field: its name, where it is, its default.
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"FeedInterval", &c.FeedInterval, 250 * time.Millisecond},
		{"SlowReplyDelay", &c.SlowReplyDelay, 8 * time.Second},
		{"FlapAfter", &c.FlapAfter, 300 * time.Millisecond},
		{"JitterMax", &c.JitterMax, 800 * time.Millisecond},
		{"RestartDowntime", &c.RestartDowntime, 4 * time.Second},
		{"ShortTicketLife", &c.ShortTicketLife, 5 * time.Second},
		{"OverloadRetryAfter", &c.OverloadRetryAfter, 5 * time.Second},
	} {
		switch {
		case *f.v < 0:
			errs = append(errs, fmt.Errorf("demo.Options.%s is %v: a duration must be positive (0 for the default, %v)", f.name, *f.v, f.def))
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if len(errs) > 0 {
		return Options{}, fmt.Errorf("failed to validate the demo's options: %w", errors.Join(errs...))
	}
	return c, nil
}

// settings are the durations the server's side of the switches uses.
func (o *Options) settings() faults.Settings {
	return faults.Settings{SlowReplyDelay: o.SlowReplyDelay, FlapAfter: o.FlapAfter, JitterMax: o.JitterMax,
		ShortTicketLife: o.ShortTicketLife, OverloadRetryAfter: o.OverloadRetryAfter}
}
