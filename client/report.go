package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// Readiness reports (operators see the fleet's readiness). Every client
// knows what the product exists to tell: when it left READY, why, how
// long it took to come back, in how many attempts, over which transport.
// The core tells the server, on the connection it is READY on, once per
// READY:
//
//   - connect: its first READY, with the time since Start;
//   - recovery: READY again after losing it, with the time without READY
//     (the same durations as Stats.RecoveryP50 and P99);
//   - transport: a move to the preferred transport finished without
//     losing READY (transport.go), with no time.
//
// Each carries the sockets dialled, the first failure's class
// (FailureClass, or "none"), the server's refusals met (busy: 1013, and
// HTTP 429 or 503 as a driver reports them; slot: another close with a
// retry-after) and the continuity losses since the last report, the
// transport and the tab role: "leader" for a core that takes part in tab
// leadership (Config.Follower at New: the browser driver with tabs),
// "alone" otherwise (a follower holds no connection and sends nothing).
// No peer text, token, topic or payload: fixed names and bounded numbers
// (protocol/report.go). Config.NoReports turns them off.
//
// A report is one frame per READY, so at most one per recovery; the
// server rate-limits them per connection too and counts them into its
// Prometheus metrics (docs/operations.md). An older server answers the
// frame with an error frame (unexpected), which the core counts in
// Stats.ServerErrors and otherwise ignores.

// outage is what the core has seen since its last report (or Start).
type outage struct {
	dials int          // Stats.Dials at the last report
	lost  int          // Stats.ContinuityLost at the last report
	cause FailureClass // the first failure since; FailNone for none
	busy  int          // refusals that said the server is busy
	slot  int          // other closes with a retry-after
	began time.Time    // Start: a connect report's time counts from it
	// ready: the app has seen READY before (its own, or as a follower
	// tab the leader's): the next READY is a recovery, not a connect.
	ready bool
}

// reportStart notes the start: a connect report's time counts from now.
func (c *Core) reportStart(now time.Time) { c.out.began = now }

// reportLoss notes a failure: its class, if it is the first since the
// last report, and a refusal.
func (c *Core) reportLoss(cause Cause, f Failure) {
	if c.out.cause == FailNone {
		c.out.cause = f.Class
	}
	switch {
	case cause.Code == protocol.CloseTryAgainLater:
		c.out.busy++
	case cause.RetryAfter > 0:
		c.out.slot++
	}
}

// reportReady sends the report of a READY just reached: the first
// READY's connect report (a tab elected leader before any READY too),
// else a recovery from when READY was lost (lostReadyAt, which
// noteRecovery reads after; a tab taking over from a READY leader: since
// the takeover).
func (c *Core) reportReady(now time.Time) {
	kind, since := protocol.ReportRecovery, c.lostReadyAt
	switch {
	case !c.out.ready:
		kind, since = protocol.ReportConnect, c.out.began
	case since.IsZero():
		return // READY again without having lost it: nothing to tell
	}
	c.sendReport(kind, now.Sub(since))
}

// reportSawReady notes that the app saw READY (noteState, after the
// report of the step that reached it).
func (c *Core) reportSawReady(st State) {
	if st.Ready {
		c.out.ready = true
	}
}

// reportMoved sends the transport report of a move that kept READY.
func (c *Core) reportMoved() { c.sendReport(protocol.ReportTransport, 0) }

func (c *Core) sendReport(kind string, notReady time.Duration) {
	o := c.out
	c.out = outage{began: o.began, ready: o.ready, dials: c.stats.Dials, lost: c.stats.ContinuityLost}
	if c.cfg.NoReports || c.current == 0 || c.follower {
		return
	}
	cause := string(o.cause)
	if o.cause == FailNone {
		cause = protocol.CauseNone
	}
	role := protocol.RoleAlone
	if c.cfg.Follower {
		role = protocol.RoleLeader
	}
	r := &protocol.Report{Kind: kind, NotReadyMs: clampReport(int64(notReady/time.Millisecond), protocol.MaxReportMs),
		Attempts: clampReport(int64(c.stats.Dials-o.dials), protocol.MaxReportCount), Cause: cause, Transport: c.via.String(),
		RefusedBusy: clampReport(int64(o.busy), protocol.MaxReportCount), RefusedSlot: clampReport(int64(o.slot), protocol.MaxReportCount),
		Lost: clampReport(int64(c.stats.ContinuityLost-o.lost), protocol.MaxReportCount), Role: role}
	c.stats.Reports++
	c.send(protocol.Message{Type: protocol.TypeReport, Report: r})
}

// clampReport keeps n in a report's range: a day of waiting or a
// hundred thousand attempts are reported as the bound, not refused.
func clampReport(n, most int64) int64 { return max(0, min(n, most)) }
