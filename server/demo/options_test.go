//go:build !js

package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// Zero is each field's default, nil the defaults; a negative duration is
// refused, every one named at once, and New then attaches nothing.
func TestOptionsDefaultsAndRefusals(t *testing.T) {
	c, err := (*Options)(nil).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{FeedInterval: 250 * time.Millisecond, SlowReplyDelay: 8 * time.Second, FlapAfter: 300 * time.Millisecond,
		JitterMax: 800 * time.Millisecond, RestartDowntime: 4 * time.Second, ShortTicketLife: 5 * time.Second, OverloadRetryAfter: 5 * time.Second}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if c, _ := (&Options{FlapAfter: time.Second, NoFeed: true}).withDefaults(); c.FlapAfter != time.Second || !c.NoFeed || c.JitterMax != want.JitterMax {
		t.Fatalf("a set field kept: %+v", c)
	}
	bad := &Options{FeedInterval: -1, OverloadRetryAfter: -time.Second}
	err = bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "demo.Options.FeedInterval is -1ns") || !strings.Contains(err.Error(), "demo.Options.OverloadRetryAfter is -1s") {
		t.Fatalf("Validate: %v", err)
	}
	srv, err := server.New(&server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if d, err := New(srv, nil, bad); d != nil || err == nil || !strings.HasPrefix(err.Error(), "failed to make the demo: ") {
		t.Fatalf("New with bad options: %v, %v", d, err)
	}
	// Nothing was attached: a later New with good options is the demo.
	d, err := New(srv, nil, &Options{NoFeed: true, SlowReplyDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.f.Settings().SlowReplyDelay; got != time.Minute {
		t.Fatalf("the server's settings: SlowReplyDelay %v", got)
	}
}
