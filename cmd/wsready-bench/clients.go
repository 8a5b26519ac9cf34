//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// The protocols a clients child speaks.
const (
	// protoWsready is wsready's protocol; the lean baseline speaks its
	// subset (ping, subscribe, subscribed, update).
	protoWsready = "wsready"
	// protoCentrifuge is centrifuge's JSON protocol: a connect command,
	// a subscribe command, an empty reply ({}) to each server ping ({}),
	// publications as pushes, several replies per frame one per line.
	protoCentrifuge = "centrifuge"
)

// maxClientsPerProcess keeps a clients child under the machine's 20,000
// descriptors per process.
const maxClientsPerProcess = 9000

// clientStats is what a clients child reports at /stats: sums over its
// connections since it started.
type clientStats struct {
	Dialed     int64 `json:"dialed"`     // WebSocket handshakes completed
	Connected  int64 `json:"connected"`  // connected in the protocol's terms (centrifuge: the connect reply; wsready: the handshake)
	Subscribed int64 `json:"subscribed"` // subscriptions acknowledged
	Failed     int64 `json:"failed"`     // a dial failed, or the server refused the connect or the subscribe
	Dropped    int64 `json:"dropped"`    // connections the server or the network ended while the child ran
	Frames     int64 `json:"frames"`     // WebSocket messages received
	Msgs       int64 `json:"msgs"`       // protocol messages received (centrifuge puts several in a frame)
	Updates    int64 `json:"updates"`    // feed updates (centrifuge: publications)
	Pings      int64 `json:"pings"`      // the server's protocol pings (not WebSocket control pings)
	// Long polls only (poll.go): the poll requests answered, and the
	// updates whose seq was not the one after the last (lost or repeated).
	Polls      int64 `json:"polls,omitempty"`
	Misordered int64 `json:"misordered,omitempty"`
}

func (s *clientStats) add(o clientStats) {
	s.Dialed += o.Dialed
	s.Connected += o.Connected
	s.Subscribed += o.Subscribed
	s.Failed += o.Failed
	s.Dropped += o.Dropped
	s.Frames += o.Frames
	s.Msgs += o.Msgs
	s.Updates += o.Updates
	s.Pings += o.Pings
	s.Polls += o.Polls
	s.Misordered += o.Misordered
}

type counters struct {
	dialed, connected, subscribed, failed, dropped, frames, msgs, updates, pings, polls, misordered atomic.Int64
}

func (c *counters) snapshot() clientStats {
	return clientStats{Dialed: c.dialed.Load(), Connected: c.connected.Load(), Subscribed: c.subscribed.Load(),
		Failed: c.failed.Load(), Dropped: c.dropped.Load(), Frames: c.frames.Load(), Msgs: c.msgs.Load(),
		Updates: c.updates.Load(), Pings: c.pings.Load(), Polls: c.polls.Load(), Misordered: c.misordered.Load()}
}

// errRefused is a connect or subscribe the server answered with an error.
var errRefused = errors.New("refused by the server")

// runClients is a clients child: n connections that connect, subscribe to
// the feed (with -subscribe) and count what they receive, dialled conc at a
// time, from the source addresses given in turn; it prints "stats ADDR"
// first on stdout and runs until SIGINT or SIGTERM.
func runClients(args []string) error {
	fs := flag.NewFlagSet("clients", flag.ContinueOnError)
	url := fs.String("url", "", "ws:// URL of the server's WebSocket endpoint")
	proto := fs.String("proto", protoWsready, "wsready (also the lean baseline) or centrifuge")
	n := fs.Int("n", 1000, "connections (1..9000: descriptors)")
	conc := fs.Int("conc", 100, "handshakes in flight at once (1..10000)")
	src := fs.String("src", "127.0.0.1", "comma-separated loopback source addresses, used in turn")
	subscribe := fs.Bool("subscribe", true, "subscribe to the feed (false: connect only)")
	transport := fs.String("transport", transportWS, "ws, sse: the HTTP transport's stream (sse.go), or poll: its long polls (poll.go); -url is then wsready's http:// mount")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return &usageError{err}
	}
	if *n < 1 || *n > maxClientsPerProcess || *conc < 1 || *conc > 10000 {
		return usagef("clients: -n must be 1..%d (descriptors) and -conc 1..10000", maxClientsPerProcess)
	}
	switch *transport {
	case transportSSE, transportPoll:
		return runSSEClients(*url, *n, *conc, *src, *subscribe, *transport == transportPoll)
	case transportWS:
	default:
		return usagef("clients: -transport must be ws, sse or poll, not %q", *transport)
	}
	if *proto != protoWsready && *proto != protoCentrifuge {
		return usagef("clients: -proto must be wsready or centrifuge, not %q", *proto)
	}
	if !strings.HasPrefix(*url, "ws://127.") {
		return usagef("clients: -url must be a ws:// URL on 127.0.0.0/8, not %q", *url)
	}
	var hcs []*http.Client
	for _, s := range strings.Split(*src, ",") {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil || ip.To4() == nil || ip.To4()[0] != 127 {
			return usagef("clients: -src takes addresses in 127.0.0.0/8, not %q", s)
		}
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 30 * time.Second}
		hcs = append(hcs, &http.Client{Transport: &http.Transport{DialContext: d.DialContext}})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var st counters
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("failed to listen for /stats: %w", err)
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st.snapshot())
	})}
	go hs.Serve(ln)
	defer hs.Close()
	fmt.Println("stats", ln.Addr().String())
	sem := make(chan struct{}, *conc)
	var wg sync.WaitGroup
	for i := 0; i < *n && ctx.Err() == nil; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Add(1)
		go func(hc *http.Client) {
			defer wg.Done()
			runClient(ctx, *url, *proto, *subscribe, hc, &st, func() { <-sem })
		}(hcs[i%len(hcs)])
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// runClient is one connection until ctx ends or the connection does;
// dialled is called once the handshake is over, whatever its outcome.
func runClient(ctx context.Context, url, proto string, subscribe bool, hc *http.Client, st *counters, dialled func()) {
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	ws, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPClient: hc})
	cancel()
	dialled()
	if err != nil {
		if ctx.Err() == nil {
			st.failed.Add(1)
		}
		return
	}
	defer ws.CloseNow()
	st.dialed.Add(1)
	if proto == protoCentrifuge {
		err = centrifugeConn(ctx, ws, subscribe, st)
	} else {
		err = wsreadyConn(ctx, ws, subscribe, st)
	}
	switch {
	case errors.Is(err, errRefused):
		st.failed.Add(1)
	case ctx.Err() == nil:
		st.dropped.Add(1)
	}
}

// wsreadyConn speaks wsready's protocol: subscribe to the feed, then count
// the pings and updates until the connection ends.
func wsreadyConn(ctx context.Context, ws *websocket.Conn, subscribe bool, st *counters) error {
	st.connected.Add(1) // no connect command in this protocol
	if subscribe {
		if err := wsjson.Write(ctx, ws, wsreadyFrame{Type: "subscribe", Topic: "feed"}); err != nil {
			return err
		}
	}
	subscribed := false
	for {
		var typ frameType
		if err := wsjson.Read(ctx, ws, &typ); err != nil {
			return err
		}
		st.frames.Add(1)
		st.msgs.Add(1)
		switch string(typ) {
		case "ping":
			st.pings.Add(1)
		case "update":
			st.updates.Add(1)
		case "subscribed":
			if !subscribed {
				subscribed = true
				st.subscribed.Add(1)
			}
		case "error", "unsubscribed":
			if subscribe && !subscribed {
				return fmt.Errorf("failed to subscribe: %w", errRefused)
			}
		}
	}
}

// wsreadyFrame is a frame of wsready's protocol subset the bench speaks
// (subscribe, subscribed), written with wsjson.
type wsreadyFrame struct {
	Type  string `json:"type"`
	Topic string `json:"topic"`
}

// frameType is a frame's type as wsjson reads it: wsjson checks that the
// frame is JSON, and the type is then taken by wsreadyType, without
// decoding the rest (the clients count frames; their own decoding is not
// what the bench measures).
type frameType string

func (t *frameType) UnmarshalJSON(b []byte) error {
	*t = frameType(wsreadyType(b))
	return nil
}

// wsreadyType is a message's type: read from the front, where the
// server's encoder puts it, or else decoded.
func wsreadyType(b []byte) string {
	const prefix = `{"type":"`
	if bytes.HasPrefix(b, []byte(prefix)) {
		if end := bytes.IndexByte(b[len(prefix):], '"'); end >= 0 {
			return string(b[len(prefix) : len(prefix)+end])
		}
	}
	var m struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	return m.Type
}

// centrifugeReply is the part of a centrifuge reply the clients read.
type centrifugeReply struct {
	ID    uint32 `json:"id"`
	Error *struct {
		Code    uint32 `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// centrifugeConn speaks centrifuge's JSON protocol as its SDKs do: the
// connect command, then the subscribe command once connected; a pong ({})
// to every server ping ({}); publications counted as updates.
func centrifugeConn(ctx context.Context, ws *websocket.Conn, subscribe bool, st *counters) error {
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"connect":{}}`)); err != nil {
		return err
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return err
		}
		st.frames.Add(1)
		for len(b) > 0 {
			var line []byte
			line, b, _ = bytes.Cut(b, []byte{'\n'})
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			st.msgs.Add(1)
			switch {
			case string(line) == "{}":
				st.pings.Add(1)
				if err := ws.Write(ctx, websocket.MessageText, []byte(`{}`)); err != nil {
					return err
				}
			case bytes.HasPrefix(line, []byte(`{"push":`)):
				if bytes.Contains(line, []byte(`"pub":`)) {
					st.updates.Add(1)
				}
			default:
				var r centrifugeReply
				if err := json.Unmarshal(line, &r); err != nil {
					return fmt.Errorf("failed to decode a reply: %w", err)
				}
				if r.Error != nil {
					return fmt.Errorf("failed to connect or subscribe (%d %s): %w", r.Error.Code, r.Error.Message, errRefused)
				}
				switch r.ID {
				case 1:
					st.connected.Add(1)
					if subscribe {
						if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":2,"subscribe":{"channel":"feed"}}`)); err != nil {
							return err
						}
					}
				case 2:
					st.subscribed.Add(1)
				}
			}
		}
	}
}
