//go:build !js

package demo

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/server"
)

// GET /api/faults lists every switch of the table with what the page
// needs to render it (name, label, description, kind, group) and its
// state.
func TestFaultsListsEverySwitchForThePage(t *testing.T) {
	f := newFixture(t, &server.Options{Demo: true, Auth: server.AuthOptional}, nil)
	var v faultsView
	getJSON(t, f.hs.URL+"/api/faults", &v)
	if !v.Demo || !v.Auth || len(v.Switches) != len(switches) {
		t.Fatalf("faults: %+v", v)
	}
	for i, sw := range v.Switches {
		if sw.Name != switches[i].name || sw.Label == "" || sw.Description == "" || sw.Kind == "" || sw.Group == "" || sw.On {
			t.Errorf("switch %d: %+v", i, sw)
		}
	}
	f.set("slowReplies", true)
	getJSON(t, f.hs.URL+"/api/faults", &v)
	for _, sw := range v.Switches {
		if sw.On != (sw.Name == "slowReplies") {
			t.Errorf("after slowReplies on: %s is %v", sw.Name, sw.On)
		}
	}
	if !strings.Contains(v.Switches[1].Description, "unsubscribed") {
		t.Errorf("serviceDown described as %q", v.Switches[1].Description)
	}
}

// Demo.Set takes what the entry's kind takes and refuses the rest, naming
// the switch; an unknown name lists the known ones.
func TestDemoSetChecksNameAndValue(t *testing.T) {
	f := newFixture(t, nil, &Options{NoFeed: true})
	for _, c := range []struct {
		name  string
		value any
		want  string
	}{
		{"explode", true, "unknown switch \"explode\"; switches are freeze, serviceDown"},
		{"freeze", "yes", "switch freeze takes true or false"},
		{"revoke", true, "switch revoke takes a client id"},
		{"revoke", "not an id!", "a client id is 1 to 64"},
	} {
		err := f.demo.Set(c.name, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "failed to set switch "+c.name) {
			t.Errorf("Set(%q, %v): %v, want %q", c.name, c.value, err, c.want)
		}
	}
	if st := f.demo.Stats(); st.Faults["freeze"] || st.Faults["revoke"] {
		t.Fatalf("a refused Set changed a switch: %v", st.Faults)
	}
	f.set("revoke", "someone")
	f.set("restart", false) // an action: false is ignored
	if st := f.demo.Stats(); !st.Faults["revoke"] || st.Faults["restart"] || st.Auth.Revoked != 1 {
		t.Fatalf("after revoke: %v, %d revoked", st.Faults, st.Auth.Revoked)
	}
}

// A new switch is one entry in the table: the JSON, the HTTP API, Set and
// Stats all read it, with no other edit.
func TestASwitchIsOneEntry(t *testing.T) {
	var on bool
	saved := switches
	switches = append(append([]faultSwitch(nil), switches...), faultSwitch{
		name: "testSwitch", label: "Test", kind: kindToggle, group: groupServer,
		describe: func(*Options) string { return "a switch this test added" },
		on:       func(*state, time.Time) bool { return on },
		set:      func(_ *state, v switchValue) error { on = v.on; return nil },
	})
	t.Cleanup(func() { switches = saved })
	f := newFixture(t, &server.Options{Demo: true}, &Options{NoFeed: true})
	if code, msg := post(t, f.hs.URL+"/api/faults", "application/json", `{"testSwitch":true}`); code != http.StatusOK {
		t.Fatalf("POST: %d %q", code, msg)
	}
	var v faultsView
	getJSON(t, f.hs.URL+"/api/faults", &v)
	last := v.Switches[len(v.Switches)-1]
	if !on || last.Name != "testSwitch" || !last.On || last.Description != "a switch this test added" || !f.demo.Stats().Faults["testSwitch"] {
		t.Fatalf("the new switch: on %v, listed %+v, stats %v", on, last, f.demo.Stats().Faults)
	}
	f.set("testSwitch", false)
	if on {
		t.Fatal("Set did not reach the new switch")
	}
}
