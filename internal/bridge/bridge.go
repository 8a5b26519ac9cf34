// Package bridge holds the browser driver's pure pieces: the event queue
// that lets JS callbacks hand work to the driver loop without blocking, the
// conversion of the core's state, updates and events to plain values for
// JS, and the parsing of the options a page passes to connect. It has no
// build tags, so it is tested natively and under Node as WebAssembly.
package bridge

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"

	"github.com/wsready/wsready/internal/quote"
)

// Job is what the driver's queue holds: work for the driver loop, called
// with the time it runs at.
type Job = func(now time.Time)

// Queue is an unbounded FIFO of Jobs. Push never blocks, so a js.FuncOf
// callback can call it; the driver loop waits on Ready and drains with
// Take. It is not generic: a generic queue's dictionary marks its element
// type as put in an interface, and that kept time.Time's formatting in
// the wasm.
type Queue struct {
	mu     sync.Mutex
	items  []Job
	ready  chan struct{}
	closed bool
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{ready: make(chan struct{}, 1)} }

// Push appends v and wakes the consumer. It reports false after Close.
func (q *Queue) Push(v Job) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.Wake()
	return true
}

// Wake signals Ready again: a consumer that left what was queued (it was
// busy) is called back to it.
func (q *Queue) Wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Idle reports whether nothing is queued and the queue is open: a step
// may then run at once instead of being pushed without passing any.
func (q *Queue) Idle() bool {
	q.mu.Lock()
	idle := len(q.items) == 0 && !q.closed
	q.mu.Unlock()
	return idle
}

// Ready is signalled (at least once) after a Push.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Take removes and returns everything queued.
func (q *Queue) Take() []Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// Close makes later Pushes fail and returns what was still queued.
func (q *Queue) Close() []Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	items := q.items
	q.items = nil
	return items
}

// Tabs says how a client shares its connection with the other tabs of its
// origin (stage 8): TabsOff (its own connection), TabsOn (one connection
// for every tab, led by one of them) or TabsUnsupported (asked for, but the
// browser has no Web Locks or BroadcastChannel: its own connection).
type Tabs string

const (
	TabsOff         Tabs = "off"
	TabsOn          Tabs = "on"
	TabsUnsupported Tabs = "unsupported"
)

// StateValue converts a State to the object the JS API hands to onState.
// tabs is the driver's: with TabsOn, leader says this tab holds the
// connection (follower: another tab does).
func StateValue(s client.State, tabs Tabs) map[string]any {
	return map[string]any{
		"transport":     s.Transport.String(),
		"protocol":      s.Protocol.String(),
		"service":       s.Service.String(),
		"ready":         s.Ready,
		"epoch":         float64(s.Epoch),
		"online":        s.Online,
		"attempt":       s.Attempt,
		"stopped":       s.Ended == client.Stopped,
		"ended":         endedValue(s.Ended),
		"endCode":       s.EndCode,
		"endReason":     s.EndReason,
		"lastError":     failureValue(s.LastError),
		"via":           TransportName(s.Via),
		"notReadySince": msOrNull(s.NotReadySince),
		"degraded":      s.Degraded,
		"offline":       s.Offline,
		"follower":      s.Follower,
		"leader":        tabs == TabsOn && !s.Follower && s.Ended == client.NotEnded,
		"tabs":          string(tabs),
		"refused":       refusedValue(s),
		"refusals":      s.Refusals,
	}
}

// refusedValue is State.Refused for the page: {topic, code, message}, or
// nil when the server refuses no topic.
func refusedValue(s client.State) any {
	if s.Refusals == 0 {
		return nil
	}
	return TopicErrorValue(s.Refused)
}

// TopicErrorValue converts a topic error for onTopicError and
// state().refused.
func TopicErrorValue(e client.TopicError) map[string]any {
	return map[string]any{"topic": e.Topic, "code": e.Code, "message": e.Message}
}

// TransportName is a transport's name in the JS API: "websocket" or
// "http"; nil for none.
func TransportName(t client.Transport) any {
	switch t {
	case client.TransportWebSocket:
		return "websocket"
	case client.TransportHTTP:
		return "http"
	}
	return nil
}

// msOrNull is t as Unix milliseconds, or nil for the zero time.
func msOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return float64(t.UnixMilli())
}

// PresenceValue converts a presence event for onPresence.
func PresenceValue(p client.PresenceEvent) map[string]any {
	return map[string]any{"topic": p.Topic, "event": p.Event, "user": p.User}
}

func failureValue(f client.Failure) any {
	if f.Class == client.FailNone {
		return nil
	}
	return map[string]any{"class": string(f.Class), "code": f.Code, "message": f.Message()}
}

func endedValue(t client.Terminal) any {
	if t == client.NotEnded {
		return nil
	}
	return string(t)
}

// RecordValue converts a reconnect decision's Record: numbers and bounded
// enums only. Unbounded budget or window read -1.
func RecordValue(r client.Record) map[string]any {
	return map[string]any{
		"session": r.Session, "epoch": float64(r.Epoch), "attempt": r.Attempt, "class": r.Class.String(),
		"by": r.By.String(), "code": r.Code, "delayMs": float64(r.Delay.Milliseconds()),
		"retryAfterMs": float64(r.RetryAfter.Milliseconds()), "budgetLeft": r.BudgetLeft,
		"windowLeftMs": float64(msOrNeg(r.WindowLeft)), "outcome": string(r.Outcome),
	}
}

func msOrNeg(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// UpdateValue converts an Update; data stays a JSON string for the page to
// parse (the wasm carries no JSON object builder).
func UpdateValue(u client.Update) map[string]any {
	return map[string]any{"topic": u.Topic, "seq": float64(u.Seq), "data": string(u.Data), "epoch": float64(u.Epoch)}
}

// EventValue converts a trace Event.
func EventValue(e client.Event) map[string]any {
	return map[string]any{"kind": e.Kind, "detail": e.Detail, "socket": float64(e.Socket), "delayMs": float64(e.Delay.Milliseconds())}
}

// StatsValue converts the core's counters. The int counters go through
// one loop over a key table rather than a map literal: a literal compiles
// to a conversion and an insert per key, about 13 KB of wasm for ~40 keys.
func StatsValue(s client.Stats) map[string]any {
	counts := [len(statsKeys)]int{ // one more value than keys does not compile; TestStatsKeys checks the keys
		s.Dials, s.Opens, s.Closes, s.Pings,
		s.WatchdogFired, s.StaleEvents, s.ForeignEvents,
		s.SubscribesSent, s.Updates,
		s.SeqGaps, s.DroppedResponses, s.BadFrames,
		s.ServerErrors, s.Authenticated, s.TokensRequested,
		s.TokenRefreshes, s.TokenFailures, s.Records,
		s.Refreshes, s.RefreshFailures,
		s.ReadyCount, s.Recoveries, s.RetryAftersHonoured,
		s.Duplicates, s.DuplicatesDropped, s.Replayed,
		s.ContinuityLost, s.Welcomes, s.Probes, s.ProbesAnswered,
		s.ClockJumps, s.SendStalls, s.HTTPProbes, s.Moves,
		s.Forwarded, s.Resent,
	}
	m := make(map[string]any, len(counts)+4)
	for i, n := range counts {
		m[statsKeys[i]] = n
	}
	m["lastSeq"] = float64(s.LastSeq)
	m["missedUpdates"] = float64(s.MissedUpdates)
	m["recoveryP50Ms"] = float64(s.RecoveryP50.Milliseconds())
	m["recoveryP99Ms"] = float64(s.RecoveryP99.Milliseconds())
	return m
}

// statsKeys names StatsValue's int counters, in its order.
var statsKeys = [36]string{
	"dials", "opens", "closes", "pings",
	"watchdogFired", "staleEvents", "foreignEvents",
	"subscribesSent", "updates",
	"seqGaps", "droppedResponses", "badFrames",
	"serverErrors", "authenticated", "tokensRequested",
	"tokenRefreshes", "tokenFailures", "records",
	"refreshes", "refreshFailures",
	"readyCount", "recoveries", "retryAftersHonoured",
	"duplicates", "duplicatesDropped", "replayed",
	"continuityLost", "welcomes", "probes", "probesAnswered",
	"clockJumps", "sendStalls", "httpProbes", "moves",
	"forwarded", "resent",
}

// TopicValue converts one topic's accounting.
func TopicValue(t client.TopicStats) map[string]any {
	return map[string]any{
		"topic": t.Topic, "cursor": float64(t.Cursor), "stream": t.Stream, "subscribed": t.Subscribed,
		"delivered": t.Delivered, "replayed": t.Replayed, "duplicates": t.Duplicates, "gaps": t.Gaps, "lost": float64(t.Lost),
	}
}

// LostValue converts a ContinuityLost; to is null when the end is unknown.
func LostValue(l client.ContinuityLost) map[string]any {
	v := map[string]any{"topic": l.Topic, "from": float64(l.From), "to": nil, "reset": l.Reset}
	if l.To > 0 {
		v["to"] = float64(l.To)
	}
	return v
}

// FormatCursors writes cursors as text for the page to keep (sessionStorage):
// one "topic stream seq" line each. Topic names and stream ids have no
// spaces or newlines.
func FormatCursors(cs []client.Cursor) string {
	var b []byte
	for _, c := range cs {
		b = append(b, c.Topic...)
		b = append(b, ' ')
		b = append(b, c.Stream...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, c.Seq, 10)
		b = append(b, '\n')
	}
	return string(b)
}

// Bounds on what ParseCursors takes from stored text: at most maxCursors
// cursors, each stream id at most maxStreamBytes (the server's are far
// shorter); past them the text was not written by FormatCursors.
const (
	maxCursors     = 64
	maxStreamBytes = 64
)

// ParseCursors reads FormatCursors' text; malformed lines are skipped (the
// text comes from storage a page, or a user, may have changed).
func ParseCursors(s string) []client.Cursor {
	var out []client.Cursor
	for len(s) > 0 && len(out) < maxCursors {
		line := s
		if i := indexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		f := fieldsOf(line)
		if len(f) != 3 || len(f[1]) > maxStreamBytes {
			continue
		}
		seq, ok := protocol.ParseInt64(f[2])
		if !ok || seq < 0 || !protocol.ValidTopic(f[0]) {
			continue
		}
		out = append(out, client.Cursor{Topic: f[0], Stream: f[1], Seq: seq})
	}
	return out
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// fieldsOf splits on single spaces; an empty stream is kept as "".
func fieldsOf(s string) []string {
	var out []string
	for {
		i := indexByte(s, ' ')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// SettleValue converts a request's outcome to {ok, result} or
// {ok:false, name, message}; name is NotReady, RequestTimeout,
// ConnectionClosed, ServerError or Error.
func SettleValue(result []byte, err error) map[string]any {
	if err != nil {
		v := map[string]any{"ok": false, "name": client.ErrorName(err), "message": err.Error()}
		if se, ok := client.AsServerError(err); ok {
			v["code"] = se.Code
		}
		return v
	}
	if result == nil {
		result = []byte("null")
	}
	return map[string]any{"ok": true, "result": string(result)}
}

// Options are what a page passes to connect.
type Options struct {
	URL     string
	URLs    []string // URL, then any others, in turn on every reconnect
	Topic   string   // a topic subscribed from the start (the demo's "feed"); "" for none
	Cursors []client.Cursor
	Stage   int
	Budget  int           // stage 6: attempts per run of failures; 0 unbounded
	Window  time.Duration // stage 6: how long a run of failures may last; 0 unbounded
	// Timings; zero keeps the core's default (client.Config).
	RequestTimeout, FirstPingTimeout, SubscribeTimeout, ConnectTimeout time.Duration
	BackoffBase, BackoffCap, Cooldown                                  time.Duration
	// Stage 8 (zero keeps the core's default): the transports in order
	// (nil: the stage's), the re-probe interval, the send-stall timeout,
	// the degraded and offline flips.
	Transports                                      []client.Transport
	Reprobe, SendStall, DegradedAfter, OfflineAfter time.Duration
	// PauseWhenHidden: no reconnect while the page is hidden (stage 8's
	// default keeps the connection). Queue: requests and publishes made
	// while not READY wait for it (client.Config.QueueWhileNotReady).
	PauseWhenHidden, Queue bool
	// Tabs: share one connection between the tabs of this origin and URL
	// (Web Locks and a BroadcastChannel). Default on at stage 8, off
	// before; the option "tabs" sets it at any stage.
	Tabs bool
	// Reports: the readiness reports to the server (client/report.go).
	// Default true; the option "reports: false" turns them off
	// (client.Config.NoReports).
	Reports bool
	// InBandRefresh: a fresh token sent on the live connection late in
	// each token's life (client/refresh.go). Default true; the option
	// "inBandRefresh: false" turns it off, so the connection ends with
	// the server's 4001 at each expiry and the client dials again
	// (client.Config.NoInBandRefresh).
	InBandRefresh bool
}

// Config applies the options to a stage's config.
func (o Options) Config(cfg client.Config) client.Config {
	cfg.Budget, cfg.Window = o.Budget, o.Window
	cfg.Topic, cfg.Cursors = o.Topic, o.Cursors
	cfg.RequestTimeout, cfg.FirstPingTimeout = o.RequestTimeout, o.FirstPingTimeout
	cfg.SubscribeTimeout, cfg.ConnectTimeout, cfg.Cooldown = o.SubscribeTimeout, o.ConnectTimeout, o.Cooldown
	if o.Transports != nil {
		cfg.Transports = o.Transports
	}
	cfg.ReprobeInterval, cfg.SendStallTimeout = o.Reprobe, o.SendStall
	cfg.DegradedAfter, cfg.OfflineAfter = o.DegradedAfter, o.OfflineAfter
	cfg.PauseWhenHidden, cfg.QueueWhileNotReady = o.PauseWhenHidden, o.Queue
	cfg.NoReports = !o.Reports
	cfg.NoInBandRefresh = !o.InBandRefresh
	if o.BackoffBase > 0 || o.BackoffCap > 0 {
		p := client.FullJitter{Base: time.Second, Cap: 30 * time.Second}
		if o.BackoffBase > 0 {
			p.Base = o.BackoffBase
		}
		if o.BackoffCap > 0 {
			p.Cap = o.BackoffCap
		}
		cfg.Policy = p
	}
	return cfg
}

// Getter reads one option: its value as a string, number or boolean and
// whether it was given. The js driver implements it over a JS object.
type Getter interface {
	String(name string) (string, bool, error)
	Number(name string) (float64, bool, error)
	Bool(name string) (bool, bool, error)
}

// ParseOptions validates connect's options: url is a ws:// or wss:// URL,
// stage an integer 0..stages.Max (default stages.Max), budget an integer >= 0 and windowMs a
// number of milliseconds >= 0 (0: unbounded, the default); the timings are
// whole milliseconds from 1; transports lists "websocket" and "http";
// pauseWhenHidden, queue, tabs and reports are booleans (tabs defaults to
// stage >= 8, reports to true).
func ParseOptions(g Getter) (Options, error) {
	o := Options{Stage: stages.Max}
	url, ok, err := g.String("url")
	if err != nil || !ok || url == "" {
		return o, errors.New("wsready.connect: url is required (a ws:// or wss:// URL)")
	}
	if !hasPrefix(url, "ws://") && !hasPrefix(url, "wss://") {
		return o, errors.New("wsready.connect: url must start with ws:// or wss://, got " + quote.ASCII(url))
	}
	o.URL = url
	o.URLs = []string{url}
	// urls: more URLs, newline-separated (the JS wrapper joins the array).
	if more, ok, err := g.String("moreURLs"); err != nil {
		return o, errors.New("wsready.connect: urls must be an array of ws:// or wss:// URLs")
	} else if ok && more != "" {
		for _, u := range splitLines(more) {
			if !hasPrefix(u, "ws://") && !hasPrefix(u, "wss://") {
				return o, errors.New("wsready.connect: every url must start with ws:// or wss://, got " + quote.ASCII(u))
			}
			if len(o.URLs) >= 16 {
				return o, errors.New("wsready.connect: at most 16 urls")
			}
			o.URLs = append(o.URLs, u)
		}
	}
	if t, ok, err := g.String("topic"); err != nil || ok && !protocol.ValidTopic(t) {
		return o, errors.New("wsready.connect: bad topic: " + protocol.ErrBadTopic.Error())
	} else if ok {
		o.Topic = t
	}
	if c, ok, err := g.String("cursors"); err == nil && ok {
		o.Cursors = ParseCursors(c)
	}
	n, ok, err := g.Number("stage")
	if err != nil {
		return o, errors.New("wsready.connect: stage must be a number 0-" + strconv.Itoa(stages.Max))
	}
	if ok {
		if n != math.Trunc(n) || n < 0 || n > stages.Max {
			return o, errors.New("wsready.connect: stage must be an integer 0-" + strconv.Itoa(stages.Max) + ", got " + strconv.FormatFloat(n, 'g', -1, 64))
		}
		o.Stage = int(n)
	}
	if n, ok, err := g.Number("budget"); err != nil || ok && (n != math.Trunc(n) || n < 0 || n > 1e9) {
		return o, errors.New("wsready.connect: budget must be a whole number >= 0 (0: unbounded)")
	} else if ok {
		o.Budget = int(n)
	}
	if n, ok, err := g.Number("windowMs"); err != nil || ok && (n != math.Trunc(n) || n < 0 || n > 1e12) {
		return o, errors.New("wsready.connect: windowMs must be a whole number of milliseconds >= 0 (0: unbounded)")
	} else if ok {
		o.Window = time.Duration(n) * time.Millisecond
	}
	for _, t := range []struct {
		name string
		to   *time.Duration
	}{
		{"requestTimeoutMs", &o.RequestTimeout}, {"firstPingTimeoutMs", &o.FirstPingTimeout},
		{"subscribeTimeoutMs", &o.SubscribeTimeout}, {"connectTimeoutMs", &o.ConnectTimeout},
		{"backoffBaseMs", &o.BackoffBase}, {"backoffCapMs", &o.BackoffCap}, {"cooldownMs", &o.Cooldown},
	} {
		n, ok, err := g.Number(t.name)
		if err != nil || ok && (n != math.Trunc(n) || n < 1 || n > 1e9) {
			return o, errors.New("wsready.connect: " + t.name + " must be a whole number of milliseconds from 1 to 1e9")
		}
		if ok {
			*t.to = time.Duration(n) * time.Millisecond
		}
	}
	for _, t := range []struct {
		name string
		to   *time.Duration
	}{
		{"reprobeMs", &o.Reprobe}, {"sendStallMs", &o.SendStall}, {"degradedMs", &o.DegradedAfter}, {"offlineMs", &o.OfflineAfter},
	} {
		n, ok, err := g.Number(t.name)
		if err != nil || ok && (n != math.Trunc(n) || n < 1 || n > 1e10) {
			return o, errors.New("wsready.connect: " + t.name + " must be a whole number of milliseconds from 1 to 1e10")
		}
		if ok {
			*t.to = time.Duration(n) * time.Millisecond
		}
	}
	if ts, ok, err := g.String("transports"); err != nil {
		return o, errors.New("wsready.connect: transports must be an array of 'websocket' and 'http'")
	} else if ok {
		if o.Transports, err = ParseTransports(ts); err != nil {
			return o, err
		}
	}
	o.Tabs = o.Stage >= 8
	o.Reports, o.InBandRefresh = true, true
	for _, b := range []struct {
		name string
		to   *bool
	}{{"pauseWhenHidden", &o.PauseWhenHidden}, {"queue", &o.Queue}, {"tabs", &o.Tabs}, {"reports", &o.Reports},
		{"inBandRefresh", &o.InBandRefresh}} {
		v, ok, err := g.Bool(b.name)
		if err != nil {
			return o, errors.New("wsready.connect: " + b.name + " must be true or false")
		}
		if ok {
			*b.to = v
		}
	}
	base, cap := o.BackoffBase, o.BackoffCap
	if base == 0 {
		base = time.Second
	}
	if cap == 0 {
		cap = 30 * time.Second
	}
	if cap < base {
		return o, errors.New("wsready.connect: backoffCapMs must be at least backoffBaseMs (defaults 1000 and 30000)")
	}
	return o, nil
}

// ParseTransports reads the transports option as the JS wrapper passes it:
// names joined with commas, "websocket" and "http", one or two, each once,
// the preferred first.
func ParseTransports(s string) ([]client.Transport, error) {
	bad := errors.New("wsready.connect: transports must list 'websocket' and/or 'http', each once (the preferred first), got " + quote.ASCII(s))
	var out []client.Transport
	for more := true; more; {
		name := s
		if i := indexByte(s, ','); i >= 0 {
			name, s = s[:i], s[i+1:]
		} else {
			more = false
		}
		var t client.Transport
		switch name {
		case "websocket":
			t = client.TransportWebSocket
		case "http":
			t = client.TransportHTTP
		default:
			return nil, bad
		}
		if len(out) == 2 || len(out) == 1 && out[0] == t {
			return nil, bad
		}
		out = append(out, t)
	}
	return out, nil
}

func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := indexByte(s, '\n')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// SortStrings sorts s in increasing order: a heapsort, for the keys of the
// objects the driver hands to JS and the tabs' topic lists. It is what the
// wasm uses instead of slices.Sort on strings, whose generic pdqsort
// instantiation cost about 15 KB of wasm code; O(n log n) like
// it, and the lists are short.
func SortStrings(s []string) {
	for i := len(s)/2 - 1; i >= 0; i-- {
		siftDown(s, i, len(s))
	}
	for end := len(s) - 1; end > 0; end-- {
		s[0], s[end] = s[end], s[0]
		siftDown(s, 0, end)
	}
}

// siftDown restores the max-heap property of s[:n] below root.
func siftDown(s []string, root, n int) {
	for {
		child := 2*root + 1
		if child >= n {
			return
		}
		if child+1 < n && s[child] < s[child+1] {
			child++
		}
		if s[root] >= s[child] {
			return
		}
		s[root], s[child] = s[child], s[root]
		root = child
	}
}
