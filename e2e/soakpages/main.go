// Command soakpages runs the chaos soak's Chromium pages (docs/soak.md):
// three pages of the demo at stage 8, two tabs of one browser context on
// one node (they share one connection: a leader and a follower) and one
// page behind a proxy that refuses upgrades (so it runs over HTTP). It
// writes what each page was handed as soak history events (the JSON
// shape of internal/soak.Event, which this module cannot import) to its
// own JSON-lines file, and obeys the soak runner's commands on stdin:
//
//	freeze N   freeze page N (CDP Page.setWebLifecycleState frozen)
//	thaw N     make page N active again
//	final      write each page's final READY (1) or not (0)
//	quit       close the pages and the file, and exit
//
// Each command is answered with one line on stdout, "ok ..." or
// "err ...". "ready" is printed once every page was READY (at most 90 s
// after the start, else it exits 1). The soak's cmd/wsready TestSoak
// builds and runs it; nothing else does.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/wsready/wsready/e2e"
)

// event is internal/soak.Event's JSON shape (the fields pages write).
type event struct {
	T     int64  `json:"t"`
	Kind  string `json:"k"`
	Who   string `json:"who,omitempty"`
	Topic string `json:"topic,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	To    int64  `json:"to,omitempty"`
	N     int64  `json:"n,omitempty"`
	Err   string `json:"err,omitempty"`
}

// unacked is internal/soak.Unacked: the demo feed has no publisher acks.
const unacked = 1

// pollEvery is how often each page's updates and state are read (ms
// matter little: the page keeps its last 10,000 to 20,000 seqs).
const pollEvery = 500 * time.Millisecond

// maxFrozen bounds a freeze whatever the runner asks: a lost "thaw"
// must not leave a page frozen to the end (the soak holds 5-40 s).
const maxFrozen = 60 * time.Second

type pageState struct {
	name   string
	b      *e2e.Browser
	mu     sync.Mutex // held around every CDP call on the page
	frozen bool
	thawAt *time.Timer // the maxFrozen backstop
	seen   int         // seqs read so far (seqsDropped included)
	lost   int         // lost entries read so far
	failed bool        // a crash was written
}

type history struct {
	mu    sync.Mutex
	start time.Time
	w     *bufio.Writer
	f     *os.File
	err   error
}

func (h *history) add(e event) {
	if e.T == 0 {
		e.T = max(1, time.Since(h.start).Milliseconds())
	}
	b, err := json.Marshal(e)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return
	}
	if err != nil {
		h.err = fmt.Errorf("failed to encode a page event: %w", err)
		return
	}
	h.w.Write(b)
	if err := h.w.WriteByte('\n'); err != nil {
		h.err = fmt.Errorf("failed to write the pages' history: %w", err)
	}
}

func (h *history) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.w.Flush(); err != nil && h.err == nil {
		h.err = fmt.Errorf("failed to write the pages' history: %w", err)
	}
	if err := h.f.Close(); err != nil && h.err == nil {
		h.err = fmt.Errorf("failed to close the pages' history: %w", err)
	}
	return h.err
}

func main() {
	node := flag.String("node", "", "the node the two tabs load the demo from (http://host:port)")
	proxied := flag.String("proxied", "", "the node the third page reaches through a proxy that refuses upgrades")
	out := flag.String("history", "", "the pages' JSON-lines history file")
	startMs := flag.Int64("start", 0, "the run's start, Unix milliseconds (the history's zero)")
	flag.Parse()
	if err := run(*node, *proxied, *out, *startMs); err != nil {
		fmt.Fprintln(os.Stderr, "soakpages:", err)
		os.Exit(1)
	}
}

func run(node, proxied, out string, startMs int64) error {
	if node == "" || proxied == "" || out == "" || startMs <= 0 {
		return errors.New("failed to start: -node, -proxied, -history and -start are required")
	}
	target, err := url.Parse(proxied)
	if err != nil || target.Host == "" {
		return fmt.Errorf("failed to parse -proxied %q: %v", proxied, err)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("failed to create the pages' history: %w", err)
	}
	h := &history{start: time.UnixMilli(startMs), f: f, w: bufio.NewWriter(f)}
	defer h.close()

	// The proxy that refuses upgrades: 403 to every WebSocket handshake,
	// everything else (the page, its HTTP transport's stream and POSTs)
	// passed on unbuffered.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("failed to listen for the proxy: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	proxy := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "upgrades refused", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go proxy.Serve(ln)
	defer proxy.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := e2e.NewBrowser(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	// The second tab: a new target in the first tab's browser context
	// (same origin, same storage), so the two share one connection.
	tab2, cancelTab2 := chromedp.NewContext(b.Ctx)
	defer cancelTab2()
	if err := chromedp.Do(tab2); err != nil {
		return fmt.Errorf("failed to open the second tab: %w", err)
	}
	other, err := b.NewContext()
	if err != nil {
		return err
	}
	defer other.Close()
	pages := []*pageState{
		{name: "page0", b: b},
		{name: "page1", b: &e2e.Browser{Ctx: tab2}},
		{name: "page2", b: other},
	}
	// The native fleet's backoff cap (3 s, not the library's 30 s), so
	// that a page, like the fleet, is READY within 15 s of the last heal,
	// and its unbounded budget and window (the library's defaults): the
	// demo's 10 attempts are sized for the 30 s cap, and at 3 s a page gave
	// up within one fault (seed 2612, a 30-minute run).
	const q = "/?stage=8&backoffCapMs=3000&budget=0&windowMs=0"
	urls := []string{node + q, node + q, "http://" + ln.Addr().String() + q}
	for i, p := range pages {
		h.add(event{Kind: "sub", Who: p.name, Topic: "feed", N: unacked})
		if err := p.b.Navigate(urls[i]); err != nil {
			return fmt.Errorf("failed to open %s: %w", p.name, err)
		}
	}
	for _, p := range pages {
		if err := e2e.WaitJS(p.b, "window.wsreadyDemo && wsreadyDemo.state && wsreadyDemo.state.ready", 90*time.Second); err != nil {
			return fmt.Errorf("failed to see %s READY: %w", p.name, err)
		}
	}
	via, _ := e2e.Eval[string](pages[2].b, "wsreadyDemo.state.via")
	if via != "http" {
		return fmt.Errorf("failed to hold page2 to HTTP: it runs over %q", via)
	}
	fmt.Println("ready")

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, p := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := time.NewTicker(pollEvery)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
					p.poll(h)
				}
			}
		}()
	}

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch cmd {
		case "freeze", "thaw":
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 || n >= len(pages) {
				fmt.Printf("err %s: no page %q\n", cmd, arg)
				continue
			}
			if err := pages[n].setFrozen(cmd == "freeze"); err != nil {
				fmt.Printf("err %s %d: %v\n", cmd, n, err)
				continue
			}
			fmt.Printf("ok %s %d\n", cmd, n)
		case "final":
			for _, p := range pages {
				p.setFrozen(false)
				p.poll(h)
				// Err says, for a page not READY, the client's own
				// words for its state: enums and counts, no peer text.
				st, err := e2e.Eval[string](p.b, `(() => { const s = window.wsreadyDemo && wsreadyDemo.state; if (!s) return 'no state'; return s.ready ? '' : `+
					"`ended=${s.ended || 'no'} via=${s.via} tabs=${s.tabs} leader=${s.leader} attempt=${s.attempt} transport=${s.transport} protocol=${s.protocol} service=${s.service} lastError=${s.lastError ? s.lastError.class : 'none'}`"+`; })()`)
				n := int64(0)
				if err != nil {
					st = "the page could not be read"
				} else if st == "" {
					n = 1
				}
				h.add(event{Kind: "final", Who: p.name, N: n, Err: st})
			}
			fmt.Println("ok final")
		case "quit":
			cancel()
			wg.Wait()
			if err := h.close(); err != nil {
				fmt.Printf("err quit: %v\n", err)
				return err
			}
			fmt.Println("ok quit")
			return nil
		default:
			fmt.Printf("err unknown command %q\n", cmd)
		}
	}
	return errors.New("failed to read a command: stdin closed before quit")
}

// setFrozen freezes or thaws the page; a freeze thaws itself after
// maxFrozen whatever the runner does.
func (p *pageState) setFrozen(frozen bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == frozen {
		return nil
	}
	state := page.SetWebLifecycleStateStateActive
	if frozen {
		state = page.SetWebLifecycleStateStateFrozen
	}
	ctx, cancel := context.WithTimeout(p.b.Ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state}); err != nil {
		return fmt.Errorf("failed to set the page %s: %w", state, err)
	}
	p.frozen = frozen
	if p.thawAt != nil {
		p.thawAt.Stop()
		p.thawAt = nil
	}
	if frozen {
		p.thawAt = time.AfterFunc(maxFrozen, func() { p.setFrozen(false) })
	}
	return nil
}

// poll reads the seqs and losses the page was handed since the last poll
// and writes them as history events. A frozen page is not read (its
// JavaScript does not run); a page that cannot be read is a crash.
func (p *pageState) poll(h *history) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen || p.failed {
		return
	}
	expr := fmt.Sprintf(`JSON.stringify({d: wsreadyDemo.seqsDropped, s: wsreadyDemo.seqs.slice(Math.max(0, %d - wsreadyDemo.seqsDropped)), l: wsreadyDemo.lost.slice(%d), e: wsreadyDemo.error})`, p.seen, p.lost)
	raw, err := e2e.Eval[string](p.b, expr)
	if err != nil {
		p.failed = true
		h.add(event{Kind: "crash", Who: p.name, Err: "the page could not be read"})
		return
	}
	var v struct {
		D int     `json:"d"`
		S []int64 `json:"s"`
		L []struct {
			Topic string `json:"topic"`
			From  int64  `json:"from"`
			To    int64  `json:"to"`
		} `json:"l"`
		E *string `json:"e"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		p.failed = true
		h.add(event{Kind: "crash", Who: p.name, Err: "the page's state is not JSON"})
		return
	}
	if v.D > p.seen {
		// The page trimmed seqs this poll never read: the history would
		// be cut short without a word, so the run fails instead.
		p.failed = true
		h.add(event{Kind: "crash", Who: p.name, Err: "the page trimmed seqs before they were read"})
		return
	}
	if v.E != nil {
		p.failed = true
		h.add(event{Kind: "crash", Who: p.name, Err: "the page reports an error"})
		return
	}
	for _, l := range v.L {
		if l.Topic == "feed" {
			h.add(event{Kind: "lost", Who: p.name, Topic: "feed", Seq: l.From, To: max(l.From, l.To)})
		}
	}
	p.lost += len(v.L)
	for _, q := range v.S {
		h.add(event{Kind: "upd", Who: p.name, Topic: "feed", Seq: q})
	}
	p.seen += len(v.S)
}
