package client

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// Scenario scripts (testdata/*.txt), in the style of etcd-io/raft's
// datadriven files: each story a stage tells, as events in and effects out
// at exact instants. A script is a list of commands; each is followed by a
// line "----" and the effects it must produce, up to a blank line. Lines
// starting with # are comments. Time starts at 0 and moves only with
// "advance", which fires the core's one timer at exactly the instants it
// was armed for and prints what each instant did under "at T:". Instants
// are offsets from the start.
//
// After a deliberate change of behaviour, regenerate the expected output
// with
//
//	go test ./client -run TestScenarios -rewrite
//
// and read the diff before committing it: every script says what its stage
// must do, and the diff must say the same.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the client's scenario scripts (testdata/*.txt)")

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

// runScript runs one script, comparing (or, with -rewrite, replacing) the
// output of each command.
func runScript(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out strings.Builder
	r := &scenario{t: t}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		at := i + 1
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: %q is not followed by ----", path, at, line)
		}
		i += 2
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := r.run(path, at, line)
		if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w && !*rewrite {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, at, line, g, w)
		}
		out.WriteString(line + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if i < len(lines) {
			out.WriteString("\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario is one script's state: a harness (which keeps its checks: no
// timer armed in the past, no send after close, no double settle) and the
// lines the current command printed.
type scenario struct {
	t      *testing.T
	h      *harness
	out    []string
	ticked bool      // inside advance: effects are grouped by instant
	header time.Time // the instant the last "at" header named
}

func (r *scenario) run(path string, at int, line string) []string {
	r.t.Helper()
	f := strings.Fields(line)
	cmd, args := f[0], f[1:]
	fail := func(format string, a ...any) {
		r.t.Helper()
		r.t.Fatalf("%s:%d: %s: %s", path, at, line, fmt.Sprintf(format, a...))
	}
	// arg returns positional argument n, or fails.
	arg := func(n int) string {
		if n >= len(args) || strings.Contains(args[n], "=") {
			fail("missing argument %d", n+1)
		}
		return args[n]
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fail("%q is not a number", s)
		}
		return n
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			fail("%q is not a duration", s)
		}
		return d
	}
	// opt returns key=value's value, or def.
	opt := func(key, def string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, key+"="); ok {
				return v
			}
		}
		return def
	}
	has := func(name string) bool {
		for _, a := range args {
			if a == name {
				return true
			}
		}
		return false
	}
	sock := func(n int) SocketID { return SocketID(num(arg(n))) }
	// rest is the line after the first n arguments, spaces kept.
	rest := func(n int) string {
		s := strings.TrimSpace(strings.TrimPrefix(line, cmd))
		for range n {
			_, s, _ = strings.Cut(s, " ")
			s = strings.TrimSpace(s)
		}
		return s
	}

	r.out = nil
	if cmd != "new" && r.h == nil {
		fail("the script must start with new")
	}
	h := r.h
	switch cmd {
	case "new":
		stage := int(num(opt("stage", "-1")))
		r.h = newHarness(r.t, stage, func(c *Config) {
			c.Trace = has("trace")
			c.Auth = has("auth")
			c.Budget = int(num(opt("budget", "0")))
			c.Window = dur(opt("window", "0s"))
			if c.Topic = opt("topic", protocol.DefaultTopic); c.Topic == "none" {
				c.Topic = ""
			}
			c.Follower = has("follower")
			c.PauseWhenHidden = has("pause-when-hidden")
			// The readiness reports (report.go) are printed by the scripts
			// that ask for them (reports.txt); the others tell other stories.
			c.NoReports = !has("reports")
			if v := opt("transports", ""); v != "" {
				c.Transports = nil
				for _, name := range strings.Split(v, ",") {
					tr, ok := ParseTransport(name)
					if !ok {
						fail("unknown transport %q", name)
					}
					c.Transports = append(c.Transports, tr)
				}
			}
			if v := opt("reprobe", ""); v != "" {
				c.ReprobeInterval = dur(v)
			}
		})
		r.h.seen = r.print
		r.header = r.h.now
	case "rand":
		for _, a := range args {
			v, err := strconv.ParseFloat(a, 64)
			if err != nil || v < 0 || v >= 1 {
				fail("%q is not in [0, 1)", a)
			}
			h.rand.vals = append(h.rand.vals, v)
		}
	case "start":
		h.c.Start(h.now)
	case "open":
		h.c.Opened(sock(0), h.now)
	case "close":
		code, reason := protocol.CloseAbnormal, ""
		if len(args) > 1 {
			code, reason = int(num(args[1])), rest(2)
		}
		h.c.Closed(sock(0), code, reason, h.now)
	case "ping":
		r.frame(sock(0), protocol.Message{Type: protocol.TypePing, IntervalMs: num(arg(1))})
	case "subscribed":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeSubscribed, Topic: opt("topic", "feed"),
			From: num(opt("from", "0")), Head: num(opt("head", "0")), Stream: opt("stream", "")})
	case "unsubscribed":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeUnsubscribed, Topic: opt("topic", "feed"), Reason: "service_unavailable"})
	case "update":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeUpdate, Topic: arg(1), Seq: num(arg(2)), Data: []byte(`{}`)})
	case "respond":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeResponse, ID: uint64(num(arg(1))), Result: []byte(`{"ok":true}`)})
	case "welcome":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeWelcome, Session: opt("session", "s1"), User: opt("user", "")})
	case "presence":
		r.frame(sock(0), protocol.Message{Type: protocol.TypePresence, Topic: arg(1), Event: arg(2), User: arg(3)})
	case "error-response":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeResponse, ID: uint64(num(arg(1))),
			Error: &protocol.ErrorBody{Code: arg(2), Message: "refused", RetryAfterMs: num(opt("retry-after-ms", "0"))}})
	case "topic-error":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeError, Topic: arg(1), Error: &protocol.ErrorBody{Code: arg(2), Message: "refused"}})
	case "frame":
		h.c.Received(sock(0), []byte(rest(1)), h.now)
	case "probe-ack":
		r.frame(sock(0), protocol.Message{Type: protocol.TypeProbeAck, ID: uint64(num(arg(1)))})
	case "buffered":
		h.c.Buffered(sock(0), int(num(arg(1))), h.now)
	case "http-probe":
		h.c.HTTPProbe(arg(0) == "ok", h.now)
	case "sleep":
		r.ticked = true
		h.sleep(dur(arg(0)))
		r.ticked = false
	case "follower":
		h.c.BecameFollower(h.now)
	case "leader":
		h.c.BecameLeader(h.now)
	case "leader-state":
		st := State{Transport: Down, Protocol: Down, Service: Down, Epoch: uint64(num(opt("epoch", "0"))), Via: TransportWebSocket}
		if has("ready") {
			st = State{Transport: Up, Protocol: Up, Service: Up, Ready: true, Epoch: st.Epoch, Via: TransportWebSocket}
		}
		if v := opt("since", ""); v != "" {
			st.NotReadySince = t0.Add(dur(v))
		}
		h.c.LeaderState(st, h.now)
	case "leader-update":
		h.c.LeaderUpdate(Update{Topic: arg(0), Seq: num(arg(1)), Data: []byte(`{}`), Epoch: uint64(num(opt("epoch", "0")))}, h.now)
	case "relayed":
		h.c.Relayed(uint64(num(arg(0))), []byte(`{"ok":true}`), nil, h.now)
	case "request":
		h.c.RequestWith(opt("method", "echo"), []byte(`{}`), RequestOptions{Timeout: dur(opt("timeout", "0s")), Queue: has("queue"), Key: opt("key", "")}, h.now)
	case "subscribe":
		o := SubscribeOptions{Presence: has("presence")}
		if v := opt("since", ""); v != "" {
			o.Since, o.HasSince = num(v), true
		}
		if !h.c.SubscribeWith(arg(0), o, h.now) {
			r.out = append(r.out, "refused")
		}
	case "unsubscribe":
		h.c.Unsubscribe(arg(0), h.now)
	case "offline":
		h.c.Offline(h.now)
	case "online":
		h.c.Online(h.now)
	case "hidden":
		h.c.Hidden(h.now)
	case "visible":
		h.c.Visible(h.now)
	case "token":
		h.c.TokenReady(arg(0), h.now)
	case "token-failed":
		h.c.TokenFailed(h.now)
	case "reconnect":
		h.c.Reconnect(h.now)
	case "stop":
		h.c.Stop(h.now)
	case "advance":
		r.ticked = true
		h.advance(dur(arg(0)))
		r.ticked = false
	case "state":
		r.out = append(r.out, fmtState(h.c.State()))
	case "stats":
		r.out = append(r.out, fmtStats(h.c.Stats())...)
	default:
		fail("unknown command")
	}
	if r.h != nil {
		r.h.drain()
	}
	return r.out
}

func (r *scenario) frame(s SocketID, m protocol.Message) {
	r.h.c.Received(s, protocol.Encode(m), r.h.now)
}

// print writes one effect; inside advance, under the instant it happened.
func (r *scenario) print(e Effect) {
	line := r.fmtEffect(e)
	if r.ticked {
		if len(r.out) == 0 || !r.h.now.Equal(r.header) {
			r.header = r.h.now
			r.out = append(r.out, "at "+r.h.now.Sub(t0).String()+":")
		}
		line = "  " + line
	}
	r.out = append(r.out, line)
}

func (r *scenario) fmtEffect(e Effect) string {
	switch e.Kind {
	case EffDial:
		if e.Transport != TransportWebSocket {
			return "dial " + e.Socket.String() + " " + e.Transport.String()
		}
		return "dial " + e.Socket.String()
	case EffProbeHTTP:
		return "probe-http"
	case EffForward:
		return "forward " + utoa(e.ID) + " " + string(e.Frame)
	case EffSend:
		return "send " + e.Socket.String() + " " + string(e.Frame)
	case EffClose:
		return fmt.Sprintf("close %v %d %s", e.Socket, e.Code, e.Reason)
	case EffTimer:
		if e.At.IsZero() {
			return "timer off"
		}
		return "timer at " + e.At.Sub(t0).String()
	case EffSettle:
		if e.Err != nil {
			return fmt.Sprintf("settle %d %s: %v", e.ID, ErrorName(e.Err), e.Err)
		}
		return fmt.Sprintf("settle %d ok %s", e.ID, e.Result)
	case EffState:
		return fmtState(e.State)
	case EffUpdate:
		return fmt.Sprintf("update %s %d epoch=%d %s", e.Update.Topic, e.Update.Seq, e.Update.Epoch, e.Update.Data)
	case EffLog:
		return "log " + e.Event.Kind + ": " + e.Event.Detail
	case EffToken:
		if e.Force {
			return "token force"
		}
		return "token"
	case EffRecord:
		rec := e.Record
		s := fmt.Sprintf("record %s by=%s code=%d delay=%v", rec.Class, rec.By, rec.Code, rec.Delay)
		if rec.RetryAfter > 0 {
			s += fmt.Sprintf(" retry-after=%v", rec.RetryAfter)
		}
		s += fmt.Sprintf(" attempt=%d", rec.Attempt)
		if rec.BudgetLeft >= 0 { // -1: unbounded
			s += fmt.Sprintf(" budget-left=%d", rec.BudgetLeft)
		}
		if rec.WindowLeft >= 0 {
			s += fmt.Sprintf(" window-left=%v", rec.WindowLeft)
		}
		return s + " outcome=" + string(rec.Outcome)
	case EffContinuityLost:
		l := e.Lost
		if l.Reset {
			return fmt.Sprintf("continuity-lost %s from %d (reset)", l.Topic, l.From)
		}
		return fmt.Sprintf("continuity-lost %s %d-%d", l.Topic, l.From, l.To)
	case EffTopicError:
		return "topic-error " + e.TopicError.Topic + " " + e.TopicError.Code + " " + strconv.Quote(e.TopicError.Message)
	case EffPresence:
		return "presence " + e.Presence.Topic + " " + e.Presence.Event + " " + e.Presence.User
	}
	r.t.Fatalf("an effect the scripts do not know: %+v", e)
	return ""
}

// fmtState: the three layers, READY, the epoch and attempt, and what is
// notable (offline, ended, the last error).
func fmtState(s State) string {
	out := fmt.Sprintf("state %v/%v/%v", s.Transport, s.Protocol, s.Service)
	if s.Ready {
		out += " READY"
	}
	out += fmt.Sprintf(" epoch=%d attempt=%d", s.Epoch, s.Attempt)
	if !s.Online {
		out += " offline"
	}
	if s.Ended != NotEnded {
		out += fmt.Sprintf(" ended=%s code=%d", s.Ended, s.EndCode)
	}
	if s.LastError.Class != FailNone {
		out += fmt.Sprintf(" error=%s/%d", s.LastError.Class, s.LastError.Code)
	}
	if s.Via != TransportWebSocket {
		out += " via=" + s.Via.String()
	}
	if !s.NotReadySince.IsZero() {
		out += " not-ready-since=" + s.NotReadySince.Sub(t0).String()
	}
	if s.Degraded {
		out += " degraded"
	}
	if s.Offline {
		out += " banner-offline"
	}
	if s.Follower {
		out += " follower"
	}
	if s.Refusals > 0 {
		out += fmt.Sprintf(" refused=%s:%s(%d)", s.Refused.Topic, s.Refused.Code, s.Refusals)
	}
	return out
}

// fmtStats lists the counters that are not zero, one a line.
func fmtStats(s Stats) []string {
	var out []string
	add := func(name string, v int64) {
		if v != 0 {
			out = append(out, fmt.Sprintf("%s %d", name, v))
		}
	}
	add("dials", int64(s.Dials))
	add("opens", int64(s.Opens))
	add("closes", int64(s.Closes))
	add("pings", int64(s.Pings))
	add("watchdog", int64(s.WatchdogFired))
	add("stale", int64(s.StaleEvents))
	add("foreign", int64(s.ForeignEvents))
	add("subscribes", int64(s.SubscribesSent))
	add("updates", int64(s.Updates))
	add("gaps", int64(s.SeqGaps))
	add("missed", s.MissedUpdates)
	add("duplicates", int64(s.Duplicates))
	add("duplicates-dropped", int64(s.DuplicatesDropped))
	add("replayed", int64(s.Replayed))
	add("continuity-lost", int64(s.ContinuityLost))
	add("dropped-responses", int64(s.DroppedResponses))
	add("bad-frames", int64(s.BadFrames))
	add("server-errors", int64(s.ServerErrors))
	add("welcomes", int64(s.Welcomes))
	add("token-refreshes", int64(s.TokenRefreshes))
	add("token-failures", int64(s.TokenFailures))
	add("records", int64(s.Records))
	add("retry-afters", int64(s.RetryAftersHonoured))
	add("probes", int64(s.Probes))
	add("clock-jumps", int64(s.ClockJumps))
	add("send-stalls", int64(s.SendStalls))
	add("http-probes", int64(s.HTTPProbes))
	add("moves", int64(s.Moves))
	add("forwarded", int64(s.Forwarded))
	add("resent", int64(s.Resent))
	if len(out) == 0 {
		out = append(out, "nothing counted")
	}
	return out
}
