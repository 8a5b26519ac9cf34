//go:build !js

package native

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
)

// A nil *Options is every default, and the copy shares nothing the caller
// could change later.
func TestCloneWithDefaults(t *testing.T) {
	o, err := (*Options)(nil).cloneWithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.CloseTimeout != 2*time.Second || o.Config == nil || o.Config.Disable != (client.Fixes{}) || o.Config.Rand == nil {
		t.Fatalf("defaults: CloseTimeout %v, Config %+v", o.CloseTimeout, o.Config)
	}
	if o.Config.Trace || o.Config.Auth {
		t.Fatalf("nil options turned on Trace %v or Auth %v", o.Config.Trace, o.Config.Auth)
	}

	cfg := stages.Must(3)
	urls := []string{"ws://a.example/ws"}
	in := &Options{Config: cfg, URLs: urls, CloseTimeout: time.Second,
		OnEvent: func(client.Event) {}, Token: func(context.Context, bool) (string, error) { return "", nil }}
	o, err = in.cloneWithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.CloseTimeout != time.Second || o.Config.Disable != stages.Must(3).Disable || !o.Config.Trace || !o.Config.Auth || o.Config.Rand == nil {
		t.Fatalf("clone: CloseTimeout %v, Config %+v", o.CloseTimeout, o.Config)
	}
	if cfg.Rand != nil || cfg.Trace || cfg.Auth {
		t.Fatal("cloneWithDefaults changed the caller's Config")
	}
	urls[0] = "ws://changed.example/ws"
	if o.URLs[0] != "ws://a.example/ws" {
		t.Fatal("the clone shares the caller's URLs")
	}
}

// Dial refuses what it cannot use with an *OptionError that names the
// option, wraps the cause and reads as a configuration error, not as a
// dial failure (it used to say "failed to dial").
func TestDialRefusesInvalidOptions(t *testing.T) {
	bad := stages.Must(5)
	bad.Budget = -1
	for _, tc := range []struct {
		name, url, option string
		opts              *Options
		cause             any // a target for errors.As, or nil
	}{
		{"config", "ws://127.0.0.1:1/ws", "Config", &Options{Config: bad}, nil},
		{"negative close timeout", "ws://127.0.0.1:1/ws", "CloseTimeout", &Options{CloseTimeout: -time.Second}, nil},
		{"url scheme", "ftp://127.0.0.1/ws", "url", nil, nil},
		{"url without host", "ws:///ws", "url", nil, nil},
		{"url that does not parse", "ws://[::1/ws", "url", nil, new(*url.Error)},
		{"more urls", "ws://127.0.0.1:1/ws", "URLs", &Options{URLs: []string{"127.0.0.1:2"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tc.url, tc.opts)
			if err == nil {
				c.Close()
				t.Fatal("Dial accepted it")
			}
			var oe *OptionError
			if !errors.Is(err, ErrInvalidOptions) || !errors.As(err, &oe) || oe.Option != tc.option {
				t.Fatalf("Dial: %v (%T), want an *OptionError for %s", err, err, tc.option)
			}
			if tc.cause != nil && !errors.As(err, tc.cause) {
				t.Fatalf("Dial: %v does not wrap its cause %T", err, tc.cause)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "failed to configure the client: invalid "+tc.option+": ") || strings.Contains(msg, "dial") {
				t.Fatalf("Dial's error reads %q", msg)
			}
		})
	}
}

// The core's own refusal is the OptionError's cause, word for word.
func TestDialWrapsTheConfigError(t *testing.T) {
	cfg := stages.Must(5)
	cfg.Window = -time.Second
	_, err := Dial(context.Background(), "ws://127.0.0.1:1/ws", &Options{Config: cfg})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Err == nil || !strings.Contains(oe.Err.Error(), "Window must not be negative") {
		t.Fatalf("Dial: %v", err)
	}
}

// A ctx that has ended is Dial's error, wrapped.
func TestDialWithAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, "ws://127.0.0.1:1/ws", nil); !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Dial: %v", err)
	}
}
