//go:build !js

// Package e2e drives headless Chromium (Debian's, through chromedp) against
// the real server on a loopback port: a smoke test of every stage and the
// embedding example, and the measurement suite that proves every stage
// against every failure switch.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/server/demo"
	"github.com/wsready/wsready/web"
)

// Env is one real server on a random loopback port, serving the demo's
// site as wsready serve does.
type Env struct {
	Srv  *server.Server
	Demo *demo.Demo // the switches
	Base string     // http://127.0.0.1:port
	hs   *http.Server
}

// StartServer starts the real server with the embedded page and the built
// WASM, with the defaults a person gets from make run.
func StartServer(opts *server.Options) (*Env, error) {
	return startServer(opts, true)
}

// startServer is StartServer with Options.Publish said (make run's is on).
func startServer(opts *server.Options, publish bool) (*Env, error) {
	return startServerOn(opts, publish, nil)
}

// startServerOn is startServer on ln, which it owns from here on (closed
// on failure and by Close); nil: a random loopback port.
func startServerOn(opts *server.Options, publish bool, ln net.Listener) (*Env, error) {
	return startDemoServer(opts, nil, publish, ln)
}

// startDemoServer is startServerOn with the demo's options d (nil: its
// defaults).
func startDemoServer(opts *server.Options, d *demo.Options, publish bool, ln net.Listener) (*Env, error) {
	if _, err := fs.Stat(web.FS(), "wsready.wasm"); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, errors.New("web/static/wsready.wasm is missing: run make build first")
	}
	var o server.Options
	if opts != nil {
		o = *opts
	}
	o.Demo = true       // the suite flips the switches, as make run's demo does
	o.Publish = publish // as make run (on): the page's Publish button
	if o.PingInterval == 0 {
		o.PingInterval = time.Second // as make run (-ping 1s): a dead link shows within seconds
	}
	if o.Auth == "" {
		o.Auth = server.AuthOptional // as make run
	}
	if o.RejectionThreshold == 0 {
		// The scenarios run back to back on one page: stage 0-5 clients
		// loop on Short tokens and Revoke, and the server's backstop for
		// looping client ids (20 rejections in 5 minutes) would still refuse
		// them in the next scenario. The backstop has its own server test.
		o.RejectionThreshold = 100000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("failed to listen: %w", err)
		}
	}
	srv, err := server.New(&o)
	if err != nil {
		ln.Close()
		return nil, err
	}
	dm, err := demo.New(srv, web.FS(), d)
	if err != nil {
		srv.Close()
		ln.Close()
		return nil, err
	}
	hs := srv.HTTPServer(dm.Handler())
	go hs.Serve(ln)
	return &Env{Srv: srv, Demo: dm, Base: "http://" + ln.Addr().String(), hs: hs}, nil
}

// Set flips a demo switch by its name in the server's table
// (demo.Demo.Set): true or false for a toggle, true for an action, a
// client id for revoke. A name or value the table refuses is a mistake in
// the suite itself, so it panics with the server's error.
func (e *Env) Set(name string, value any) {
	if err := e.Demo.Set(name, value); err != nil {
		panic("e2e: " + err.Error())
	}
}

// Close stops the server and its listener.
func (e *Env) Close() {
	e.Srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.hs.Shutdown(ctx)
}

// ChromiumPath finds Debian's Chromium.
func ChromiumPath() (string, error) {
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("chromium not found: run make chromium (apt-get install chromium)")
}

// Browser is one fresh headless Chromium with its own user data dir.
type Browser struct {
	Ctx    context.Context // a tab
	cancel []context.CancelFunc
	dir    string
}

// NewBrowser starts Chromium with the flags this machine needs.
func NewBrowser(parent context.Context) (*Browser, error) {
	return NewBrowserWith(parent)
}

// NewBrowserWith is NewBrowser with more allocator options (a flag such as
// ignore-certificate-errors for a proxy's self-signed certificate).
func NewBrowserWith(parent context.Context, extra ...chromedp.ExecAllocatorOption) (*Browser, error) {
	path, err := ChromiumPath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wsready-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.WindowSize(1200, 1000),
	)
	opts = append(opts, extra...)
	actx, cancelA := chromedp.NewExecAllocator(parent, opts...)
	tctx, cancelT := chromedp.NewContext(actx)
	b := &Browser{Ctx: tctx, cancel: []context.CancelFunc{cancelT, cancelA}, dir: dir}
	if err := chromedp.Do(tctx); err != nil { // start it now, so failures show here
		b.Close()
		return nil, fmt.Errorf("failed to start chromium: %w", err)
	}
	return b, nil
}

// NewContext opens a tab in a new browser context of b's Chromium (an
// incognito-like profile: its own cookies and storage), so two users can
// be signed in at once. Its Close closes the tab and the context only.
func (b *Browser) NewContext() (*Browser, error) {
	ctx, cancel := chromedp.NewContext(b.Ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("failed to open a browser context: %w", err)
	}
	return &Browser{Ctx: ctx, cancel: []context.CancelFunc{cancel}}, nil
}

// Close ends the browser and removes its data dir.
func (b *Browser) Close() {
	for _, c := range b.cancel {
		c()
	}
	if b.dir != "" { // a NewContext's has none
		os.RemoveAll(b.dir)
	}
}

// Navigate opens url in the tab.
func (b *Browser) Navigate(url string) error {
	return chromedp.Do(b.Ctx, chromedp.Navigate(url))
}

// Eval evaluates a JS expression (awaiting promises) and decodes the result.
func Eval[T any](b *Browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// WaitJS polls a JS predicate every 50ms until it is truthy or d passes.
func WaitJS(b *Browser, expr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := Eval[bool](b, "!!("+expr+")")
		if err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("timed out after %v waiting for %s: %w", d, expr, err)
			}
			return fmt.Errorf("timed out after %v waiting for %s", d, expr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SetOffline takes the tab off the network (or back on): the first call
// blocks the traffic, the second fires the window offline/online events.
func (b *Browser) SetOffline(offline bool) error {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return err
	}
	cond := &network.Conditions{Offline: offline, DownloadThroughput: -1, UploadThroughput: -1}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{cond},
	}); err != nil {
		return fmt.Errorf("emulate network conditions: %w", err)
	}
	if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{
		Offline: offline, DownloadThroughput: -1, UploadThroughput: -1,
	}); err != nil {
		return fmt.Errorf("override network state: %w", err)
	}
	return nil
}

// Throttle emulates a link of latency and bytesPerSec (both ways) for the
// tab's traffic, from the next request on.
func (b *Browser) Throttle(latency time.Duration, bytesPerSec float64) error {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return err
	}
	cond := &network.Conditions{Latency: float64(latency.Milliseconds()), DownloadThroughput: bytesPerSec, UploadThroughput: bytesPerSec}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{cond},
	}); err != nil {
		return fmt.Errorf("emulate network conditions: %w", err)
	}
	return nil
}

// Screenshot saves the viewport as a PNG.
func (b *Browser) Screenshot(path string) error {
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	if !strings.HasSuffix(path, ".png") {
		path += ".png"
	}
	return os.WriteFile(path, png, 0o644)
}
