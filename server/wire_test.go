//go:build !js

package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/protocol"
)

// The bad-input matrix over the wire, through the server's encoding/json
// path: each frame gets an error frame with a stable code (a request's id
// in it), and the connection stays.
func TestBadFramesGetStableCodesThroughEncodingJSON(t *testing.T) {
	f := newFixture(t, nil)
	p := f.dial()
	cases := []struct {
		frame, code string
		id          uint64
	}{
		{`hello`, protocol.ErrBadJSON, 0},
		{`{"type":"probe","id":1`, protocol.ErrBadJSON, 0},
		{"{\"type\":\"subscribe\",\"topic\":\"\xff\"}", protocol.ErrBadJSON, 0},
		{`[1,2,3]`, protocol.ErrNotObject, 0},
		{strings.Repeat("[", 500) + strings.Repeat("]", 500), protocol.ErrNotObject, 0},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), protocol.ErrBadJSON, 0},
		{`null`, protocol.ErrNotObject, 0},
		{`{"TYPE":"probe","id":1}`, protocol.ErrMissingField, 0},
		{`{"type":"request","id":5,"method":""}`, protocol.ErrWrongType, 5},
		{`{"type":"request","id":5,"id":6,"method":""}`, protocol.ErrWrongType, 6},
		{`{"type":"publish","id":8,"topic":"a b","data":1}`, protocol.ErrInvalidTopic, 8},
		{`{"type":"request","id":1e2,"method":"echo"}`, protocol.ErrWrongType, 0},
	}
	for _, c := range cases {
		p.sendRaw(c.frame)
		e := p.next(protocol.TypeError, time.Second)
		if e.Error.Code != c.code || e.ID != c.id {
			t.Errorf("%.40s: code %q id %d, want %q id %d (%s)", c.frame, e.Error.Code, e.ID, c.code, c.id, e.Error.Message)
		}
	}
	// The last of a repeated key counts, as encoding/json reads it.
	p.sendRaw(`{"type":"request","id":1,"method":"nope","method":"echo","params":"a","params":"b"}`)
	if r := p.next(protocol.TypeResponse, time.Second); r.ID != 1 || string(r.Result) != `"b"` {
		t.Fatalf("repeated keys: %+v", r)
	}
}

// A reply never overtakes a frame queued before it: a subscribe's replay
// goes through the send queue, and the answer to the next frame comes
// after all of it, whether it was queued behind or written at once.
func TestAReplyComesAfterTheReplayBeforeIt(t *testing.T) {
	f := newFixture(t, &Options{}, DemoOptions{NoFeed: true})
	ctx := context.Background()
	for range 200 {
		if _, err := f.srv.Publish(ctx, "news", []byte(`{"text":"`+strings.Repeat("x", 200)+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	p := f.dial()
	for round := range 20 {
		p.sendRaw(`{"type":"subscribe","topic":"news","since":0}`)
		p.sendRaw(`{"type":"probe","id":` + itoa64(int64(round+1)) + `}`)
		if m := p.next(protocol.TypeSubscribed, time.Second); m.From != 1 || m.Head != 200 {
			t.Fatalf("subscribed %+v", m)
		}
		for seq := int64(1); seq <= 200; seq++ {
			m := <-p.frames
			for m.Type == protocol.TypePing { // the heartbeat's, queued whenever it ticks
				m = <-p.frames
			}
			if m.Type != protocol.TypeUpdate || m.Seq != seq {
				t.Fatalf("round %d: %+v where update %d belongs", round, m, seq)
			}
		}
		if m := p.next(protocol.TypeProbeAck, time.Second); m.ID != uint64(round+1) {
			t.Fatalf("probe_ack %+v", m)
		}
		p.sendRaw(`{"type":"unsubscribe","topic":"news"}`)
		p.next(protocol.TypeUnsubscribed, time.Second)
	}
}

// A reply encoding/json refuses (a raw result that is not JSON: the
// server never builds one) becomes an internal error frame, and the log
// line does not quote the result.
func TestAReplyEncodingJSONRefusesBecomesAnInternalError(t *testing.T) {
	var buf logBuf
	c := &conn{id: 1, s: &Server{log: slog.New(slog.NewTextHandler(&buf, nil))}}
	frame := c.encode(protocol.ResponseFrame{Type: protocol.TypeResponse, ID: 1, Result: json.RawMessage(`{"secret"`)})
	m, err := protocol.Decode(frame)
	if err != nil || m.Type != protocol.TypeError || m.Error.Code != protocol.ErrInternal {
		t.Fatalf("frame %s: %+v %v", frame, m, err)
	}
	if log := buf.String(); !strings.Contains(log, "failed to encode a reply") || strings.Contains(log, "secret") {
		t.Fatalf("log: %s", log)
	}
	if got := string(c.encode(protocol.ProbeAckFrame{Type: protocol.TypeProbeAck, ID: 4})); got != `{"type":"probe_ack","id":4}` {
		t.Fatalf("probe_ack encoded as %s", got)
	}
}
