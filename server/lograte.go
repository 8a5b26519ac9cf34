//go:build !js

package server

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// A peer can make the server log again and again: a result over the cap
// per request, a refused or failing subscribe per frame. Those lines go
// through rateLog, so a peer cannot drive the log's volume: per cause, at
// most logBurst lines per logWindow, then none until the window has
// passed; the first line after it carries "suppressed", how many lines of
// that cause were dropped meanwhile. Close logs what is still owed, one
// line per cause.
//
// A cause is the line's message: a constant the call site chose, never
// the peer's text, so the causes are a small fixed set. maxLogCauses
// bounds the map all the same; past it, the other causes share one
// allowance.
const (
	logBurst     = 5           // lines per cause per window
	logWindow    = time.Minute // the window, from a cause's first line in it
	maxLogCauses = 128         // causes tracked apart; more share one
)

// logLimiter is the per-cause count behind rateLog; now is passed in, so
// a test drives it with a fake clock.
type logLimiter struct {
	burst  int
	window time.Duration
	max    int // causes tracked apart

	mu     sync.Mutex
	causes map[string]*logCause
}

type logCause struct {
	level      slog.Level // of its last line, for the one Close logs
	start      time.Time  // the current window's start
	n          int        // lines let through in the window
	suppressed int64      // lines dropped since the last one let through
}

// overflowCause is the shared entry of the causes past max.
const overflowCause = ""

func newLogLimiter(burst int, window time.Duration, max int) *logLimiter {
	return &logLimiter{burst: burst, window: window, max: max, causes: map[string]*logCause{}}
}

// allow reports whether a line of cause may be logged at now, and, when it
// may, how many lines of that cause were dropped before it.
func (l *logLimiter) allow(cause string, level slog.Level, now time.Time) (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.causes[cause]
	if c == nil {
		if len(l.causes) >= l.max {
			cause = overflowCause
			c = l.causes[cause]
		}
		if c == nil {
			c = &logCause{start: now}
			l.causes[cause] = c
		}
	}
	c.level = level
	// A clock that went back (a test's, or a step of the wall clock)
	// starts a window too, rather than holding lines back until it
	// catches up.
	if now.Sub(c.start) >= l.window || now.Before(c.start) {
		c.start, c.n = now, 0
	}
	if c.n >= l.burst {
		c.suppressed++
		return false, 0
	}
	c.n++
	n := c.suppressed
	c.suppressed = 0
	return true, n
}

// owedLine is a cause with lines dropped since its last one.
type owedLine struct {
	cause      string
	level      slog.Level
	suppressed int64
}

// owed returns the causes with lines dropped since their last one, by
// cause, and forgets those counts.
func (l *logLimiter) owed() []owedLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []owedLine
	for cause, c := range l.causes {
		if c.suppressed > 0 {
			out = append(out, owedLine{cause: cause, level: c.level, suppressed: c.suppressed})
			c.suppressed = 0
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cause < out[j].cause })
	return out
}

// rateLog is a *slog.Logger's Debug, Info, Warn and Error, rate limited
// per message (see logLimiter). Lines below the logger's level are not
// counted.
type rateLog struct {
	base func() *slog.Logger // the server's logger when the line is logged
	now  func() time.Time    // Options.Now
	lim  *logLimiter

	// subs is the run of subscribes the History failed (subscribeFailed).
	subs outage
}

func newRateLog(base func() *slog.Logger, now func() time.Time) *rateLog {
	return &rateLog{base: base, now: now, lim: newLogLimiter(logBurst, logWindow, maxLogCauses)}
}

func (r *rateLog) Debug(msg string, args ...any) { r.log(slog.LevelDebug, msg, args...) }
func (r *rateLog) Info(msg string, args ...any)  { r.log(slog.LevelInfo, msg, args...) }
func (r *rateLog) Warn(msg string, args ...any)  { r.log(slog.LevelWarn, msg, args...) }
func (r *rateLog) Error(msg string, args ...any) { r.log(slog.LevelError, msg, args...) }

func (r *rateLog) log(level slog.Level, msg string, args ...any) {
	l, ctx := r.base(), context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	ok, n := r.lim.allow(msg, level, r.now())
	if !ok {
		return
	}
	if n > 0 {
		args = append(args[:len(args):len(args)], "suppressed", n)
	}
	l.Log(ctx, level, msg, args...)
}

// flush logs, per cause with lines dropped since its last one, its
// message with the count (and none of the dropped lines' attributes).
func (r *rateLog) flush() {
	l := r.base()
	for _, o := range r.lim.owed() {
		msg := o.cause
		if msg == overflowCause {
			msg = "log lines of other causes"
		}
		l.Log(context.Background(), o.level, msg, "suppressed", o.suppressed)
	}
}

// outage logs a run of failures of one kind as two lines: the first
// failure, and the first success after it with how many failed. Both go
// through the rate limit: a History that fails for some topics and not
// for others must not turn every other operation into a line.
type outage struct {
	failing atomic.Bool // read without mu on every success
	mu      sync.Mutex  // orders the two lines
	failed  int64       // failures since the first line, under mu
}

func (o *outage) fail(r *rateLog, msg string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed++
	if !o.failing.Load() {
		o.failing.Store(true)
		r.Warn(msg, args...)
	}
}

func (o *outage) ok(r *rateLog, msg string) {
	if !o.failing.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failing.Load() {
		o.failing.Store(false)
		r.Info(msg, "failed", o.failed)
		o.failed = 0
	}
}

// subscribeFailed logs a subscribe whose topic the History failed to load
// or create: one WARN for a run of them, and subscribeLoaded one INFO when
// a topic loads again, as publishes do. A subscribe cut short because a
// connection ended (its own, or the one whose load it waited on) is not
// the History failing: debug, and not counted.
func (s *Server) subscribeFailed(err error) {
	if errors.Is(err, context.Canceled) {
		s.logs.Debug("subscribe cut short: a connection ended while its topic loaded")
		return
	}
	s.logs.subs.fail(s.logs, "subscribes refused: the history backend failed", "cause", errKind(err))
}

// subscribeLoaded ends a run of subscribe failures, if one was on: a topic
// was loaded from the History.
func (s *Server) subscribeLoaded() {
	s.logs.subs.ok(s.logs, "subscribes served again")
}
