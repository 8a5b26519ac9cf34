package bridge

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

type fakeGetter map[string]any

func (f fakeGetter) String(n string) (string, bool, error) {
	v, ok := f[n]
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, errors.New("not a string")
	}
	return s, true, nil
}

func (f fakeGetter) Number(n string) (float64, bool, error) {
	v, ok := f[n]
	if !ok {
		return 0, false, nil
	}
	x, isNum := v.(float64)
	if !isNum {
		return 0, true, errors.New("not a number")
	}
	return x, true, nil
}

func (f fakeGetter) Bool(n string) (bool, bool, error) {
	v, ok := f[n]
	if !ok {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, true, errors.New("not a boolean")
	}
	return b, true, nil
}

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(fakeGetter{"url": "ws://h/ws"})
	if err != nil || o.Stage != stages.Max || o.URL != "ws://h/ws" {
		t.Fatalf("%+v %v", o, err)
	}
	o, err = ParseOptions(fakeGetter{"url": "wss://h/ws", "stage": 2.0})
	if err != nil || o.Stage != 2 {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range []fakeGetter{
		{}, {"url": ""}, {"url": 7.0}, {"url": "http://h/ws"},
		{"url": "ws://h", "stage": 9.0}, {"url": "ws://h", "stage": -1.0},
		{"url": "ws://h", "moreURLs": "ws://a\nhttp://b"}, {"url": "ws://h", "topic": "a..b"}, {"url": "ws://h", "moreURLs": 3.0},
		{"url": "ws://h", "budget": -1.0}, {"url": "ws://h", "budget": 2.5}, {"url": "ws://h", "windowMs": "x"},
		{"url": "ws://h", "stage": 1.5}, {"url": "ws://h", "stage": "two"},
	} {
		if _, err := ParseOptions(bad); err == nil || !strings.HasPrefix(err.Error(), "wsready.connect:") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func TestURLsTopicAndCursors(t *testing.T) {
	o, err := ParseOptions(fakeGetter{"url": "ws://a/ws", "moreURLs": "ws://b/ws\nwss://c/ws", "topic": "chat",
		"cursors": FormatCursors([]client.Cursor{{Topic: "feed", Stream: "s1", Seq: 41}, {Topic: "chat", Seq: 2}}) + "bad line\nx..y s 3\nfeed s -1\n"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.URLs, " ") != "ws://a/ws ws://b/ws wss://c/ws" || o.Topic != "chat" {
		t.Fatalf("%+v", o)
	}
	want := []client.Cursor{{Topic: "feed", Stream: "s1", Seq: 41}, {Topic: "chat", Seq: 2}}
	if len(o.Cursors) != 2 || o.Cursors[0] != want[0] || o.Cursors[1] != want[1] {
		t.Fatalf("cursors %+v, want %+v", o.Cursors, want)
	}
	if cfg := o.Config(client.Config{}); cfg.Topic != "chat" || len(cfg.Cursors) != 2 {
		t.Fatalf("config %+v", cfg)
	}
	if v := LostValue(client.ContinuityLost{Topic: "t", From: 3, Reset: true}); v["to"] != nil || v["from"] != 3.0 {
		t.Fatalf("lost %v", v)
	}
}

func TestQueueNeverBlocksAndKeepsOrder(t *testing.T) {
	q := NewQueue()
	var ran []int
	for i := range 1000 { // far more than any channel buffer: Push must not block
		q.Push(func(time.Time) { ran = append(ran, i) })
	}
	<-q.Ready()
	got := q.Take()
	for _, job := range got {
		job(time.Time{})
	}
	if len(got) != 1000 || ran[0] != 0 || ran[999] != 999 {
		t.Fatalf("len %d", len(got))
	}
	if len(q.Take()) != 0 {
		t.Fatal("Take did not empty the queue")
	}
	q.Push(func(time.Time) {})
	if left := q.Close(); len(left) != 1 || q.Push(func(time.Time) {}) {
		t.Fatalf("close: %v", left)
	}
}

func TestSessionOptionsAndValues(t *testing.T) {
	o, err := ParseOptions(fakeGetter{"url": "ws://h/ws", "stage": 6.0, "budget": 10.0, "windowMs": 120000.0})
	if err != nil || o.Budget != 10 || o.Window.Seconds() != 120 {
		t.Fatalf("%+v %v", o, err)
	}
	o, err = ParseOptions(fakeGetter{"url": "ws://h", "requestTimeoutMs": 2000.0, "backoffBaseMs": 250.0, "cooldownMs": 3000.0})
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.Config(client.Config{})
	if cfg.RequestTimeout.Milliseconds() != 2000 || cfg.Cooldown.Milliseconds() != 3000 || cfg.Policy.String() != "full-jitter(base 250ms, cap 30s)" {
		t.Fatalf("config %+v", cfg)
	}
	for _, bad := range []fakeGetter{{"url": "ws://h", "requestTimeoutMs": 0.0}, {"url": "ws://h", "backoffCapMs": 500.0},
		{"url": "ws://h", "firstPingTimeoutMs": 1.5}} {
		if _, err := ParseOptions(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	s := StateValue(client.State{Ended: client.Forbidden, EndCode: 4003}, TabsOff)
	if s["ended"] != "forbidden" || s["endCode"] != 4003 {
		t.Fatalf("%v", s)
	}
	if s := StateValue(client.State{}, TabsOff); s["ended"] != nil {
		t.Fatalf("not ended: %v", s["ended"])
	}
	r := RecordValue(client.Record{Class: client.ClassRetryAfter, By: client.ByServer, Code: 1013, Outcome: client.OutcomeReconnect, BudgetLeft: -1, WindowLeft: -1})
	if r["class"] != "retry_after" || r["by"] != "server" || r["outcome"] != "reconnect" || r["windowLeftMs"] != -1.0 {
		t.Fatalf("%v", r)
	}
}

func TestValuesCarryWhatThePageShows(t *testing.T) {
	s := StateValue(client.State{Transport: client.Up, Protocol: client.Up, Service: client.Pending, Epoch: 3, Online: true, Attempt: 2}, TabsOff)
	if s["transport"] != "up" || s["service"] != "pending" || s["ready"] != false || s["epoch"] != 3.0 || s["attempt"] != 2 {
		t.Fatalf("%v", s)
	}
	ok := SettleValue([]byte(`{"a":1}`), nil)
	if ok["ok"] != true || ok["result"] != `{"a":1}` {
		t.Fatalf("%v", ok)
	}
	for err, name := range map[error]string{
		&client.RequestError{Kind: client.ErrRequestTimeout}:   "RequestTimeout",
		&client.RequestError{Kind: client.ErrNotReady}:         "NotReady",
		&client.RequestError{Kind: client.ErrConnectionClosed}: "ConnectionClosed",
		&client.ServerError{Code: "x"}:                         "ServerError",
		errors.New("other"):                                    "Error",
	} {
		if v := SettleValue(nil, err); v["ok"] != false || v["name"] != name {
			t.Errorf("%v: %v", err, v)
		}
	}
}

// A topic connect refuses is refused by protocol's rule, and the error
// states that rule as protocol words it (the rule is written once).
func TestTopicRuleIsProtocols(t *testing.T) {
	long := strings.Repeat("t", protocol.MaxTopicBytes)
	if _, err := ParseOptions(fakeGetter{"url": "ws://h", "topic": long}); err != nil {
		t.Fatalf("a %d-byte topic: %v", len(long), err)
	}
	for _, bad := range []string{"", long + "t", "a b", "a..b", "é"} {
		_, err := ParseOptions(fakeGetter{"url": "ws://h", "topic": bad})
		if err == nil || !strings.HasSuffix(err.Error(), protocol.ErrBadTopic.Error()) {
			t.Errorf("topic %q: %v", bad, err)
		}
	}
}

func TestSortStrings(t *testing.T) {
	for _, in := range [][]string{nil, {"a"}, {"b", "a"}, {"c", "a", "b", "a", "", "zz", "z"}, strings.Fields("the quick brown fox jumps over the lazy dog again and again")} {
		got := append([]string(nil), in...)
		SortStrings(got)
		want := append([]string(nil), in...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("SortStrings(%q) = %q, want %q", in, got, want)
		}
	}
}

// Idle: nothing queued and the queue open (the driver steps a frame at
// once only then).
func TestQueueIdle(t *testing.T) {
	q := NewQueue()
	if !q.Idle() {
		t.Fatal("a new queue is not idle")
	}
	q.Push(func(time.Time) {})
	if q.Idle() {
		t.Fatal("idle with a job queued")
	}
	q.Take()
	if !q.Idle() {
		t.Fatal("not idle once taken")
	}
	q.Close()
	if q.Idle() {
		t.Fatal("idle once closed")
	}
}
