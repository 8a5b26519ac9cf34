//go:build !js

package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/protocol"
)

// SIGTERM drains a real wsready serve: /healthz turns 503, connections are
// closed with 1001 and a reconnect slot, and the process exits within the
// drain window.
func TestSIGTERMDrainsThenExits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "wsready")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "-addr", addr, "-ping", "1s", "-drain-window", "1s")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "serving") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	var conns []*websocket.Conn
	for range 5 {
		ws, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		conns = append(conns, ws)
	}
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	saw503 := poll.UntilEvery(time.Second, 10*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	if !saw503 {
		t.Error("/healthz never said 503 during the drain")
	}
	for _, ws := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var err error
		for err == nil {
			_, _, err = ws.Read(ctx)
		}
		cancel()
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != protocol.CloseGoingAway {
			t.Fatalf("closed with %v, want 1001", err)
		}
		if _, ok := protocol.ParseRetryAfter(ce.Reason); !ok {
			t.Fatalf("no reconnect slot in %q", ce.Reason)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the process did not exit after the drain")
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("drain and exit took %v with a 1 s window", took)
	}
}
