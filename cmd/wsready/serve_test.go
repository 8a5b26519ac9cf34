//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/protocol"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsready/wsready/internal/fetch"
)

// Flags mean what they say: a zero or negative bound, or a stray argument,
// is refused before anything listens, as a usage error (exit code 2).
func TestServeRefusesInvalidFlags(t *testing.T) {
	dir := t.TempDir()
	shortSecret, goodSecret := filepath.Join(dir, "short"), filepath.Join(dir, "good")
	os.WriteFile(shortSecret, []byte("too short\n"), 0o600)
	os.WriteFile(goodSecret, []byte(strings.Repeat("s", 32)+"\n"), 0o600)
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	held := hold.Addr().String()
	for _, args := range [][]string{
		{"-max-conns", "0"}, {"-max-conns-per-ip", "-1"}, {"-max-queued-bytes", "0"}, {"-max-pending-replies", "0"},
		{"-write-timeout", "0s"}, {"-message-timeout", "-1s"}, {"-ping", "0s"}, {"-ping", "2h"}, {"-feed", "0s"},
		{"-addr", "nope"}, {"extra"}, {"-auth", "maybe"}, {"-ticket-life", "0s"}, {"-rejection-threshold", "0"},
		{"-admit-rate", "0"}, {"-tenant-rate", "-1"}, {"-admit-burst", "0"}, {"-refuse", "drop"}, {"-sweep-interval", "0s"}, {"-drain-window", "0s"},
		{"-ticket-rate", "0"}, {"-ticket-burst", "0"}, {"-bad-ticket-threshold", "0"},
		{"-log-format", "xml"}, {"-log-format", ""}, {"-log-format", "JSON"}, {"-no-such-flag"},
		{"-jwt-tenant-claim", "org"}, {"-jwt-issuer", "idp"}, {"-jwt-leeway", "1s"},
		{"-jwt-hs256-secret-file", shortSecret, "-jwt-leeway", "-1s"}, {"-jwt-hs256-secret-file", shortSecret},
		{"-jwt-hs256-secret-file", goodSecret, "-jwks", goodSecret}, {"-jwt-hs256-secret-file", goodSecret, "-auth", "off"},
		{"-jwt-public-key", goodSecret},
		{"-max-conns-per-tenant", "-1"}, {"-tenant-msg-rate", "-1"}, {"-tenant-msg-rate", "NaN"},
		{"-tenant-msg-burst", "5"}, {"-tenant-msg-rate", "5", "-tenant-msg-burst", "0"},
		{"-tenant-handshake-rate", "-1", "-tenant-handshake-burst", "1"}, {"-tenant-handshake-rate", "NaN", "-tenant-handshake-burst", "1"},
		{"-tenant-handshake-rate", "+Inf", "-tenant-handshake-burst", "1"}, {"-tenant-handshake-burst", "5"},
		{"-tenant-handshake-rate", "0", "-tenant-handshake-burst", "1"}, {"-tenant-handshake-rate", "5"},
		{"-tenant-handshake-rate", "5", "-tenant-handshake-burst", "0"}, {"-tenant-handshake-rate", "5", "-tenant-handshake-burst", "-1"},
		{"-trusted-proxies", "10.0.0.0/33"}, {"-trusted-proxies", "10.0.0.0/8,proxy.example"},
		{"-tls-cert", goodSecret}, {"-tls-key", goodSecret},
		{"-max-send-posts", "0"}, {"-max-send-bytes", "1000"}, {"-http-attach-timeout", "0s"}, {"-subscribe-rate", "0"},
		{"-subscribe-rate", "+Inf"}, {"-subscribe-burst", "0"}, {"-max-idempotency-keys-per-scope", "0"},
		{"-max-idempotency-keys-per-scope", "10001"},
	} {
		// The address is one this test holds: an invalid flag that got
		// as far as the listen would fail there, not with a usage error.
		err := serve(append([]string{"-addr", held}, args...))
		var ue *usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("serve %v: %v, want a usage error", args, err)
		}
	}
	// A file that cannot be read is a failure, not a usage error.
	if err := serve([]string{"-auth-key-file", "/nonexistent"}); err == nil || errors.As(err, new(*usageError)) {
		t.Errorf("serve -auth-key-file /nonexistent: %v", err)
	}
	if err := serve([]string{"-tls-cert", goodSecret, "-tls-key", goodSecret}); err == nil || errors.As(err, new(*usageError)) {
		t.Errorf("serve -tls-cert/-tls-key that are no PEM: %v, want a failure (not a usage error)", err)
	}
	for _, f := range []string{"-jwt-hs256-secret-file", "-jwt-public-key", "-jwks"} {
		if err := serve([]string{f, "/nonexistent"}); err == nil || errors.As(err, new(*usageError)) {
			t.Errorf("serve %s /nonexistent: %v", f, err)
		}
	}
	if err := serve([]string{"-log-format", "yaml"}); err == nil || err.Error() != `serve: -log-format must be text or json, not "yaml"` {
		t.Errorf("serve -log-format yaml: %v", err)
	}
}

// Logs were text only. -log-format json writes slog's JSON lines;
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

// The JWT-authenticated variant at the protocol level: wsready serve takes
// HS256 JWTs from the secret in -jwt-hs256-secret-file (never logged); a
// native client whose token hook mints 1-2 s JWTs is READY and refreshes
// each one in band before its exp, on the one connection (no 4001); a JWT
// signed with another secret ends the session forbidden.
func TestServeTakesJWTsAndTheirExpiryDrivesTheRefresh(t *testing.T) {
	secret := "an HS256 secret for wsready serve, 32 bytes or more"
	file := filepath.Join(t.TempDir(), "jwt-secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, logs := startLogged(t, "-jwt-hs256-secret-file", file, "-jwt-tenant-claim", "org", "-jwt-audience", "wsready", "-v")
	mint := func(key string, forced *atomic.Int64) func(context.Context, bool) (string, error) {
		return func(_ context.Context, force bool) (string, error) {
			if force {
				forced.Add(1)
			}
			return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
				"sub": "alice", "org": "acme", "aud": "wsready", "exp": time.Now().Add(2 * time.Second).Unix(),
			}).SignedString([]byte(key))
		}
	}
	var forced atomic.Int64
	c, err := native.Dial(context.Background(), n.url(), &native.Options{Token: mint(secret, &forced)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// JWTs of 1-2 s expire by the wall clock in the server's process: the
	// client refreshes in band twice, each time authenticated again.
	eventually(15*time.Second, func() bool {
		st := c.Stats()
		return c.State().Ready && st.Refreshes >= 2 && st.Authenticated == st.Refreshes+1
	})
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Refreshes < 2 || st.TokenRefreshes != 0 || int64(st.Refreshes) > forced.Load() || st.Authenticated != st.Refreshes+1 || st.Welcomes != 1 {
		t.Fatalf("1-2 s JWTs: %d in-band refreshes, %d after a 4001 (%d forced token calls), %d authenticated, %d welcomes; want a refresh and an authentication per exp on one connection, no 4001",
			st.Refreshes, st.TokenRefreshes, forced.Load(), st.Authenticated, st.Welcomes)
	}
	var none atomic.Int64
	bad, err := native.Dial(context.Background(), n.url(), &native.Options{Token: mint(strings.Repeat("x", 32), &none)})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.WaitState(ctx, func(s client.State) bool { return s.Ended != client.NotEnded }); err != nil {
		t.Fatal(err)
	}
	if s := bad.State(); s.Ended != client.Forbidden || s.EndCode != protocol.CloseForbidden {
		t.Fatalf("a JWT of another secret: state %+v, want ended forbidden (4003)", s)
	}
	if l := logs(); strings.Contains(l, secret) || !strings.Contains(l, "jwt=hs256") {
		t.Fatalf("the JWT secret reached the logs, or the serving line does not name the JWT key's kind:\n%s", l)
	}
}

// startLogged runs wsready serve with args on a free loopback address,
// waits until it serves, and returns it and its log so far.
func startLogged(t *testing.T, args ...string) (*node, func() string) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(wsreadyBin(t), append([]string{"serve", "-addr", addr, "-ping", "1s"}, args...)...)
	var mu sync.Mutex
	var buf bytes.Buffer
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{proc: &proc{what: "serve", cmd: cmd, done: make(chan error, 1)}, addr: addr}
	serving := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			mu.Lock()
			buf.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !ok && strings.Contains(sc.Text(), "msg=serving") {
				ok = true
				serving <- true
			}
		}
		if !ok {
			serving <- false
		}
		n.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-n.done })
	logs := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	select {
	case ok := <-serving:
		if !ok {
			t.Fatalf("wsready serve %v exited before serving:\n%s", args, logs())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("wsready serve %v did not serve within 20s", args)
	}
	return n, logs
}

// -trusted-proxies: from a trusted peer (here the test itself, on
// loopback), X-Forwarded-For names the client, so two clients get a
// -max-conns-per-ip of 1 each; without the flag they share the peer's.
func TestServeTrustedProxies(t *testing.T) {
	open := func(n *node, xff string) websocket.StatusCode {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, n.url(), &websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {xff}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return websocket.CloseStatus(err)
			}
			if strings.Contains(string(b), `"welcome"`) {
				return 0
			}
		}
	}
	trusting := startNode(t, freeAddr(t), "-trusted-proxies", "10.0.0.0/8, 127.0.0.1", "-max-conns-per-ip", "1")
	if a, b := open(trusting, "203.0.113.1"), open(trusting, "203.0.113.2"); a != 0 || b != 0 {
		t.Fatalf("two forwarded clients with -trusted-proxies: closed with %d and %d, want both served", a, b)
	}
	if c := open(trusting, "203.0.113.1"); c != 1013 {
		t.Fatalf("the first client again: %d, want 1013", c)
	}
	plain := startNode(t, freeAddr(t), "-max-conns-per-ip", "1")
	if a, b := open(plain, "203.0.113.1"), open(plain, "203.0.113.2"); a != 0 || b != 1013 {
		t.Fatalf("without -trusted-proxies: %d and %d, want the second refused (one peer)", a, b)
	}
}

// selfSigned writes a self-signed certificate for localhost and 127.0.0.1
// and its key to dir, and returns their paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wsready test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// wsready serve -tls-cert -tls-key serves HTTPS and WSS: the native client
// dials wss:// (trusting the certificate through DialOptions' HTTP
// client) and is READY; plain HTTP on that port is refused; -tls-cert
// alone exits with 2.
func TestServeTLS(t *testing.T) {
	bin := wsreadyBin(t)
	cert, key, pool := selfSigned(t, t.TempDir())
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "serve", "-addr", freeAddr(t), "-tls-cert", cert)
	cmd.Stderr = &stderr
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "-tls-cert and -tls-key go together") {
		t.Fatalf("-tls-cert alone: %v, stderr %q; want exit 2 and the reason", err, stderr.String())
	}

	n, logs := startLogged(t, "-tls-cert", cert, "-tls-key", key)
	if !strings.Contains(logs(), "url=https://") {
		t.Fatalf("the serving line does not say https:\n%s", logs())
	}
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer httpc.CloseIdleConnections()
	code, err := fetch.Status(context.Background(), httpc, "https://"+n.addr+"/healthz", "")
	if err != nil || code != 200 {
		t.Fatalf("GET https /healthz: %d %v", code, err)
	}
	if code, err := fetch.Status(context.Background(), nil, "http://"+n.addr+"/healthz", ""); err == nil && code != http.StatusBadRequest {
		t.Fatalf("plain HTTP on the TLS port: %d, want 400 (Go's answer to HTTP on a TLS port)", code)
	}
	c, err := native.Dial(context.Background(), "wss://"+n.addr+"/ws", &native.Options{DialOptions: &websocket.DialOptions{HTTPClient: httpc}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("wss://: %v", err)
	}
	// Without trusting the certificate, the dial fails.
	untrusting, err := native.Dial(context.Background(), "wss://"+n.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer untrusting.Close()
	short, cancelShort := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShort()
	if err := untrusting.WaitReady(short); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("wss:// with an unknown certificate: %v, want a certificate error", err)
	}
}
