//go:build !js

package native

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// socket is one WebSocket of the client: a dialler-then-reader goroutine
// and a writer goroutine that only report to the loop (opened, frame,
// closed), never touch the core. The struct itself is the loop's.
type socket struct {
	id     client.SocketID
	ctx    context.Context
	cancel context.CancelFunc
	out    chan []byte
	ws     chan *websocket.Conn // holds the conn once dialled (cap 1); nil over HTTP
	// closeWith is an HTTP socket's (http.go; nil for a WebSocket): the
	// close the loop asked for, which the socket reports (cap 1).
	closeWith chan closeReq
	closed    bool
}

// sendQueue is how many frames a socket's writer holds; past it a frame is
// dropped and the core's deadlines (request timeout, watchdog) notice.
const sendQueue = 64

// send queues frame for the writer without blocking the loop.
func (s *socket) send(frame []byte) {
	select {
	case s.out <- frame:
	default: // a stuck socket: the registry times the request out
	}
}

// startSocket dials url for the core's socket id in the background and
// reports what becomes of it to the loop.
func (c *Client) startSocket(id client.SocketID, url string) *socket {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &socket{id: id, ctx: ctx, cancel: cancel, out: make(chan []byte, sendQueue), ws: make(chan *websocket.Conn, 1)}
	c.sockWG.Add(1)
	go func() {
		defer c.sockWG.Done()
		defer cancel()
		var resp *http.Response
		ws, err := (*websocket.Conn)(nil), c.takeSlot(ctx)
		if err == nil {
			ws, resp, err = websocket.Dial(ctx, url, c.opts.DialOptions)
		}
		if err != nil {
			c.mu.Lock()
			c.lastDial = fmt.Errorf("failed to dial: %w", err)
			c.mu.Unlock()
			// A refusal's Retry-After reaches the core the way a close
			// reason's would; nothing else of the error does.
			reason := ""
			if resp != nil {
				if d, ok := protocol.ParseRetryAfterHeader(resp.Header.Get("Retry-After")); ok {
					reason = protocol.RetryAfterReason(d)
				}
			}
			c.post(c.ctx, event{kind: evClosed, socket: id, code: protocol.CloseAbnormal, reason: reason})
			return
		}
		ws.SetReadLimit(protocol.MaxFrameBytes)
		s.ws <- ws
		c.sockWG.Add(1)
		go c.write(s, ws)
		c.post(c.ctx, event{kind: evOpened, socket: id})
		c.read(s, ws)
	}()
	return s
}

// takeSlot waits for a handshake slot from Options.Handshakes (none:
// nil at once), no longer than the core's connect timeout: the core gives
// the dial up then, and a slot after it is not taken.
func (c *Client) takeSlot(ctx context.Context) error {
	if c.opts.Handshakes == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	defer cancel()
	return c.opts.Handshakes.Wait(wctx, c.opts.Tenant)
}

// write sends the loop's frames until the socket ends or a write fails
// (the reader then reports the close).
func (c *Client) write(s *socket, ws *websocket.Conn) {
	defer c.sockWG.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case f := <-s.out:
			if err := ws.Write(s.ctx, websocket.MessageText, f); err != nil {
				return
			}
		}
	}
}

// read passes every frame to the loop, then the close: the peer's code
// and reason, or 1006 with the error's text for a connection that broke.
func (c *Client) read(s *socket, ws *websocket.Conn) {
	for {
		_, b, err := ws.Read(s.ctx)
		if err != nil {
			code, reason := protocol.CloseAbnormal, err.Error()
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				code, reason = int(ce.Code), ce.Reason
			}
			ws.CloseNow()
			c.post(c.ctx, event{kind: evClosed, socket: s.id, code: code, reason: reason})
			return
		}
		if !c.post(c.ctx, event{kind: evFrame, socket: s.id, frame: b}) {
			ws.CloseNow()
			return
		}
	}
}

// closeSocket starts the close handshake without blocking the loop; the
// socket's reader reports the close when it completes (coder/websocket
// gives up on an unresponsive peer after 5 s).
func (c *Client) closeSocket(s *socket, code int, reason string) {
	if s.closeWith != nil { // over HTTP: the session is dropped (the server sweeps it), the close reported as asked
		select {
		case s.closeWith <- closeReq{code, reason}:
		default:
		}
		s.cancel()
		return
	}
	select {
	case ws := <-s.ws:
		s.ws <- ws
		c.sockWG.Add(1)
		go func() {
			defer c.sockWG.Done()
			ws.Close(websocket.StatusCode(code), reason)
		}()
	default:
		s.cancel() // still dialling: abandon the dial
	}
}
