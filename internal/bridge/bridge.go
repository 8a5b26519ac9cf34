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
)

// Queue is an unbounded FIFO. Push never blocks, so a js.FuncOf callback
// can call it; the driver loop waits on Ready and drains with Take.
type Queue[T any] struct {
	mu     sync.Mutex
	items  []T
	ready  chan struct{}
	closed bool
}

// NewQueue returns an empty queue.
func NewQueue[T any]() *Queue[T] { return &Queue[T]{ready: make(chan struct{}, 1)} }

// Push appends v and wakes the consumer. It reports false after Close.
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// Ready is signalled (at least once) after a Push.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }

// Take removes and returns everything queued.
func (q *Queue[T]) Take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// Close makes later Pushes fail and returns what was still queued.
func (q *Queue[T]) Close() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	items := q.items
	q.items = nil
	return items
}

// StateValue converts a State to the object the JS API hands to onState.
func StateValue(s client.State) map[string]any {
	return map[string]any{
		"transport": s.Transport.String(),
		"protocol":  s.Protocol.String(),
		"service":   s.Service.String(),
		"ready":     s.Ready,
		"epoch":     float64(s.Epoch),
		"online":    s.Online,
		"attempt":   s.Attempt,
		"stopped":   s.Stopped,
		"ended":     endedValue(s.Ended),
		"endCode":   s.EndCode,
		"lastError": failureValue(s.LastError),
	}
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

// StatsValue converts the core's counters.
func StatsValue(s client.Stats) map[string]any {
	return map[string]any{
		"dials": s.Dials, "opens": s.Opens, "closes": s.Closes, "pings": s.Pings,
		"watchdogFired": s.WatchdogFired, "staleEvents": s.StaleEvents, "foreignEvents": s.ForeignEvents,
		"subscribesSent": s.SubscribesSent, "updates": s.Updates, "lastSeq": float64(s.LastSeq),
		"seqGaps": s.SeqGaps, "missedUpdates": float64(s.MissedUpdates), "droppedResponses": s.DroppedResponses, "badFrames": s.BadFrames,
		"serverErrors": s.ServerErrors, "authenticated": s.Authenticated, "tokensRequested": s.TokensRequested,
		"tokenRefreshes": s.TokenRefreshes, "tokenFailures": s.TokenFailures, "records": s.Records,
		"readyCount": s.ReadyCount, "recoveries": s.Recoveries, "recoveryP50Ms": float64(s.RecoveryP50.Milliseconds()),
		"recoveryP99Ms": float64(s.RecoveryP99.Milliseconds()), "retryAftersHonoured": s.RetryAftersHonoured,
	}
}

// SettleValue converts a request's outcome to {ok, result} or
// {ok:false, name, message}; name is NotReady, RequestTimeout,
// ConnectionClosed, ServerError or Error.
func SettleValue(result []byte, err error) map[string]any {
	if err != nil {
		v := map[string]any{"ok": false, "name": client.ErrorName(err), "message": err.Error()}
		var se *client.ServerError
		if errors.As(err, &se) {
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
	URL    string
	Stage  int
	Budget int           // stage 6: attempts per run of failures; 0 unbounded
	Window time.Duration // stage 6: how long a run of failures may last; 0 unbounded
	// Timings; zero keeps the core's default (client.Config).
	RequestTimeout, FirstPingTimeout, SubscribeTimeout, ConnectTimeout time.Duration
	BackoffBase, BackoffCap, Cooldown                                  time.Duration
}

// Config applies the options to a stage's config.
func (o Options) Config(cfg client.Config) client.Config {
	cfg.Budget, cfg.Window = o.Budget, o.Window
	cfg.RequestTimeout, cfg.FirstPingTimeout = o.RequestTimeout, o.FirstPingTimeout
	cfg.SubscribeTimeout, cfg.ConnectTimeout, cfg.Cooldown = o.SubscribeTimeout, o.ConnectTimeout, o.Cooldown
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

// Getter reads one option: its value as a string or number and whether it
// was given. The js driver implements it over a JS object.
type Getter interface {
	String(name string) (string, bool, error)
	Number(name string) (float64, bool, error)
}

// ParseOptions validates connect's options: url is a ws:// or wss:// URL,
// stage an integer 0..6 (default 6), budget an integer >= 0 and windowMs a
// number of milliseconds >= 0 (0: unbounded, the default).
func ParseOptions(g Getter) (Options, error) {
	o := Options{Stage: client.MaxStage}
	url, ok, err := g.String("url")
	if err != nil || !ok || url == "" {
		return o, errors.New("wsready.connect: url is required (a ws:// or wss:// URL)")
	}
	if !hasPrefix(url, "ws://") && !hasPrefix(url, "wss://") {
		return o, errors.New("wsready.connect: url must start with ws:// or wss://, got " + strconv.Quote(url))
	}
	o.URL = url
	n, ok, err := g.Number("stage")
	if err != nil {
		return o, errors.New("wsready.connect: stage must be a number 0-" + strconv.Itoa(client.MaxStage))
	}
	if ok {
		if n != math.Trunc(n) || n < 0 || n > client.MaxStage {
			return o, errors.New("wsready.connect: stage must be an integer 0-" + strconv.Itoa(client.MaxStage) + ", got " + strconv.FormatFloat(n, 'g', -1, 64))
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

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
