package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// Stage 8's options reach the core's Config; tabs is on by default at
// stage 8 only; bad values are refused with a message that names them.
func TestStage8Options(t *testing.T) {
	o, err := ParseOptions(fakeGetter{"url": "ws://h/ws", "transports": "http,websocket", "reprobeMs": 1500.0, "sendStallMs": 2000.0,
		"degradedMs": 100.0, "offlineMs": 900.0, "pauseWhenHidden": true, "queue": true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.Config(client.Config{})
	if len(cfg.Transports) != 2 || cfg.Transports[0] != client.TransportHTTP || cfg.Transports[1] != client.TransportWebSocket ||
		cfg.ReprobeInterval != 1500*time.Millisecond || cfg.SendStallTimeout != 2*time.Second || cfg.DegradedAfter != 100*time.Millisecond ||
		cfg.OfflineAfter != 900*time.Millisecond || !cfg.PauseWhenHidden || !cfg.QueueWhileNotReady {
		t.Fatalf("config %+v", cfg)
	}
	if !o.Tabs {
		t.Fatal("tabs is off by default at stage 8")
	}
	if cfg := (Options{}).Config(client.Config{Transports: []client.Transport{client.TransportWebSocket}}); len(cfg.Transports) != 1 {
		t.Fatalf("no transports option replaced the stage's: %v", cfg.Transports)
	}
	for stage, want := range map[float64]bool{7: false, 8: true} {
		o, err := ParseOptions(fakeGetter{"url": "ws://h", "stage": stage})
		if err != nil || o.Tabs != want {
			t.Fatalf("stage %v: tabs %v, %v", stage, o.Tabs, err)
		}
	}
	o, err = ParseOptions(fakeGetter{"url": "ws://h", "tabs": false})
	if err != nil || o.Tabs {
		t.Fatalf("tabs: false: %v %v", o.Tabs, err)
	}
	o, err = ParseOptions(fakeGetter{"url": "ws://h", "stage": 5.0, "tabs": true})
	if err != nil || !o.Tabs {
		t.Fatalf("tabs: true at stage 5: %v %v", o.Tabs, err)
	}
	for _, bad := range []fakeGetter{
		{"url": "ws://h", "transports": ""}, {"url": "ws://h", "transports": "ws"}, {"url": "ws://h", "transports": "http,http"},
		{"url": "ws://h", "transports": "websocket,"}, {"url": "ws://h", "transports": "websocket,http,websocket"},
		{"url": "ws://h", "transports": 1.0}, {"url": "ws://h", "reprobeMs": 0.0}, {"url": "ws://h", "sendStallMs": 2.5},
		{"url": "ws://h", "degradedMs": -1.0}, {"url": "ws://h", "offlineMs": "x"}, {"url": "ws://h", "tabs": "yes"},
		{"url": "ws://h", "queue": 1.0}, {"url": "ws://h", "pauseWhenHidden": "true"},
	} {
		if _, err := ParseOptions(bad); err == nil || !strings.HasPrefix(err.Error(), "wsready.connect:") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// The state's stage 8 fields: the transport by its JS name, since when not
// READY (ms, or null), the banners, and the tab's part.
func TestStage8StateValue(t *testing.T) {
	since := time.UnixMilli(1_700_000_000_123)
	s := StateValue(client.State{Via: client.TransportHTTP, NotReadySince: since, Degraded: true}, TabsOn)
	if s["via"] != "http" || s["notReadySince"] != 1_700_000_000_123.0 || s["degraded"] != true || s["offline"] != false ||
		s["leader"] != true || s["follower"] != false || s["tabs"] != "on" {
		t.Fatalf("%v", s)
	}
	s = StateValue(client.State{Via: client.TransportWebSocket, Ready: true, Follower: true}, TabsOn)
	if s["via"] != "websocket" || s["notReadySince"] != nil || s["leader"] != false || s["follower"] != true {
		t.Fatalf("%v", s)
	}
	for _, tabs := range []Tabs{TabsOff, TabsUnsupported} {
		if s := StateValue(client.State{}, tabs); s["leader"] != false || s["tabs"] != string(tabs) || s["via"] != nil {
			t.Fatalf("%s: %v", tabs, s)
		}
	}
	if s := StateValue(client.State{Ended: client.Stopped}, TabsOn); s["leader"] != false {
		t.Fatalf("a stopped client leads: %v", s)
	}
	p := PresenceValue(client.PresenceEvent{Topic: "room", Event: protocol.PresenceJoin, User: "ann"})
	if p["topic"] != "room" || p["event"] != "join" || p["user"] != "ann" {
		t.Fatalf("%v", p)
	}
	st := StatsValue(client.Stats{SendStalls: 2, HTTPProbes: 1, Forwarded: 3})
	if st["sendStalls"] != 2 || st["httpProbes"] != 1 || st["forwarded"] != 3 {
		t.Fatalf("%v", st)
	}
}

// The readiness reports are on unless the page says reports: false.
func TestReportsOption(t *testing.T) {
	for _, c := range []struct {
		opts fakeGetter
		off  bool
	}{{fakeGetter{"url": "ws://h"}, false}, {fakeGetter{"url": "ws://h", "reports": true}, false}, {fakeGetter{"url": "ws://h", "reports": false}, true}} {
		o, err := ParseOptions(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := o.Config(client.Config{}); cfg.NoReports != c.off {
			t.Errorf("%v: NoReports %v, want %v", c.opts, cfg.NoReports, c.off)
		}
	}
	if _, err := ParseOptions(fakeGetter{"url": "ws://h", "reports": "no"}); err == nil || !strings.Contains(err.Error(), "reports must be true or false") {
		t.Errorf("reports: \"no\": %v", err)
	}
}

// In-band token refresh is on unless the page says inBandRefresh: false
// (client.Config.NoInBandRefresh).
func TestInBandRefreshOption(t *testing.T) {
	for _, c := range []struct {
		opts fakeGetter
		off  bool
	}{{fakeGetter{"url": "ws://h"}, false}, {fakeGetter{"url": "ws://h", "inBandRefresh": true}, false},
		{fakeGetter{"url": "ws://h", "inBandRefresh": false}, true}} {
		o, err := ParseOptions(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := o.Config(client.Config{}); cfg.NoInBandRefresh != c.off {
			t.Errorf("%v: NoInBandRefresh %v, want %v", c.opts, cfg.NoInBandRefresh, c.off)
		}
	}
	if _, err := ParseOptions(fakeGetter{"url": "ws://h", "inBandRefresh": "no"}); err == nil || !strings.Contains(err.Error(), "inBandRefresh must be true or false") {
		t.Errorf("inBandRefresh: \"no\": %v", err)
	}
}

// StatsValue's key table names every counter once: 36 int counters and
// four converted ones, no empty key.
func TestStatsKeys(t *testing.T) {
	st := StatsValue(client.Stats{Dials: 1, Resent: 7, LastSeq: 9})
	if len(st) != len(statsKeys)+4 || st[""] != nil {
		t.Fatalf("%d keys: %v", len(st), st)
	}
	if st["dials"] != 1 || st["resent"] != 7 || st["lastSeq"] != float64(9) {
		t.Fatalf("%v", st)
	}
}
