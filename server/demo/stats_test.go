//go:build !js

package demo

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// The demo's GET /api/stats is one object: the server's Stats and the
// demo's part (faults, restartUntil, feedSeq); the server's own
// StatsHandler carries none of the demo's part.
func TestStatsAddTheDemosPartToTheServers(t *testing.T) {
	f := newFixture(t, &server.Options{Demo: true}, &Options{RestartDowntime: time.Hour})
	f.set("restart", true)
	var st map[string]any
	getJSON(t, f.hs.URL+"/api/stats", &st)
	faults, _ := st["faults"].(map[string]any)
	if _, ok := st["feedSeq"].(float64); !ok || faults["restart"] != true || st["restartUntil"] == nil || st["open"] == nil || st["limits"] == nil {
		t.Fatalf("the demo's /api/stats: %v", st)
	}
	if got := f.demo.Stats(); got.RestartUntil == nil || !got.Faults["restart"] || got.Now.IsZero() {
		t.Fatalf("Demo.Stats: %+v", got)
	}

	plain := httptest.NewServer(f.srv.StatsHandler())
	defer plain.Close()
	st = nil
	getJSON(t, plain.URL, &st)
	for _, k := range []string{"feedSeq", "faults", "restartUntil"} {
		if _, ok := st[k]; ok {
			t.Errorf("Server.StatsHandler carries the demo's %s", k)
		}
	}
}
