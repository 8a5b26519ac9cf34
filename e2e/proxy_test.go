//go:build !js

package e2e

// The reverse proxies of docs/deploy.md, run: docs/deploy/nginx.conf,
// haproxy.cfg and Caddyfile (the files the page includes verbatim) as
// processes from Debian's packages on loopback ports, in front of the real
// server, with Chromium on the other side. A test changes only what must
// vary (ports, certificate paths, the host name; proxyConf says each) and
// fails when the text it changes is no longer in the file, so the files
// users copy are the ones that ran.
//
// TLS: the files terminate TLS as the docs show; each test makes a
// self-signed certificate for 127.0.0.1 and Chromium is told to accept it
// (--ignore-certificate-errors). The page is on the proxy's random port,
// never 443: a page on a non-default port is what every test here loads.
//
// The client address: on loopback the browser connects from 127.0.0.1;
// nginx and HAProxy are bound to 127.0.0.3 for their upstream connections
// (proxy_bind, source: added by the test), and the server trusts
// 127.0.0.3 only, so the server tells the client from the proxy.
//
// A proxy binary that is missing skips its tests with a message, unless
// WSREADY_REQUIRE_PROXIES is set (make e2e installs them and sets it).

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
)

// proxySource is the address nginx and HAProxy connect to the server from,
// the one -trusted-proxies names; the browser is at 127.0.0.1.
const proxySource = "127.0.0.3"

// requireProxy is the path of bin, or skips the test when it is missing
// (fails when WSREADY_REQUIRE_PROXIES is set: CI must not skip silently).
func requireProxy(t *testing.T, bin string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err == nil {
		return p
	}
	if os.Getenv("WSREADY_REQUIRE_PROXIES") != "" {
		t.Fatalf("%s is not installed and WSREADY_REQUIRE_PROXIES is set: run make e2e (it installs nginx, haproxy and caddy from Debian's packages)", bin)
	}
	t.Skipf("%s is not installed: apt-get install %s (make e2e does), or set WSREADY_REQUIRE_PROXIES to fail instead of skipping", bin, bin)
	return ""
}

// lockedBuffer collects a process's output for the test's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// selfSigned writes cert.pem, key.pem and both in one file (HAProxy's
// crt) for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (cert, key, both string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	c := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kp := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	cert, key, both = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "both.pem")
	for path, data := range map[string][]byte{cert: c, key: kp, both: append(append([]byte{}, c...), kp...)} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key, both
}

// replaceIn replaces every old in s with new and fails the test when the
// file no longer holds old: the docs changed under the test.
func replaceIn(t *testing.T, file, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%s no longer holds %q, which the test changes: update e2e/proxy_test.go with the file", file, old)
	}
	return strings.ReplaceAll(s, old, new)
}

// proxy is one running proxy in front of the server.
type proxy struct {
	Base   string // https://127.0.0.1:port
	out    *lockedBuffer
	cmd    *exec.Cmd
	render func(edit func(string) string) // writes its file again with edit applied
}

// reload renders the proxy's file again with edit applied and tells nginx
// to load it (SIGHUP: new workers take new connections, old ones finish
// theirs), then waits (5 s at most) for nginx to say it did.
func (p *proxy) reload(t *testing.T, edit func(string) string) {
	t.Helper()
	n := strings.Count(p.out.String(), "reconfiguring")
	p.render(edit)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("failed to signal the proxy: %v", err)
	}
	if !poll.Until(5*time.Second, func() bool { return strings.Count(p.out.String(), "reconfiguring") > n }) {
		t.Fatalf("the proxy did not reload within 5 s:\n%s", p.out.String())
	}
}

// proxyConf is a proxy's tested file rendered for this run: listen on
// 127.0.0.1:port, forward to upstream, the test's certificate; edit then
// changes what a variant changes. It returns the command to run.
type proxyConf func(t *testing.T, dir string, port, upstream int, edit func(string) string) (args []string, env []string)

// proxies are the three of docs/deploy.md, by binary.
var proxies = map[string]proxyConf{
	"nginx":   nginxConf,
	"haproxy": haproxyConf,
	"caddy":   caddyConf,
}

func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func nginxConf(t *testing.T, dir string, port, upstream int, edit func(string) string) ([]string, []string) {
	const file = "docs/deploy/nginx.conf"
	c := readDeploy(t, "nginx.conf")
	cert, key, _ := selfSigned(t, dir)
	c = replaceIn(t, file, c, "listen 443 ssl http2;", fmt.Sprintf("listen 127.0.0.1:%d ssl http2;", port))
	c = replaceIn(t, file, c, "server 127.0.0.1:8080;", fmt.Sprintf("server 127.0.0.1:%d;", upstream))
	c = replaceIn(t, file, c, "/etc/ssl/realtime.example.com/fullchain.pem", cert)
	c = replaceIn(t, file, c, "/etc/ssl/realtime.example.com/privkey.pem", key)
	c = replaceIn(t, file, c, "server_name realtime.example.com;", "server_name realtime.example.com;\n    proxy_bind "+proxySource+";")
	if edit != nil {
		c = edit(c)
	}
	site := filepath.Join(dir, "site.conf")
	user := ""
	if os.Geteuid() == 0 { // workers stay root: the temp dirs are the test's, mode 0700
		user = "user root;"
	}
	// notice: a reload says "reconfiguring" (proxy.reload waits for it).
	main := fmt.Sprintf(`daemon off;
error_log stderr notice;
worker_processes 1;
pid %[1]s/nginx.pid;
%[2]s
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[3]s;
}
`, dir, user, site)
	write(t, site, c)
	write(t, filepath.Join(dir, "nginx.conf"), main)
	return []string{"-e", "stderr", "-p", dir, "-c", filepath.Join(dir, "nginx.conf")}, nil
}

func haproxyConf(t *testing.T, dir string, port, upstream int, edit func(string) string) ([]string, []string) {
	const file = "docs/deploy/haproxy.cfg"
	c := readDeploy(t, "haproxy.cfg")
	_, _, both := selfSigned(t, dir)
	c = replaceIn(t, file, c, "bind :443 ssl crt /etc/haproxy/certs/realtime.example.com.pem", fmt.Sprintf("bind 127.0.0.1:%d ssl crt %s", port, both))
	// Two file descriptors a connection: the file's maxconn needs more
	// than a test machine's limit may allow.
	c = replaceIn(t, file, c, "maxconn 10000", "maxconn 1000")
	c = replaceIn(t, file, c, "server wsready1 127.0.0.1:8080", fmt.Sprintf("server wsready1 127.0.0.1:%d source %s", upstream, proxySource))
	if edit != nil {
		c = edit(c)
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	write(t, cfg, c)
	return []string{"-db", "-f", cfg}, nil
}

func caddyConf(t *testing.T, dir string, port, upstream int, edit func(string) string) ([]string, []string) {
	const file = "docs/deploy/Caddyfile"
	c := readDeploy(t, "Caddyfile")
	// The site's name becomes the test's address, with a certificate from
	// Caddy's own local CA (the docs' gets one from Let's Encrypt), no admin
	// endpoint and no HTTP-to-HTTPS redirect listener.
	c = replaceIn(t, file, c, "realtime.example.com {", fmt.Sprintf(`{
	admin off
	local_certs
	skip_install_trust
	auto_https disable_redirects
	http_port %d
	servers {
		protocols h1 h2
	}
}

https://127.0.0.1:%d {`, freePort(t), port))
	c = replaceIn(t, file, c, "reverse_proxy 127.0.0.1:8080", fmt.Sprintf("bind 127.0.0.1\n    reverse_proxy 127.0.0.1:%d", upstream))
	if edit != nil {
		c = edit(c)
	}
	cfg := filepath.Join(dir, "Caddyfile")
	write(t, cfg, c)
	return []string{"run", "--adapter", "caddyfile", "--config", cfg},
		[]string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startProxy runs the proxy bin (its tested file, rendered, edit applied)
// in front of env on a free loopback port, waits until /healthz answers 200
// through it (Caddy listens before its certificate is made), and stops it
// when the test ends.
func startProxy(t *testing.T, bin string, env *Env, edit func(string) string) *proxy {
	t.Helper()
	path := requireProxy(t, bin)
	upstream := env.Port()
	port := freePort(t)
	dir := t.TempDir()
	args, extraEnv := proxies[bin](t, dir, port, upstream, edit)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s's output:\n%s", bin, out.String())
		}
	})
	p := &proxy{Base: fmt.Sprintf("https://127.0.0.1:%d", port), out: out, cmd: cmd,
		render: func(edit func(string) string) { proxies[bin](t, dir, port, upstream, edit) }}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's self-signed certificate
	}}
	defer hc.CloseIdleConnections()
	var err error
	if !poll.UntilEvery(15*time.Second, 50*time.Millisecond, func() bool {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("%s exited before it served (%v):\n%s", bin, err, out.String())
		default:
		}
		var resp *http.Response
		if resp, err = hc.Get(p.Base + "/healthz"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("%s does not answer /healthz on 127.0.0.1:%d after 15 s (%v):\n%s", bin, port, err, out.String())
	}
	return p
}

// proxyEnv is the server (trusting proxySource) and a Chromium that
// accepts the proxies' self-signed certificates.
func proxyEnv(t *testing.T, opts *server.Options) (*Env, *Browser) {
	t.Helper()
	return proxyDemoEnv(t, opts, nil)
}

// proxyDemoEnv is proxyEnv with the demo's options d (nil: its defaults).
func proxyDemoEnv(t *testing.T, opts *server.Options, d *demo.Options) (*Env, *Browser) {
	t.Helper()
	var o server.Options
	if opts != nil {
		o = *opts
	}
	o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix(proxySource + "/32")}
	env, err := startDemoServer(&o, d, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env, proxyBrowser(t)
}

func proxyBrowser(t *testing.T) *Browser {
	t.Helper()
	b, err := NewBrowserWith(context.Background(), chromedp.Flag("ignore-certificate-errors", true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// openThrough loads the stage 8 page through p and waits for READY over
// via ("websocket" or "http").
func openThrough(t *testing.T, p *proxy, b *Browser, via string, query string) {
	t.Helper()
	if err := b.Navigate(p.Base + "/?stage=8" + query); err != nil {
		t.Fatal(err)
	}
	installAudit(t, b)
	if err := WaitJS(b, "wsreadyDemo.state.ready", 20*time.Second); err != nil {
		logEvents(t, b, 0)
		t.Fatal(err)
	}
	st, err := Eval[map[string]any](b, "({via: wsreadyDemo.state.via, port: location.port, proto: location.protocol})")
	if err != nil {
		t.Fatal(err)
	}
	if st["via"] != via {
		logEvents(t, b, 0)
		t.Fatalf("READY over %v; want %s", st["via"], via)
	}
	if st["port"] == "" || st["proto"] != "https:" {
		t.Fatalf("the page is at %v//…:%v; want https on a non-default port", st["proto"], st["port"])
	}
}

// Port is the server's loopback port.
func (e *Env) Port() int {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(e.Base, "http://"))
	var n int
	fmt.Sscan(p, &n)
	return n
}

// Through each proxy's file as the docs show it, on a non-default port:
// the page is READY over WebSocket, a request round-trips, the feed flows,
// and the server keys the connection by the browser's address (behind
// nginx and HAProxy, which connect from proxySource), not the proxy's.
func TestProxyWebSocket(t *testing.T) {
	for _, bin := range []string{"nginx", "haproxy", "caddy"} {
		t.Run(bin, func(t *testing.T) {
			requireProxy(t, bin)
			env, b := proxyEnv(t, nil)
			p := startProxy(t, bin, env, nil)
			openThrough(t, p, b, "websocket", "")
			res, err := Eval[map[string]any](b, "wsreadyDemo.sendRequest('echo', {through: '"+bin+"'})")
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := res["value"].(map[string]any); res["status"] != "resolved" || v["through"] != bin {
				t.Fatalf("request through %s: %v", bin, res)
			}
			moreUpdates(t, b, 4, 5*time.Second)
			assertNoLoss(t, b, "through "+bin)
			conns := env.Srv.Stats().Connections
			if len(conns) != 1 || conns[0].Transport != "ws" {
				t.Fatalf("the server's connections %+v; want 1 ws", conns)
			}
			// Caddy cannot be bound to another address (its local_address is
			// 2.7's): it connects from the browser's, which proves nothing.
			if bin != "caddy" && conns[0].Remote != "127.0.0.1" {
				t.Fatalf("the server keys the connection by %q; want the browser's 127.0.0.1 (the proxy connects from %s)", conns[0].Remote, proxySource)
			}
		})
	}
}

// longPolls is how many long polls the page has made (its resource
// timing entries: the first 250 requests).
func longPolls(t *testing.T, b *Browser) int {
	t.Helper()
	n, err := Eval[int](b, "performance.getEntriesByType('resource').filter((e) => e.name.includes('poll=1')).length")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A proxy that does not pass upgrades (the WebSocket lines left out of the
// nginx file; HAProxy told to drop Upgrade): the server answers 426, and
// the stage 8 page is READY over HTTP through the same proxy, its stream
// unbuffered as the file says (no long poll). Caddy passes upgrades
// whatever its file says: the server refuses them (Block WebSocket), and
// its stream is proved the same way.
func TestProxyRefusingUpgradesFallsBackToHTTP(t *testing.T) {
	edits := map[string]func(string) string{
		"nginx": func(c string) string {
			c = replaceIn(t, "docs/deploy/nginx.conf", c, "proxy_set_header Upgrade $http_upgrade;", "")
			return replaceIn(t, "docs/deploy/nginx.conf", c, "proxy_set_header Connection $connection_upgrade;", "")
		},
		"haproxy": func(c string) string {
			return replaceIn(t, "docs/deploy/haproxy.cfg", c, "    default_backend wsready", "    http-request del-header Upgrade\n    http-request set-header Connection close\n    default_backend wsready")
		},
	}
	for _, bin := range []string{"nginx", "haproxy", "caddy"} {
		t.Run(bin, func(t *testing.T) {
			requireProxy(t, bin)
			env, b := proxyEnv(t, nil)
			p := startProxy(t, bin, env, edits[bin])
			if edits[bin] == nil {
				env.Set("blockWebSocket", true)
			}
			openThrough(t, p, b, "http", "")
			moreUpdates(t, b, 4, 5*time.Second)
			assertNoLoss(t, b, "over HTTP through "+bin)
			if n := longPolls(t, b); n != 0 {
				t.Fatalf("the page made %d long polls through %s; want its stream to pass unbuffered", n, bin)
			}
			if tr := serverTransports(env); tr["sse"] != 1 || tr["ws"] != 0 {
				t.Fatalf("the server's connections by transport %v; want 1 sse", tr)
			}
			if st := env.Srv.Stats(); bin != "caddy" && len(st.Connections) == 1 && st.Connections[0].Remote != "127.0.0.1" { // Caddy: as in TestProxyWebSocket
				t.Fatalf("the HTTP session is keyed by %q; want the browser's 127.0.0.1", st.Connections[0].Remote)
			}
		})
	}
}

// The per-address limit behind a proxy: with one connection per address,
// two clients at different addresses both get in through the proxy (it
// connects from one address for both), and a second from the same
// address is refused: the limit counts the client X-Forwarded-For names.
func TestProxyPerAddressLimitSeesTheClient(t *testing.T) {
	for _, bin := range []string{"nginx", "haproxy"} {
		t.Run(bin, func(t *testing.T) {
			requireProxy(t, bin)
			env, err := StartServer(&server.Options{
				TrustedProxies: []netip.Prefix{netip.MustParsePrefix(proxySource + "/32")},
				MaxConnsPerIP:  1,
				RefuseWith:     server.RefuseHTTP,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(env.Close)
			p := startProxy(t, bin, env, nil)
			wsURL := "wss" + strings.TrimPrefix(p.Base, "https") + "/ws"
			dial := func(from string) (*websocket.Conn, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
				c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{
					DialContext:     d.DialContext,
					TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's self-signed certificate
				}}})
				return c, err
			}
			var open []*websocket.Conn
			defer func() {
				for _, c := range open {
					c.CloseNow()
				}
			}()
			for _, from := range []string{"127.0.0.4", "127.0.0.5"} {
				c, err := dial(from)
				if err != nil {
					t.Fatalf("a client at %s through %s (one connection per address, none open from it): %v", from, bin, err)
				}
				open = append(open, c)
			}
			waitConns(t, env, 2)
			c, err := dial("127.0.0.4")
			if err == nil {
				c.CloseNow()
				t.Fatalf("a second client at 127.0.0.4 through %s got in; want the per-address limit's 503", bin)
			}
			if !strings.Contains(err.Error(), "503") {
				t.Fatalf("a second client at 127.0.0.4 through %s: %v; want the per-address limit's 503", bin, err)
			}
			remotes := map[string]bool{}
			for _, cs := range env.Srv.Stats().Connections {
				remotes[cs.Remote] = true
			}
			if !remotes["127.0.0.4"] || !remotes["127.0.0.5"] {
				t.Fatalf("the server keys its connections by %v; want 127.0.0.4 and 127.0.0.5", remotes)
			}
		})
	}
}

// waitConns waits (5 s at most) for n open connections on the server.
func waitConns(t *testing.T, env *Env, n int) {
	t.Helper()
	if !poll.UntilEvery(5*time.Second, 20*time.Millisecond, func() bool { return len(env.Srv.Stats().Connections) == n }) {
		t.Fatalf("the server has %d connections; want %d", len(env.Srv.Stats().Connections), n)
	}
}

// withReadTimeout sets bin's read (and send) timeouts in its tested file
// to timeout (nginx: proxy_read_timeout and proxy_send_timeout; HAProxy:
// timeout client, server and tunnel), e.g. "6s".
func withReadTimeout(t *testing.T, bin, timeout string) func(string) string {
	switch bin {
	case "nginx":
		return func(c string) string {
			c = replaceIn(t, "docs/deploy/nginx.conf", c, "proxy_read_timeout 75s;", "proxy_read_timeout "+timeout+";")
			return replaceIn(t, "docs/deploy/nginx.conf", c, "proxy_send_timeout 75s;", "proxy_send_timeout "+timeout+";")
		}
	case "haproxy":
		return func(c string) string {
			for _, k := range []string{"client", "server", "tunnel"} {
				c = replaceIn(t, "docs/deploy/haproxy.cfg", c, "timeout "+k+" 75s", "timeout "+k+" "+timeout)
			}
			return c
		}
	}
	t.Fatalf("no read timeout to set in %s's file", bin)
	return nil
}

// idleThrough opens the stage 8 page through bin with its read timeout
// set to timeout, over via ("websocket", or "http" with upgrades
// refused), against a server with no feed (its updates would keep the
// connection busy) at ping, sweep and grace (0: Options' defaults), and
// leaves it idle for hold. It returns the page's dials and the server's
// handshakes (sessions over HTTP) meanwhile, and whether the page left
// READY.
func idleThrough(t *testing.T, bin, via, timeout string, ping, sweep, grace, hold time.Duration) (dials, handshakes float64, left bool) {
	dials, handshakes, left, _ = idleCloses(t, bin, via, timeout, ping, sweep, grace, hold)
	return dials, handshakes, left
}

// idleCloses is idleThrough, and the closes the page saw meanwhile as the
// page logs them ("closed with 1006 at 23.1 s"), then what the server's
// own counters say it closed meanwhile (the sweep, a stalled write, a
// peer gone).
func idleCloses(t *testing.T, bin, via, timeout string, ping, sweep, grace, hold time.Duration) (dials, handshakes float64, left bool, closes []string) {
	t.Helper()
	// No feed: its updates would keep the connection busy.
	env, b := proxyDemoEnv(t, &server.Options{PingInterval: ping, SweepInterval: sweep, SweepGrace: grace}, &demo.Options{NoFeed: true})
	p := startProxy(t, bin, env, withReadTimeout(t, bin, timeout))
	if via == "http" {
		env.Set("blockWebSocket", true)
	}
	openThrough(t, p, b, via, "")
	hs0, l0 := env.Srv.Stats().Handshakes, env.Srv.Stats().Limits
	d0, err := Eval[float64](b, "wsreadyDemo.client.stats().dials")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UnixMilli()
	browserRuns(hold) // the idle connection outlives the proxy's read timeouts
	d1, err := Eval[float64](b, "wsreadyDemo.client.stats().dials")
	if err != nil {
		t.Fatal(err)
	}
	notReady, _ := readyAt(b, "!s.ready", t0)
	if d1 != d0 || notReady >= 0 {
		logEvents(t, b, t0) // why it dialed
		closes, _ = Eval[[]string](b, fmt.Sprintf(`wsreadyDemo.log.filter((e) => e.kind === 'close' && e.t >= %[1]d).map((e) => e.detail.replace(/^socket \d+ /, '') + ' at ' + ((e.t - %[1]d) / 1000).toFixed(1) + ' s')`, t0))
		l1 := env.Srv.Stats().Limits
		closes = append(closes, fmt.Sprintf("the server: %d closed by the sweep, %d stalled writes, %d peers gone",
			l1.SweepClosed-l0.SweepClosed, l1.Stalled-l0.Stalled, l1.PeerGone-l0.PeerGone))
	}
	return d1 - d0, float64(env.Srv.Stats().Handshakes - hs0), notReady >= 0, closes
}

// Idle connections outlive the proxy's read timeout: the docs' pair (75 s
// read timeout, 25 s pings and a 10 s sweep) scaled down for CI to a 6 s
// timeout, 2.5 s pings and a 1 s sweep (grace 0.5 s). A page that only
// listens holds one WebSocket through three read timeouts: no dial, no
// handshake, READY throughout; through nginx over the HTTP transport too
// (its stream). The control (nginx): the same timeout with
// pings and sweep above it loses the connection, so the timeout is real.
func TestProxyIdleOutlivesReadTimeout(t *testing.T) {
	const timeout = 6 * time.Second
	idle := func(t *testing.T, bin, via string, ping, sweep time.Duration) (dials, handshakes float64, left bool) {
		return idleThrough(t, bin, via, "6s", ping, sweep, sweep/2, 3*timeout+time.Second)
	}
	for _, bin := range []string{"nginx", "haproxy"} {
		t.Run(bin, func(t *testing.T) {
			requireProxy(t, bin)
			dials, hs, left := idle(t, bin, "websocket", 2500*time.Millisecond, time.Second)
			t.Logf("through %s, %v read timeout, 2.5 s pings, %v idle: %v dials, %v handshakes, left READY: %v", bin, timeout, 3*timeout+time.Second, dials, hs, left)
			if dials != 0 || hs != 0 || left {
				t.Fatalf("the idle connection through %s did not survive: %v dials, %v handshakes, left READY %v; want none", bin, dials, hs, left)
			}
		})
	}
	t.Run("nginx-http", func(t *testing.T) {
		requireProxy(t, "nginx")
		dials, hs, left := idle(t, "nginx", "http", 2500*time.Millisecond, time.Second)
		t.Logf("over HTTP through nginx, %v read timeout, 2.5 s pings, %v idle: %v dials, %v sessions, left READY: %v", timeout, 3*timeout+time.Second, dials, hs, left)
		if dials != 0 || hs != 0 || left {
			t.Fatalf("the idle stream through nginx did not survive: %v dials, %v sessions, left READY %v; want none", dials, hs, left)
		}
	})
	t.Run("control", func(t *testing.T) {
		requireProxy(t, "nginx")
		dials, hs, left := idle(t, "nginx", "websocket", 10*time.Second, 10*time.Second)
		t.Logf("control through nginx, %v read timeout, 10 s pings: %v dials, %v handshakes, left READY: %v", timeout, dials, hs, left)
		if dials == 0 && hs == 0 && !left {
			t.Fatal("with pings and sweep above the read timeout the connection survived: the timeout the test sets is not in effect")
		}
	})
}

// A proxy that buffers responses (nginx told to ignore the server's
// X-Accel-Buffering: no and buffer the stream's location), with the
// server refusing upgrades (Block WebSocket): the stream opens and delivers
// nothing, so the page's session goes on in long polls and is READY over
// HTTP; updates flow with none lost or duplicated across the switch, and
// across a Restart, after which the next session starts in long polls at
// once; unblocked, the WebSocket re-probe moves the page to WebSocket
// within one re-probe interval, losing nothing.
func TestProxyBufferingFallsBackToLongPoll(t *testing.T) {
	requireProxy(t, "nginx")
	env, b := proxyEnv(t, nil)
	p := startProxy(t, "nginx", env, func(c string) string {
		return replaceIn(t, "docs/deploy/nginx.conf", c, "proxy_buffering off;", "proxy_buffering on;\n        proxy_ignore_headers X-Accel-Buffering;")
	})
	env.Set("blockWebSocket", true)
	t0 := time.Now()
	openThrough(t, p, b, "http", fmt.Sprintf("&reprobeMs=%d", reprobe.Milliseconds()))
	t.Logf("READY over HTTP through a buffering nginx %v after navigation", time.Since(t0).Round(100*time.Millisecond))
	if longPolls(t, b) == 0 {
		t.Fatal("READY through a buffering nginx without a long poll")
	}
	moreUpdates(t, b, 8, 10*time.Second)
	assertNoLoss(t, b, "across the switch to long polls")
	// One connection, once the server has let go of any session an
	// earlier attempt left (a loaded machine can time out the first
	// attempt; its session lasts two ping intervals and the sweep's grace).
	var tr map[string]int
	if !poll.UntilEvery(10*time.Second, 100*time.Millisecond, func() bool { // the server's sweep runs on its own clock
		tr = serverTransports(env)
		return tr["sse"] == 1 && tr["ws"] == 0
	}) {
		t.Fatalf("the server's connections by transport %v; want 1 sse", tr)
	}
	res, err := Eval[map[string]any](b, "wsreadyDemo.sendRequest('echo', {over: 'long polls'})")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := res["value"].(map[string]any); res["status"] != "resolved" || v["over"] != "long polls" {
		t.Fatalf("request over long polls: %v", res)
	}

	// Restart: the session is dropped with 1012 and a slot; the next one
	// starts in long polls (the server said the stream was held), so it is
	// READY within a second of the server accepting again, not after
	// another silent stream (bridge.FirstEventTimeout, 3 s).
	t1 := time.Now().UnixMilli()
	env.Set("restart", true)
	accept := env.Demo.Stats().RestartUntil.UnixMilli()
	waitState(t, b, "!s.ready", t1, 10*time.Second)
	back := readySince(t, b, 25*time.Second)
	moreUpdates(t, b, 8, 10*time.Second)
	t.Logf("Restart over long polls: READY %d ms after the server accepted again", back-accept)
	if back-accept > 2500 {
		t.Errorf("READY %d ms after Restart's end; want the next session in long polls at once (under 2.5 s)", back-accept)
	}
	assertNoLoss(t, b, "after Restart over long polls")

	u := measureUnblock(t, env, b)
	t.Logf("unblocked: on WebSocket %d ms after (re-probe every %v), READY left meanwhile: %v; %d lost, %d duplicated across the move", u.moved-u.t0, reprobe, u.flicker >= 0, u.lost, u.dups)
	if d := time.Duration(u.moved-u.t0) * time.Millisecond; d > reprobe+time.Second {
		t.Errorf("back on WebSocket %v after the switch; want within one re-probe interval (%v)", d, reprobe)
	}
	assertNoLoss(t, b, "across the move from long polls to WebSocket")
}

// jsStreamProbes counts, from the page, its long polls (window.__polls:
// fetches of poll=1) and keeps the EventSources it opens to check the path
// (window.__probes: &probe=1) and to move its session onto a stream
// (window.__streams: &ping=1), by wrapping fetch and EventSource; the wasm
// looks both up at each use.
const jsStreamProbes = `(() => {
	if (window.__probes) return true;
	window.__polls = 0; window.__probes = []; window.__streams = [];
	const f = window.fetch;
	window.fetch = (u, i) => { if (String(u).includes('poll=1')) window.__polls++; return f(u, i); };
	const ES = window.EventSource;
	window.EventSource = class extends ES {
		constructor(u, o) {
			super(u, o);
			if (String(u).includes('probe=1')) window.__probes.push(this);
			if (String(u).includes('ping=1')) window.__streams.push(this);
		}
	};
	return true;
})()`

// A session in long polls behind a buffering nginx checks every re-probe
// interval whether the path streams: while nginx buffers, the check's
// ping does not come, it is closed, and the polls go on beside it, READY
// throughout; once nginx is reloaded without buffering (the docs' file as
// it is), the next check passes and the session moves onto its stream: no
// more polls, READY throughout, the feed with none lost or duplicated.
// Before, a session in long polls polled until it ended.
func TestProxyBufferingStopsAndTheSessionStreamsAgain(t *testing.T) {
	requireProxy(t, "nginx")
	env, b := proxyEnv(t, nil)
	buffering := func(c string) string {
		return replaceIn(t, "docs/deploy/nginx.conf", c, "proxy_buffering off;", "proxy_buffering on;\n        proxy_ignore_headers X-Accel-Buffering;")
	}
	p := startProxy(t, "nginx", env, buffering)
	env.Set("blockWebSocket", true)
	openThrough(t, p, b, "http", fmt.Sprintf("&reprobeMs=%d", reprobe.Milliseconds()))
	if _, err := Eval[bool](b, jsStreamProbes); err != nil {
		t.Fatal(err)
	}
	if longPolls(t, b) == 0 {
		t.Fatal("READY through a buffering nginx without a long poll")
	}
	t0 := time.Now().UnixMilli()
	// A check while nginx buffers: silent, closed, and the polls go on.
	if err := WaitJS(b, "window.__probes.some((e) => e.readyState === 2)", reprobe+bridgeFirstEventTimeout+5*time.Second); err != nil {
		t.Fatalf("no stream probe closed within a re-probe interval and its wait: %v", err)
	}
	if n, _ := Eval[int](b, "window.__streams.length"); n != 0 {
		t.Fatalf("%d streams opened while nginx buffers; want none (no check can pass)", n)
	}
	polls, _ := Eval[int](b, "window.__polls")
	if err := WaitJS(b, fmt.Sprintf("window.__polls > %d", polls), 5*time.Second); err != nil {
		t.Fatal("no long poll after the silent probe")
	}
	moreUpdates(t, b, 4, 10*time.Second)
	assertNoLoss(t, b, "across a silent stream probe")

	p.reload(t, nil)
	tr := time.Now()
	if err := WaitJS(b, "window.__streams.some((e) => e.readyState === 1)", 2*reprobe+bridgeFirstEventTimeout+10*time.Second); err != nil {
		t.Fatalf("no stream open %v after nginx stopped buffering: %v", time.Since(tr), err)
	}
	// On the stream: the polls stop.
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, _ := Eval[int](b, "window.__polls")
		time.Sleep(1500 * time.Millisecond) // the feed's 250 ms would make several polls meanwhile
		m, _ := Eval[int](b, "window.__polls")
		if n == m {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still polling %v after nginx stopped buffering (%d polls in 1.5 s)", time.Since(tr), m-n)
		}
	}
	t.Logf("streaming again %v after nginx stopped buffering (re-probe every %v)", time.Since(tr).Round(100*time.Millisecond), reprobe)
	moreUpdates(t, b, 8, 10*time.Second)
	if at, _ := readyAt(b, "!s.ready", t0); at >= 0 {
		logEvents(t, b, t0)
		t.Errorf("the page left READY %d ms into the probes", at-t0)
	}
	if v, _ := Eval[string](b, "wsreadyDemo.state.via"); v != "http" {
		t.Errorf("via %q; want http (WebSocket is still blocked)", v)
	}
	assertNoLoss(t, b, "across the move from long polls to the stream")
}

// bridgeFirstEventTimeout is bridge.FirstEventTimeout (3 s): how long a
// stream probe may stay silent.
const bridgeFirstEventTimeout = 3 * time.Second
