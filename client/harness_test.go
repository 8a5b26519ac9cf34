package client

import (
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// harness drives a Core with a fake clock and fake sockets, doing exactly
// what a driver does with its effects.
type harness struct {
	t         *testing.T
	c         *Core
	now       time.Time
	timer     time.Time
	sockets   map[SocketID]*fakeSocket
	dials     []SocketID
	settled   map[uint64]Effect
	order     []uint64 // settle order
	states    []State
	updates   []Update
	events    []Event
	records   []Record
	tokens    []bool // EffToken asks, by Force
	lost      []ContinuityLost
	topicErrs []string // topic + ":" + code
	presence  []PresenceEvent
	via       map[SocketID]Transport // each dial's transport
	ticket    map[SocketID]string    // each dial's ticket (Effect.Token)
	probes    int                    // EffProbeHTTP asks
	forwards  []Effect               // EffForward
	rand      *seq
	// seen, if set, hears of every effect in order before the harness
	// carries it out (the scenario scripts print them).
	seen func(Effect)
}

type fakeSocket struct {
	sent      []protocol.Message
	closed    bool // the core asked to close it
	closeCode int
}

// seq is a scripted random source: it returns its values in turn, then 0.5.
type seq struct{ vals []float64 }

func (s *seq) next() float64 {
	if len(s.vals) == 0 {
		return 0.5
	}
	v := s.vals[0]
	s.vals = s.vals[1:]
	return v
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, stage int, tweak ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, now: t0, sockets: map[SocketID]*fakeSocket{}, settled: map[uint64]Effect{}, rand: &seq{}, via: map[SocketID]Transport{}, ticket: map[SocketID]string{}}
	cfg := stageConfig(stage, h.rand.next)
	cfg.Trace = true
	// The demo's topic, set explicitly (the library's default is none):
	// most stories are told with it. A tweak sets Topic "" for a client
	// that asks for no topics.
	cfg.Topic = protocol.DefaultTopic
	for _, f := range tweak {
		f(&cfg)
	}
	var err error
	h.c, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) drain() {
	for _, e := range h.c.Effects() {
		if h.seen != nil {
			h.seen(e)
		}
		switch e.Kind {
		case EffDial:
			if _, again := h.sockets[e.Socket]; again {
				h.t.Fatalf("socket %d dialled twice", e.Socket)
			}
			h.sockets[e.Socket] = &fakeSocket{}
			h.dials = append(h.dials, e.Socket)
			h.via[e.Socket] = e.Transport
			h.ticket[e.Socket] = e.Token
		case EffSend:
			m, err := protocol.Decode(e.Frame)
			if err != nil {
				h.t.Fatalf("core sent an undecodable frame %s: %v", e.Frame, err)
			}
			if h.sockets[e.Socket].closed {
				h.t.Fatalf("core sent on socket %d after closing it", e.Socket)
			}
			h.sockets[e.Socket].sent = append(h.sockets[e.Socket].sent, m)
		case EffClose:
			h.sockets[e.Socket].closed = true
			h.sockets[e.Socket].closeCode = e.Code
		case EffTimer:
			h.timer = e.At
		case EffSettle:
			if _, dup := h.settled[e.ID]; dup {
				h.t.Fatalf("request %d settled twice", e.ID)
			}
			h.settled[e.ID] = e
			h.order = append(h.order, e.ID)
		case EffState:
			h.states = append(h.states, e.State)
		case EffUpdate:
			h.updates = append(h.updates, e.Update)
		case EffLog:
			h.events = append(h.events, e.Event)
		case EffRecord:
			h.records = append(h.records, e.Record)
		case EffToken:
			h.tokens = append(h.tokens, e.Force)
		case EffContinuityLost:
			h.lost = append(h.lost, e.Lost)
		case EffTopicError:
			h.topicErrs = append(h.topicErrs, e.TopicError.Topic+":"+e.TopicError.Code)
		case EffPresence:
			h.presence = append(h.presence, e.Presence)
		case EffProbeHTTP:
			h.probes++
		case EffForward:
			h.forwards = append(h.forwards, e)
		default:
			h.t.Fatalf("an effect the harness does not know: %+v", e)
		}
	}
}

// advance moves the fake clock forward by d, firing the timer on the way
// exactly at the instants the core armed it for.
func (h *harness) advance(d time.Duration) {
	end := h.now.Add(d)
	for !h.timer.IsZero() && !h.timer.After(end) {
		if h.timer.Before(h.now) {
			h.t.Fatalf("timer armed in the past: %v < %v", h.timer, h.now)
		}
		h.now = h.timer
		h.timer = time.Time{}
		h.c.Tick(h.now)
		h.drain()
	}
	h.now = end
}

// sleep moves the clock by d without firing the timer on the way, then
// fires it once, late: a suspended laptop or a frozen tab, whose timer
// runs when it wakes.
func (h *harness) sleep(d time.Duration) {
	h.now = h.now.Add(d)
	if !h.timer.IsZero() && !h.timer.After(h.now) {
		h.timer = time.Time{}
		h.c.Tick(h.now)
		h.drain()
	}
}

// advanceToDial advances the clock to the next dial (or token ask).
func (h *harness) advanceToDial() {
	h.t.Helper()
	n := len(h.dials) + len(h.tokens)
	for i := 0; i < 100000 && len(h.dials)+len(h.tokens) == n; i++ {
		if h.timer.IsZero() {
			h.t.Fatal("no timer armed: no dial will come")
		}
		h.advance(h.timer.Sub(h.now))
	}
}

func (h *harness) start()            { h.c.Start(h.now); h.drain() }
func (h *harness) open(s SocketID)   { h.c.Opened(s, h.now); h.drain() }
func (h *harness) closed(s SocketID) { h.c.Closed(s, 1006, "", h.now); h.drain() }
func (h *harness) closedWith(s SocketID, code int, reason string) {
	h.c.Closed(s, code, reason, h.now)
	h.drain()
}
func (h *harness) frame(s SocketID, m protocol.Message) {
	h.c.Received(s, protocol.Encode(m), h.now)
	h.drain()
}
func (h *harness) ping(s SocketID, ms int64) {
	h.frame(s, protocol.Message{Type: protocol.TypePing, IntervalMs: ms})
}
func (h *harness) subscribed(s SocketID) {
	h.frame(s, protocol.Message{Type: protocol.TypeSubscribed, Topic: "feed"})
}
func (h *harness) request() uint64 {
	id := h.c.Request("echo", []byte(`{}`), h.now)
	h.drain()
	return id
}
func (h *harness) state() State   { return h.c.State() }
func (h *harness) last() SocketID { return h.dials[len(h.dials)-1] }

// ready brings the current socket to READY for the harness's stage.
func (h *harness) ready() SocketID {
	h.t.Helper()
	s := h.last()
	h.open(s)
	h.ping(s, 1000)
	h.subscribed(s)
	if !h.state().Ready {
		h.t.Fatalf("not ready: %+v", h.state())
	}
	return s
}

// keepAlive advances by d while the server pings socket s every 500ms.
func (h *harness) keepAlive(s SocketID, d time.Duration) {
	end := h.now.Add(d)
	for h.now.Before(end) {
		step := min(500*time.Millisecond, end.Sub(h.now))
		h.advance(step)
		h.ping(s, 1000)
	}
}

func (h *harness) sentTypes(s SocketID) []protocol.Type {
	var out []protocol.Type
	for _, m := range h.sockets[s].sent {
		out = append(out, m.Type)
	}
	return out
}

func (h *harness) count(typ protocol.Type, s SocketID) int {
	n := 0
	for _, m := range h.sockets[s].sent {
		if m.Type == typ {
			n++
		}
	}
	return n
}

func (h *harness) hasEvent(kind string) bool {
	for _, e := range h.events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}
