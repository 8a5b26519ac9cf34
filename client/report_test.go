package client

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// reports returns every report frame the core sent, on any socket, in
// socket order.
func (h *harness) reports() []*protocol.Report {
	var out []*protocol.Report
	for _, s := range h.dials {
		for _, m := range h.sockets[s].sent {
			if m.Type == protocol.TypeReport {
				out = append(out, m.Report)
			}
		}
	}
	return out
}

// fmtReports shows reports by value in a failure message.
func fmtReports(r []*protocol.Report) string {
	var out []string
	for _, x := range r {
		out = append(out, fmt.Sprintf("%+v", *x))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// lossesAndRecoveries takes a READY client through n losses, each with
// fails failed attempts before the one that recovers.
func lossesAndRecoveries(h *harness, n, fails int) {
	h.t.Helper()
	for range n {
		h.keepAlive(h.last(), time.Second)
		h.closed(h.last())
		for range fails {
			h.advanceToDial()
			h.closed(h.last())
		}
		h.advanceToDial()
		h.ready()
	}
}

// One report per READY, whatever the number of attempts on the way: the
// first READY's connect report, then one recovery report per recovery,
// each on the socket READY came back on, counting that recovery's dials.
func TestOneReportPerRecovery(t *testing.T) {
	for _, stage := range []int{6, 7, 8} {
		h := newHarness(t, stage)
		h.start()
		h.ready()
		lossesAndRecoveries(h, 4, 2)
		got := h.reports()
		if st := h.c.Stats(); st.Recoveries != 4 || len(got) != 5 || st.Reports != 5 {
			t.Fatalf("stage %d: %d recoveries, %d reports sent (Stats.Reports %d), want 4 and 5", stage, st.Recoveries, len(got), st.Reports)
		}
		if got[0].Kind != protocol.ReportConnect || got[0].Attempts != 1 {
			t.Errorf("stage %d: first report %+v, want a connect report after 1 attempt", stage, got[0])
		}
		for i, r := range got[1:] {
			if r.Kind != protocol.ReportRecovery || r.Attempts != 3 || r.Cause != "network" || r.NotReadyMs <= 0 || r.Transport != "ws" || r.Role != protocol.RoleAlone {
				t.Errorf("stage %d: recovery report %d: %+v, want a recovery after 3 attempts, cause network", stage, i+1, r)
			}
		}
		// Each went on the socket READY came back on, once.
		for _, s := range h.dials {
			if n := h.count(protocol.TypeReport, s); n > 1 {
				t.Errorf("stage %d: socket %d carried %d reports", stage, s, n)
			}
		}
	}
}

// The time a recovery report gives is the time without READY, the same
// the core's recovery quantiles take.
func TestReportTimeIsTheTimeWithoutReady(t *testing.T) {
	h := newHarness(t, 8)
	h.start()
	h.ready()
	h.keepAlive(h.last(), time.Second)
	h.closed(h.last())
	lost := h.now
	h.advanceToDial()
	h.advance(1234 * time.Millisecond)
	h.ready()
	want := h.now.Sub(lost).Milliseconds()
	r := h.reports()
	if len(r) != 2 || r[1].NotReadyMs != want || h.c.Stats().RecoveryP50.Milliseconds() != want {
		t.Fatalf("reports %s, p50 %v; want a recovery of %d ms", fmtReports(r), h.c.Stats().RecoveryP50, want)
	}
}

// Config.NoReports: nothing is sent, however many recoveries.
func TestNoReportsWhenOff(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.NoReports = true })
	h.start()
	h.ready()
	lossesAndRecoveries(h, 3, 1)
	if r := h.reports(); len(r) != 0 || h.c.Stats().Recoveries != 3 || h.c.Stats().Reports != 0 {
		t.Fatalf("NoReports: %d reports sent over %d recoveries", len(r), h.c.Stats().Recoveries)
	}
}

// A tab that takes part in tab leadership reports as the leader; its
// followers hold no connection and send nothing.
func TestReportRoleOfALeaderTab(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Follower = true })
	h.start()
	if len(h.dials) != 0 {
		t.Fatal("a follower dialled")
	}
	h.c.BecameLeader(h.now)
	h.drain()
	h.ready()
	r := h.reports()
	if len(r) != 1 || r[0].Role != protocol.RoleLeader || r[0].Kind != protocol.ReportConnect {
		t.Fatalf("reports %s, want the leader's connect report", fmtReports(r))
	}
}

// A follower tab whose leader was READY and that takes over reports a
// recovery: the app had READY through the leader; the time counts from
// the takeover.
func TestReportOfATakeoverIsARecovery(t *testing.T) {
	h := newHarness(t, 8, func(c *Config) { c.Follower = true })
	h.start()
	h.c.LeaderState(State{Transport: Up, Protocol: Up, Service: Up, Ready: true, Epoch: 3, Via: TransportWebSocket}, h.now)
	h.drain()
	if !h.state().Ready {
		t.Fatalf("the leader's READY is not the follower's: %+v", h.state())
	}
	h.advance(time.Second)
	h.c.BecameLeader(h.now)
	h.drain()
	took := h.now
	h.advance(300 * time.Millisecond)
	h.ready()
	r := h.reports()
	if len(r) != 1 || r[0].Kind != protocol.ReportRecovery || r[0].NotReadyMs != h.now.Sub(took).Milliseconds() || r[0].Role != protocol.RoleLeader {
		t.Fatalf("reports %s, want one recovery of %v from the leader", fmtReports(r), h.now.Sub(took))
	}
}

// A report's cause is a failure class or "none": protocol.ReportCauses,
// the list the server accepts, names every FailureClass failure.go
// declares, so no class the core can report is dropped as invalid.
func TestReportCausesAreTheFailureClasses(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "failure.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var classes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "FailureClass" {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				classes = append(classes, s)
			}
		}
	}
	if len(classes) < 10 {
		t.Fatalf("read %d failure classes from failure.go: %q", len(classes), classes)
	}
	for _, c := range classes {
		if c == "" {
			c = protocol.CauseNone
		}
		if !slices.Contains(protocol.ReportCauses, c) {
			t.Errorf("failure class %q is not in protocol.ReportCauses", c)
		}
	}
	if len(protocol.ReportCauses) != len(classes) {
		t.Errorf("protocol.ReportCauses %q, failure classes %q", protocol.ReportCauses, classes)
	}
}

// The connect report names the transport READY came on (HTTP after the
// fallback, with the 4 sockets dialled and the first failure's class); a
// move back to WebSocket that keeps READY is a transport report on the
// new socket, with the one socket it dialled and no time; nothing goes on
// the socket left behind.
func TestReportsOfTheFallbackAndTheMoveBack(t *testing.T) {
	h, old := onHTTP(t, func(c *Config) { c.ReprobeInterval = time.Minute })
	r := h.reports()
	if len(r) != 1 || r[0].Kind != protocol.ReportConnect || r[0].Transport != "http" || r[0].Attempts != 4 || r[0].Cause != "network" {
		t.Fatalf("reports after the fallback: %s", fmtReports(r))
	}
	h.keepAlive(old, time.Minute)
	cand := h.last()
	h.open(cand)
	h.ping(cand, 1000)
	h.subscribedAt(cand, "feed", 1, 0, "A")
	if st := h.state(); !st.Ready || st.Via != TransportWebSocket || h.c.Stats().Moves != 1 {
		t.Fatalf("no move: %+v", st)
	}
	r = h.reports()
	if len(r) != 2 || h.count(protocol.TypeReport, cand) != 1 || h.count(protocol.TypeReport, old) != 1 {
		t.Fatalf("reports %s (candidate %d, old %d), want one transport report on the candidate", fmtReports(r), h.count(protocol.TypeReport, cand), h.count(protocol.TypeReport, old))
	}
	if got := r[1]; got.Kind != protocol.ReportTransport || got.Transport != "ws" || got.Attempts != 1 || got.NotReadyMs != 0 || got.Cause != protocol.CauseNone {
		t.Fatalf("transport report %+v", got)
	}
}
