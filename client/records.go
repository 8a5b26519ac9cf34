package client

import "time"

// Decision records an operator can replay: every reconnect decision is a
// Record (session.go) stamped with when it was observed, what the server
// made of the lost attempt (Admission), the backoff's cap in force, the
// delay, what was left of the budget and the window, and the last event
// delivered per topic; with Config.RecordRecoveries the READY that ends a
// run of failures is a Record of its own (OutcomeReady, with how long the
// client was not READY), and
// a run that ends otherwise ends in a terminal outcome's record (gave_up,
// forbidden, ...). So a run's records read in order say what was decided,
// on what grounds, and how it ended. The native client writes them as JSON
// lines (client/native RecordLog) and reads them back (ReadRecords).

// Admission is what the server made of the attempt a decision followed, as
// the client can tell: bounded, from who closed, the code and whether the
// socket opened, never from the server's text.
type Admission string

const (
	// AdmissionNone: no attempt was lost (a run's READY, a window that
	// ran out while waiting).
	AdmissionNone Admission = ""
	// Admitted: the socket opened and the server did not refuse it at
	// once (it was lost later: a drop, a restart, the watchdog).
	Admitted Admission = "admitted"
	// Refused: the server turned the attempt away before it was proven
	// live: an HTTP refusal, or a close with a retry-after, 1013, 4001,
	// 4003 or 1008 before its first ping.
	Refused Admission = "refused"
	// Unreached: the attempt never reached the server (no socket opened,
	// no refusal): the network, a connect timeout, a failed token hook.
	Unreached Admission = "unreached"
)

// admissionOf says what the server made of the attempt cause ended.
func admissionOf(c Cause, class Class) Admission {
	refusal := class == ClassRetryAfter || class == ClassForbidden || class == ClassTokenExpired
	switch {
	case c.By == ByServer && refusal && !c.Proven:
		return Refused
	case !c.Opened && c.RetryAfter > 0:
		return Refused // an HTTP refusal's Retry-After, passed as a close reason
	case c.Opened:
		return Admitted
	}
	return Unreached
}

// TopicSeq is the last event delivered for a topic: its name (the app's
// own) and seq.
type TopicSeq struct {
	Topic string
	Seq   int64
}

// acked returns the last event delivered per topic, in the order the
// topics were first named (nil: none yet); bounded by the app's topics.
func (c *Core) acked() []TopicSeq {
	var out []TopicSeq
	for _, t := range c.topics {
		if t.has && t.Cursor > 0 {
			out = append(out, TopicSeq{Topic: t.Topic, Seq: t.Cursor})
		}
	}
	return out
}

// recordReady records the READY that ends a run of failures: how long the
// client was not READY (recovered).
func (c *Core) recordReady(now time.Time, recovered time.Duration) {
	if !c.cfg.RecordRecoveries || c.follower { // a follower tab's leader records its own
		return
	}
	c.record(Record{At: now, Session: c.session, Epoch: uint64(c.current), Attempt: c.rc.BackoffAttempt(),
		Cap: c.rc.CapInForce(), BudgetLeft: -1, WindowLeft: -1, Outcome: OutcomeReady, Recovered: recovered})
}

// CapInForce is the backoff's cap as the last delay was drawn: the
// policy's own, or as the cap growth raised it; 0 for a policy whose cap
// the library does not know (one of the program's own).
func (rc *Reconnector) CapInForce() time.Duration {
	if rc.r == nil {
		return 0 // the zero value: no rules
	}
	p := rc.r.policy
	if i := int(rc.capStep) - 1; i >= 0 && i < len(rc.r.capGrowth) {
		if capped, ok := p.(interface{ WithCap(time.Duration) Policy }); ok {
			p = capped.WithCap(rc.r.capGrowth[i].Cap)
		}
	}
	switch p := p.(type) {
	case FullJitter:
		return p.Cap
	case Exponential:
		return p.Cap
	case RandomStartLinear:
		return p.Cap
	case Fixed:
		return p.D
	}
	return 0
}
