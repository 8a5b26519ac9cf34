package bridge

import (
	"strings"
	"testing"

	"github.com/wsready/wsready/protocol"
)

func TestHTTPURL(t *testing.T) {
	for _, c := range []struct{ ws, endpoint, session, want string }{
		{"ws://h:8080/ws", "session", "", "http://h:8080/ws/session"},
		{"wss://h/ws/", "probe", "", "https://h/ws/probe"},
		{"ws://h", "send", "abc_-9", "http://h/send?session=abc_-9"},
		{"wss://h/rt?app=1#x", "sse", "S", "https://h/rt/sse?app=1&session=S"},
		{"ws://h/rt?app=1", "session", "", "http://h/rt/session?app=1"},
	} {
		got, err := HTTPURL(c.ws, c.endpoint, c.session)
		if err != nil || got != c.want {
			t.Errorf("%s %s %s: %q %v, want %q", c.ws, c.endpoint, c.session, got, err, c.want)
		}
	}
	for _, bad := range []struct{ ws, session string }{{"http://h/ws", ""}, {"ws://h/ws", "a&b"}, {"ws://h/ws", strings.Repeat("a", 129)}} {
		if _, err := HTTPURL(bad.ws, "sse", bad.session); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if !ValidSession(strings.Repeat("A", 128)) || ValidSession("") || ValidSession("a b") || ValidSession("a=") {
		t.Fatal("ValidSession")
	}
}

// A refused session is classified as the WebSocket's close would be: the
// server steering (429/503: 1013 with its retry-after), an auth close the
// body names, and everything else a transport loss (1006).
func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		status     int
		retryAfter string
		code       int
		reason     string
		wantCode   int
		wantReason string
	}{
		{429, "2", 0, "", 1013, "retry-after-ms=2000"},
		{503, "5", 1013, "retry-after-ms=4210", 1013, "retry-after-ms=4210"}, // the body's, to the ms
		{503, "5", 1012, "retry-after-ms=4210", 1012, "retry-after-ms=4210"}, // a restart's slot
		{503, "5", 1013, "busy", 1013, "retry-after-ms=5000"},                // no retry-after in the body
		{503, "", 4003, "retry-after-ms=1", 1013, ""},                        // a 503 is never terminal, whatever its body says
		{503, "", 0, "", 1013, ""},
		{503, "soon", 0, "", 1013, ""},
		{401, "", 4001, "token expired", 4001, "token expired"},
		{403, "", 4003, "forbidden", 4003, "forbidden"},
		{403, "", 1008, "origin not allowed", 1008, "origin not allowed"},
		{403, "", 0, "", 1006, ""},                                           // a proxy's 403, no close named: not terminal
		{403, "", 1000, "x", 1006, ""},                                       // not an auth close
		{403, "1", 1013, "retry-after-ms=1000", 1013, "retry-after-ms=1000"}, // an older server's tenant refusal: its slot
		{403, "", 1013, "busy", 1013, ""},
		{404, "", 4003, "x", 1006, ""}, // the body counts only on 401/403
		{500, "", 0, "", 1006, ""},
		{0, "", 0, "", 1006, ""}, // the fetch failed
	} {
		code, reason := Refusal(c.status, c.retryAfter, c.code, c.reason)
		if code != c.wantCode || reason != c.wantReason {
			t.Errorf("%+v: %d %q", c, code, reason)
		}
	}
	for _, c := range []struct {
		code float64
		want int
	}{{4001, 4001}, {1000, 1000}, {999, 1006}, {5000, 1006}, {4001.5, 1006}} {
		if got, _ := StreamClose(c.code, "r"); got != c.want {
			t.Errorf("StreamClose(%v) = %d, want %d", c.code, got, c.want)
		}
	}
}

// Batch takes as many frames as fit in one body: one as it is, several as
// a JSON array, never more than the limit, always at least one.
func TestBatch(t *testing.T) {
	a, b, c := []byte(`{"a":1}`), []byte(`{"b":2}`), []byte(`{"c":3}`)
	if body, n := Batch(nil, 100); body != nil || n != 0 {
		t.Fatalf("empty: %q %d", body, n)
	}
	if body, n := Batch([][]byte{a}, 100); string(body) != `{"a":1}` || n != 1 {
		t.Fatalf("one: %q %d", body, n)
	}
	if body, n := Batch([][]byte{a, b, c}, 100); string(body) != `[{"a":1},{"b":2},{"c":3}]` || n != 3 || !protocol.Valid(body) {
		t.Fatalf("three: %q %d", body, n)
	}
	// [a,b] is 17 bytes: a limit of 17 takes two, 16 one.
	if body, n := Batch([][]byte{a, b, c}, 17); string(body) != `[{"a":1},{"b":2}]` || n != 2 {
		t.Fatalf("limit 17: %q %d", body, n)
	}
	if body, n := Batch([][]byte{a, b, c}, 16); string(body) != `{"a":1}` || n != 1 {
		t.Fatalf("limit 16: %q %d", body, n)
	}
	big := make([][]byte, 40)
	for i := range big {
		big[i] = []byte(`"` + strings.Repeat("x", protocol.MaxFrameBytes-2) + `"`)
	}
	total := 0
	for len(big) > 0 {
		body, n := Batch(big, MaxPostBytes)
		if n == 0 || len(body) > MaxPostBytes {
			t.Fatalf("a batch of %d frames, %d bytes", n, len(body))
		}
		total += n
		big = big[n:]
	}
	if total != 40 {
		t.Fatalf("batched %d frames of 40", total)
	}
	if !IsAuthFrame(protocol.Encode(protocol.Message{Type: protocol.TypeAuth, Token: "t"})) || IsAuthFrame([]byte(`{"type":"authenticated"}`)) || IsAuthFrame([]byte(`{"type":"request"}`)) {
		t.Fatal("IsAuthFrame")
	}
}

func TestParseEvents(t *testing.T) {
	body := "retry: 1000\n\n: a comment\ndata: {\"type\":\"ping\"}\n\nid: feed=4,room=2\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: close\rdata: {\"code\":1012}\r\rdata: no end"
	got := ParseEvents(body)
	want := []Event{
		{Data: `{"type":"ping"}`},
		{ID: "feed=4,room=2", HasID: true, Data: "{\"a\":\n1}"},
		{Name: "close", Data: `{"code":1012}`},
	}
	if len(got) != len(want) {
		t.Fatalf("ParseEvents: %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: %+v; want %+v", i, got[i], want[i])
		}
	}
	if evs := ParseEvents(""); len(evs) != 0 {
		t.Fatalf("an empty body: %+v", evs)
	}
}

func TestPollURL(t *testing.T) {
	u, err := PollURL("wss://h:8443/ws?x=1", "abc_-1", "feed=4,a b=2", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://h:8443/ws/sse?x=1&session=abc_-1&poll=1&welcome=1&lastEventId=feed%3D4%2Ca%20b%3D2"; u != want {
		t.Fatalf("PollURL %q; want %q", u, want)
	}
	if u, _ := PollURL("ws://h/ws", "s1", "", false); u != "http://h/ws/sse?session=s1&poll=1" {
		t.Fatalf("PollURL %q", u)
	}
	if _, err := PollURL("ws://h/ws", "", "", false); err == nil {
		t.Fatal("PollURL without a session: no error")
	}
}
