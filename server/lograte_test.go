//go:build !js

package server

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock a test moves by hand: the point is determinism.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// count is how many lines at level have the message msg.
func (b *logBuf) count(level, msg string) int {
	n := 0
	for _, l := range b.lines(level) {
		if strings.Contains(l, "msg="+msg+" ") || strings.HasSuffix(l, "msg="+msg) || strings.Contains(l, "msg="+strconv.Quote(msg)) {
			n++
		}
	}
	return n
}

// Per cause, burst lines per window get through; the rest are counted,
// and the first line of the next window carries the count. Causes are
// apart: one cause's flood does not silence another.
func TestLogLimiterLetsABurstThroughPerWindowAndCountsTheRest(t *testing.T) {
	clk := newFakeClock()
	l := newLogLimiter(3, time.Minute, 8)
	let := 0
	for range 100 {
		if ok, n := l.allow("a", slog.LevelError, clk.now()); ok {
			let++
			if n != 0 {
				t.Fatalf("a line in the first window carries suppressed=%d", n)
			}
		}
	}
	if let != 3 {
		t.Fatalf("%d of 100 lines let through in one window, want 3", let)
	}
	if ok, _ := l.allow("b", slog.LevelWarn, clk.now()); !ok {
		t.Fatal("another cause was held back by the first one's flood")
	}
	clk.add(59 * time.Second)
	if ok, _ := l.allow("a", slog.LevelError, clk.now()); ok {
		t.Fatal("a line let through before the window ended")
	}
	clk.add(time.Second)
	ok, n := l.allow("a", slog.LevelError, clk.now())
	if !ok || n != 98 {
		t.Fatalf("first line of the next window: ok=%v suppressed=%d, want true 98", ok, n)
	}
	if ok, n := l.allow("a", slog.LevelError, clk.now()); !ok || n != 0 {
		t.Fatalf("second line of the window: ok=%v suppressed=%d, want true 0 (the count was told)", ok, n)
	}
	// A clock that goes back starts a window rather than holding lines.
	l.allow("a", slog.LevelError, clk.now())
	l.allow("a", slog.LevelError, clk.now())
	clk.add(-time.Hour)
	if ok, n := l.allow("a", slog.LevelError, clk.now()); !ok || n != 1 {
		t.Fatalf("after the clock went back: ok=%v suppressed=%d, want true 1", ok, n)
	}
}

// The causes are fixed strings, yet the map is capped: past max, the
// other causes share one allowance.
func TestLogLimiterCapsItsCauses(t *testing.T) {
	clk := newFakeClock()
	l := newLogLimiter(2, time.Minute, 4)
	let := 0
	for i := range 1000 {
		if ok, _ := l.allow(fmt.Sprint("cause", i), slog.LevelWarn, clk.now()); ok {
			let++
		}
	}
	if len(l.causes) > 5 {
		t.Fatalf("%d causes tracked, want at most 4 and the shared one", len(l.causes))
	}
	if let != 4+2 {
		t.Fatalf("%d lines of 1000 causes let through, want 4 (one each for the first 4) + 2 (the shared allowance)", let)
	}
	owed := l.owed()
	if len(owed) != 1 || owed[0].cause != overflowCause || owed[0].suppressed != 1000-6 {
		t.Fatalf("owed %+v, want the shared cause with 994", owed)
	}
}

// rateLog logs through the server's logger as it is when the line is
// logged; lines below the logger's level are not counted; flush logs one
// line per cause with lines dropped since its last one.
func TestRateLogSaysWhatItSuppressed(t *testing.T) {
	clk := newFakeClock()
	var logs logBuf
	lg := slog.New(slog.NewTextHandler(&logs, nil)) // info
	r := newRateLog(func() *slog.Logger { return lg }, clk.now)
	for range 50 {
		r.Debug("chatty")
		r.Error("result too big", "method", "echo")
		r.Warn("refused")
	}
	if n := logs.count("ERROR", "result too big"); n != logBurst {
		t.Fatalf("%d ERROR lines of 50, want %d:\n%s", n, logBurst, logs.String())
	}
	if n := logs.count("WARN", "refused"); n != logBurst {
		t.Fatalf("%d WARN lines of 50, want %d", n, logBurst)
	}
	clk.add(logWindow)
	r.Error("result too big", "method", "echo")
	if got := logs.lines("ERROR", `msg="result too big" method=echo suppressed=45`); len(got) != 1 {
		t.Fatalf("the next window's line lacks suppressed=45:\n%s", logs.String())
	}
	for range 10 {
		r.Error("result too big", "method", "echo")
	}
	r.flush()
	if got := logs.lines("ERROR", `msg="result too big" suppressed=6`); len(got) != 1 {
		t.Fatalf("flush did not log suppressed=6 for the cause:\n%s", logs.String())
	}
	if got := logs.lines("WARN", `msg=refused suppressed=45`); len(got) != 1 {
		t.Fatalf("flush did not log suppressed=45 for the other cause:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "chatty") {
		t.Fatalf("a debug line was logged at info:\n%s", logs.String())
	}
	before := logs.String()
	r.flush()
	if logs.String() != before {
		t.Fatalf("a second flush logged again:\n%s", strings.TrimPrefix(logs.String(), before))
	}
}

// outage logs a run of failures as one line when it starts and one when
// it ends, with how many failed.
func TestOutageLogsOneLineEachWay(t *testing.T) {
	clk := newFakeClock()
	var logs logBuf
	lg := logs.logger()
	r := newRateLog(func() *slog.Logger { return lg }, clk.now)
	var o outage
	o.ok(r, "back") // no run on: nothing
	for range 30 {
		o.fail(r, "down", "cause", "timeout")
	}
	o.ok(r, "back")
	o.ok(r, "back")
	if n := logs.count("WARN", "down"); n != 1 {
		t.Fatalf("%d WARN lines for 30 failures, want 1:\n%s", n, logs.String())
	}
	if got := logs.lines("INFO", "msg=back failed=30"); len(got) != 1 || strings.Count(logs.String(), "msg=back") != 1 {
		t.Fatalf("want one INFO back failed=30:\n%s", logs.String())
	}
}
