//go:build !js

package native

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/internal/testutil"
	"github.com/wsready/wsready/protocol"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

func authServer(t *testing.T, o server.Options, d ...demo.Options) (*testutil.Server, string, string) {
	t.Helper()
	o.Auth = server.AuthRequired
	o.IssueTickets = true // the tests fetch tickets from POST /api/token, as a page does from its app
	srv := testutil.StartServer(t, o, d...)
	return srv, srv.Base, srv.URL
}

// memAuthServer is the real server requiring tickets, on an in-memory
// network for a test inside synctest.Test (fake time); hc reaches it.
func memAuthServer(t *testing.T, o server.Options) (srv *testutil.Server, hc *http.Client) {
	t.Helper()
	o.Auth = server.AuthRequired
	o.IssueTickets = true // the tests fetch tickets from POST /api/token, as a page does from its app
	return testutil.StartMemServer(t, o)
}

// tokenHook fetches tickets from the server, caching one until asked to
// force a fresh one, as an app would.
func tokenHook(hc *http.Client, base, id string, fetched *atomic.Int64) func(context.Context, bool) (string, error) {
	var mu sync.Mutex
	var cached string
	return func(ctx context.Context, force bool) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if cached != "" && !force {
			return cached, nil
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/token", strings.NewReader(`{"clientId":"`+id+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var v struct{ Token string }
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return "", err
		}
		fetched.Add(1)
		cached = v.Token
		return cached, nil
	}
}

type recorder struct {
	mu      sync.Mutex
	records []client.Record
	events  []client.Event
}

func (r *recorder) record(rec client.Record) {
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}
func (r *recorder) event(e client.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

// A 2 s ticket over 20 s with in-band refresh off: one 4001, one forced
// refresh and one reconnect per lifetime, and nothing else (the path a
// failed in-band refresh falls back to). On fake time (synctest): the 20 s
// take none.
func TestNativeShortTicketsRefreshOncePerLifetime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, hc := memAuthServer(t, server.Options{TicketLife: 2 * time.Second})
		var fetched atomic.Int64
		rec := &recorder{}
		cfg := stages.Must(stages.Max)
		cfg.NoInBandRefresh = true
		c, err := Dial(context.Background(), srv.URL, &Options{Config: cfg, Token: tokenHook(hc, srv.Base, "short", &fetched), OnRecord: rec.record,
			DialOptions: &websocket.DialOptions{HTTPClient: hc}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		srv.Demo.ResetCounters()
		advance(20 * time.Second)
		synctest.Wait()
		st, hs := c.Stats(), srv.Stats().HandshakesWindow
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var decisions []client.Record // OnRecord also hears each READY that follows (OutcomeReady)
		for _, r := range rec.records {
			if r.Outcome != client.OutcomeReady {
				decisions = append(decisions, r)
			}
		}
		rec.records = decisions
		n := len(rec.records)
		if n != 10 || st.TokenRefreshes != n || int(hs) != n {
			t.Fatalf("in 20 s of 2 s tickets: %d records, %d refreshes, %d handshakes; want one each per lifetime: 10", n, st.TokenRefreshes, hs)
		}
		for _, r := range rec.records {
			if r.Class != client.ClassTokenExpired || r.Outcome != client.OutcomeRefresh || r.Code != protocol.CloseTokenExpired || r.Delay != 0 {
				t.Fatalf("record %+v", r)
			}
		}
		if !c.State().Ready && c.State().Transport == client.Down {
			t.Fatalf("state %+v", c.State())
		}
	})
}

// A revoked client id makes exactly one handshake in 30 s and ends
// forbidden; WaitReady says so. On fake time (synctest).
func TestNativeRevokedMakesOneHandshake(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, hc := memAuthServer(t, server.Options{})
		srv.Set("revoke", "banned")
		var fetched atomic.Int64
		c, err := Dial(context.Background(), srv.URL, &Options{Token: tokenHook(hc, srv.Base, "banned", &fetched),
			DialOptions: &websocket.DialOptions{HTTPClient: hc}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var ended *EndedError
		if err := c.WaitReady(ctx); !errorsAs(err, &ended) || ended.Ended != client.Forbidden || ended.Code != protocol.CloseForbidden {
			t.Fatalf("WaitReady: %v", err)
		}
		advance(30 * time.Second)
		synctest.Wait()
		if n := srv.Stats().Handshakes; n != 1 {
			t.Fatalf("%d handshakes in 30 s from a revoked client", n)
		}
		// A fresh session is one more handshake, and forbidden again.
		c.Reconnect()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel2()
		if err := c.WaitReady(ctx2); !errorsAs(err, &ended) {
			t.Fatalf("after Reconnect: %v", err)
		}
		synctest.Wait() // everything the reconnect set off has run
		if n := srv.Stats().Handshakes; n != 2 {
			t.Fatalf("handshakes after Reconnect: %d", n)
		}
	})
}

// A canary in a server's close reason, an error frame and an update reaches
// no record and no event.
func TestNativeRecordsCarryNoPeerText(t *testing.T) {
	const canary = "CANARY-n4tive"
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ctx := r.Context()
		ws.Write(ctx, websocket.MessageText, protocol.Encode(protocol.Message{Type: protocol.TypePing, IntervalMs: 1000}))
		ws.Write(ctx, websocket.MessageText, []byte(`{"type":"error","code":"`+canary+`","message":"`+canary+`"}`))
		ws.Write(ctx, websocket.MessageText, protocol.Encode(protocol.Message{Type: protocol.TypeUpdate, Topic: "feed", Seq: 1, Data: []byte(`"` + canary + `"`)}))
		ws.Write(ctx, websocket.MessageText, []byte(`{"type":"`+canary+`"}`))
		if n.Add(1) < 3 {
			ws.Close(1013, canary+" retry-after-ms=100")
		} else {
			ws.Close(4003, canary)
		}
	}))
	defer hs.Close()
	rec := &recorder{}
	c, err := Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http"), &Options{OnRecord: rec.record, OnEvent: rec.event})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.WaitState(ctx, func(s client.State) bool { return s.Ended != client.NotEnded })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.records) != 3 || c.State().Ended != client.Forbidden {
		t.Fatalf("records %+v state %+v", rec.records, c.State())
	}
	for _, e := range rec.events {
		if strings.Contains(e.Kind+e.Detail, canary) {
			t.Fatalf("event carries peer text: %+v", e)
		}
	}
	for _, r := range rec.records {
		if strings.Contains(string(r.Outcome)+r.Session, canary) {
			t.Fatalf("record carries peer text: %+v", r)
		}
	}
}

func errorsAs(err error, target **EndedError) bool {
	e, ok := err.(*EndedError)
	if ok {
		*target = e
	}
	return ok
}
