//go:build !js

package server

import (
	"net"
	"os"
	"syscall"
)

// nbWriter writes to a TCP socket without waiting: tryWrite puts on the
// socket what it takes now and says how much, so a writer never parks on
// a peer that stopped reading. wsConn (transport_ws_write.go) and a
// hijacked event stream (sse_raw.go) embed it; each calls tryWrite under a
// mutex of its own. raw is nil when the connection is not a socket (TLS, a wrapping
// listener): its owner then writes another way.
type nbWriter struct {
	raw     syscall.RawConn
	writeFn func(fd uintptr) bool // tryWriteFd, bound once: no allocation per write
	// The write in progress (tryWrite and writeFn).
	wbuf []byte
	wn   int
	wsys error
}

// bind sets raw from nc when nc is a socket.
func (w *nbWriter) bind(nc net.Conn) {
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw
			w.writeFn = w.tryWriteFd
		}
	}
}

// tryWrite writes what the socket takes of p now, without waiting.
func (w *nbWriter) tryWrite(p []byte) (int, error) {
	w.wbuf, w.wn, w.wsys = p, 0, nil
	err := w.raw.Write(w.writeFn)
	n := w.wn
	if err == nil && w.wsys != nil {
		err = &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", w.wsys)}
	}
	w.wbuf, w.wsys = nil, nil
	return n, err
}

// tryWriteFd is raw.Write's callback: it always reports done, so the
// runtime never parks the caller for the socket to become writable.
func (w *nbWriter) tryWriteFd(fd uintptr) bool {
	for w.wn < len(w.wbuf) {
		m, err := syscall.Write(int(fd), w.wbuf[w.wn:])
		if m > 0 {
			w.wn += m
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true
		case err != nil:
			w.wsys = err
			return true
		case m <= 0:
			return true
		}
	}
	return true
}
