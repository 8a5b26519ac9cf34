//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/fetch"
)

// Flags mean what they say: a zero or negative bound, or a stray argument,
// is refused before anything listens, as a usage error (exit code 2).
func TestServeRefusesInvalidFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-max-conns", "0"}, {"-max-conns-per-ip", "-1"}, {"-max-queued-bytes", "0"}, {"-max-pending-replies", "0"},
		{"-write-timeout", "0s"}, {"-message-timeout", "-1s"}, {"-ping", "0s"}, {"-ping", "2h"}, {"-feed", "0s"},
		{"-addr", "nope"}, {"extra"}, {"-auth", "maybe"}, {"-ticket-life", "0s"}, {"-rejection-threshold", "0"},
		{"-admit-rate", "0"}, {"-tenant-rate", "-1"}, {"-admit-burst", "0"}, {"-refuse", "drop"}, {"-sweep-interval", "0s"}, {"-drain-window", "0s"},
		{"-ticket-rate", "0"}, {"-ticket-burst", "0"}, {"-bad-ticket-threshold", "0"},
		{"-log-format", "xml"}, {"-log-format", ""}, {"-log-format", "JSON"}, {"-no-such-flag"},
	} {
		err := serve(args)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("serve %v: %v, want a usage error", args, err)
		}
	}
	// A file that cannot be read is a failure, not a usage error.
	if err := serve([]string{"-auth-key-file", "/nonexistent"}); err == nil || errors.As(err, new(*usageError)) {
		t.Errorf("serve -auth-key-file /nonexistent: %v", err)
	}
	if err := serve([]string{"-log-format", "yaml"}); err == nil || err.Error() != `serve: -log-format must be text or json, not "yaml"` {
		t.Errorf("serve -log-format yaml: %v", err)
	}
}

// Issue 18: logs were text only. -log-format json writes slog's JSON lines;
// anything but text or json exits with 2 and says why.
func TestServeLogFormat(t *testing.T) {
	bin := wsreadyBin(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "serve", "-addr", freeAddr(t), "-log-format", "xml")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), `-log-format must be text or json, not "xml"`) {
		t.Fatalf("-log-format xml: %v, stderr %q; want exit 2 and the reason", err, stderr.String())
	}

	addr := freeAddr(t)
	cmd = exec.Command(bin, "serve", "-addr", addr, "-log-format", "json", "-v")
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		for range lines {
		}
		cmd.Wait()
	})
	next := func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("wsready serve exited")
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("log line %q is not JSON: %v", l, err)
			}
			return v
		case <-time.After(20 * time.Second):
			t.Fatal("no log line within 20s")
			return nil
		}
	}
	v := next()
	if v["msg"] != "serving" || v["level"] != "INFO" || v["auth"] != "off" || v["time"] == nil {
		t.Fatalf("first line %v, want the serving line", v)
	}
	// A debug line (-v) is JSON too: a refused origin.
	req, _ := http.NewRequest("GET", "http://"+addr+"/ws", nil)
	for k, val := range map[string]string{"Origin": "https://elsewhere.example", "Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
		req.Header.Set(k, val)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := next(); v["msg"] != "websocket origin refused" || v["level"] != "DEBUG" {
		t.Fatalf("line %v, want the refused origin at debug", v)
	}
}

// -hosts adds to the loopback names, as Options.AllowedHosts does: both
// answer; another name gets 421. The URLs of wsready serve are those of
// before the server became a library of separate handlers.
func TestServeHostsAddToLoopbackAndURLsStay(t *testing.T) {
	addr := freeAddr(t)
	n := startNode(t, addr, "-hosts", "demo.example", "-demo")
	get := func(path, host string) int {
		t.Helper()
		code, err := fetch.Status(context.Background(), nil, "http://"+n.addr+path, host)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	for host, want := range map[string]int{"demo.example": 200, "localhost": 200, "127.0.0.1": 200, "other.example": 421} {
		if got := get("/healthz", host); got != want {
			t.Errorf("-hosts demo.example, Host %s: %d, want %d", host, got, want)
		}
	}
	for path, want := range map[string]int{"/": 200, "/app.js": 200, "/api/stats": 200, "/api/faults": 200, "/metrics": 200, "/healthz": 200,
		"/ws": http.StatusUpgradeRequired, "/api/token": http.StatusMethodNotAllowed, "/api/reset": http.StatusMethodNotAllowed} {
		if got := get(path, "localhost"); got != want {
			t.Errorf("GET %s: %d, want %d", path, got, want)
		}
	}
}
