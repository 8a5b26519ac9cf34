//go:build !js

// Package storm drives a fleet of real clients (the client core over the
// native driver, one per simulated user) against a real server on
// loopback, breaks the server (Restart or a drain) and measures, per
// second, the handshakes the server saw and the clients that were READY.
// It is the real-socket counterpart of package sim.
package storm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/sim"
)

// Config is one storm. Every field is a flag of wsready storm.
type Config struct {
	URL      string        // the server's WebSocket URL (ws://127.0.0.1:port/ws); its /api must be in -demo mode
	Clients  int           // 1..20000
	Stage    int           // the clients' stage, 0..stages.Max
	Trigger  string        // "restart", "drain" or "none"
	Settle   time.Duration // how long the fleet stays READY before the trigger
	Duration time.Duration // how long to watch after the trigger (it stops early once every client is READY for 3 s)
	Sources  int           // spread the clients over this many source addresses 127.0.0.2.. (ephemeral ports per address)
	Connect  time.Duration // how long the fleet may take to be READY at the start
	Seed     uint64
	// RecoverAt is when the server accepts again after the trigger (the
	// Restart downtime): PeakAfterRecovery counts from there.
	RecoverAt time.Duration
	Logf      func(string, ...any) // progress; nil: silent

	// Tokens gives every client a token hook that fetches a ticket from
	// the server's POST /api/token (a server with -auth and tickets
	// issued to anyone: -demo or -issue-tickets), a client id of its own
	// each, through its source address. Default false: no tokens.
	Tokens bool
	// Mint, if set, makes the tickets in this process (a ticket for the
	// client id) instead of POST /api/token: the server then spends
	// nothing on issuing them, and its CPU is the connection side's alone.
	Mint func(id string) (string, error)
	// NoInBandRefresh turns the clients' in-band refresh off (with
	// Tokens): each token's expiry is then a 4001 and a reconnect.
	NoInBandRefresh bool
	// Watch keeps watching for the whole Duration even once every client
	// is READY (a run with no trigger, counting what expiries cost).
	Watch bool
	// AtTrigger and AtEnd, if set, are called when the trigger is pulled
	// and when the watch ends (before the clients close): a caller reads
	// the server's CPU time there.
	AtTrigger, AtEnd func()
}

// Second is what one second after the trigger looked like.
type Second struct {
	T        int `json:"t"`        // seconds after the trigger
	Attempts int `json:"attempts"` // handshakes the server counted in [t, t+1)
	Ready    int `json:"ready"`    // clients READY at t+1
}

// Report is a storm's outcome.
type Report struct {
	Clients       int      `json:"clients"`
	Stage         int      `json:"stage"`
	Trigger       string   `json:"trigger"`
	Slots         *bool    `json:"slots,omitempty"` // as the server reported it, if it did
	ConnectMs     int64    `json:"connectMs"`       // the fleet's first READY, from the start
	Seconds       []Second `json:"seconds"`
	T99Ms         *int64   `json:"t99Ms"`  // 99% READY again, after the trigger; nil: not within the duration
	T100Ms        *int64   `json:"t100Ms"` // all READY again
	Attempts      int      `json:"attempts"`
	PeakSecond    int      `json:"peakSecond"`
	PeakAttempts  int      `json:"peakAttempts"`
	PeakAfter     int      `json:"peakAfterRecovery"` // the busiest second at or after RecoverAt
	AttemptsPer   float64  `json:"attemptsPerClient"`
	ReadyAtEnd    int      `json:"readyAtEnd"`
	TriggerAtUnix int64    `json:"triggerAtUnixMs"`
	// The clients' own recoveries after the trigger: each time a client
	// was READY again, how long it had been without READY (what its core
	// puts in Stats.RecoveryP50/P99 and in its readiness report), as
	// nearest-rank quantiles over the fleet, in milliseconds.
	Recoveries    int     `json:"recoveries"`
	RecoveryP50Ms float64 `json:"recoveryP50Ms"`
	RecoveryP99Ms float64 `json:"recoveryP99Ms"`
	// RecoveryTimes are those durations, in the order they ended, for a
	// caller that pools several storms (not in the JSON: one per client).
	RecoveryTimes []time.Duration `json:"-"`
	// With Tokens, from the clients' own counts over the whole run: the
	// 4001s they were closed with (each a forced token and a reconnect),
	// and the in-band refreshes the server took.
	Expiries  int `json:"expiries"`
	Refreshes int `json:"refreshes"`
}

// Quantile is the nearest-rank q-quantile (0 < q <= 1) of ds, 0 for none.
// ds is sorted in place.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func (c Config) validate() error {
	switch {
	case c.Clients < 1 || c.Clients > 20000:
		return errors.New("storm: clients must be 1..20000")
	case c.Stage < 0 || c.Stage > stages.Max:
		return fmt.Errorf("storm: stage must be 0..%d", stages.Max)
	case c.Trigger != "restart" && c.Trigger != "drain" && c.Trigger != "none":
		return errors.New("storm: trigger must be restart, drain or none")
	case c.Duration <= 0 || c.Connect <= 0 || c.Settle < 0:
		return errors.New("storm: duration and connect must be positive, settle not negative")
	case c.Sources < 1 || c.Sources > 250:
		return errors.New("storm: sources must be 1..250")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return errors.New("storm: url must be a ws:// URL")
	}
	return nil
}

// fleet counts READY clients.
type fleet struct {
	ready   atomic.Int64
	clients []*native.Client

	mu         sync.Mutex
	armed      bool            // after the trigger: recoveries count
	recoveries []time.Duration // bounded by Clients times the recoveries each makes in Duration
}

// recovered notes a client READY again after d without READY.
func (f *fleet) recovered(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed {
		f.recoveries = append(f.recoveries, d)
	}
}

// Run starts the fleet, waits until it is READY, pulls the trigger and
// watches. It closes every client before it returns.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	api := apiBase(cfg.URL)
	rep := Report{Clients: cfg.Clients, Stage: cfg.Stage, Trigger: cfg.Trigger}
	f := &fleet{}
	defer f.close()
	rng := rand.New(rand.NewPCG(cfg.Seed, 7))
	transports := make([]*http.Client, cfg.Sources)
	for i := range transports {
		d := &net.Dialer{Timeout: 10 * time.Second}
		if cfg.Sources > 1 {
			d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		}
		transports[i] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: -1}}
	}
	start := time.Now()
	for i := range cfg.Clients {
		cc, err := stages.Config(cfg.Stage, nil)
		if err != nil {
			return rep, err
		}
		cc.NoInBandRefresh = cfg.NoInBandRefresh
		var mu sync.Mutex
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		cc.Rand = func() float64 { mu.Lock(); defer mu.Unlock(); return r.Float64() }
		var token func(context.Context, bool) (string, error)
		if cfg.Tokens {
			token = ticketHook(transports[i%cfg.Sources], api, "storm-"+strconv.Itoa(i))
			if cfg.Mint != nil {
				id := "storm-" + strconv.Itoa(i)
				token = func(context.Context, bool) (string, error) { return cfg.Mint(id) }
			}
		}
		var was bool
		var lost time.Time // when this client last left READY
		c, err := native.Dial(ctx, cfg.URL, &native.Options{Config: &cc, Token: token,
			DialOptions: &websocket.DialOptions{HTTPClient: transports[i%cfg.Sources]},
			OnState: func(s client.State) {
				if s.Ready != was {
					was = s.Ready
					if s.Ready {
						f.ready.Add(1)
						if !lost.IsZero() {
							f.recovered(time.Since(lost))
						}
					} else {
						f.ready.Add(-1)
						lost = time.Now()
					}
				}
			}})
		if err != nil {
			return rep, err
		}
		f.clients = append(f.clients, c)
	}
	logf("storm: %d clients started; waiting for READY", cfg.Clients)
	if !waitFor(ctx, cfg.Connect, func() bool { return f.ready.Load() == int64(cfg.Clients) }) {
		return rep, fmt.Errorf("storm: only %d of %d clients READY within %v", f.ready.Load(), cfg.Clients, cfg.Connect)
	}
	rep.ConnectMs = time.Since(start).Milliseconds()
	logf("storm: all READY after %v; settling %v", time.Since(start).Round(time.Millisecond), cfg.Settle)
	time.Sleep(cfg.Settle)

	before, slots, err := handshakes(api)
	if err != nil {
		return rep, err
	}
	rep.Slots = slots
	f.mu.Lock()
	f.armed = true
	f.mu.Unlock()
	trigger := time.Now()
	rep.TriggerAtUnix = trigger.UnixMilli()
	if cfg.AtTrigger != nil {
		cfg.AtTrigger()
	}
	switch cfg.Trigger {
	case "restart":
		err = post(api+"/faults", `{"restart":true}`)
	case "drain":
		err = post(api+"/drain", `{}`)
	}
	if err != nil {
		return rep, err
	}
	logf("storm: %s at %s", cfg.Trigger, trigger.Format(time.TimeOnly))
	need99 := int64((cfg.Clients*99 + 99) / 100)
	last := before
	readySince := time.Time{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	sec := 0
	for {
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-tick.C:
		}
		el := time.Since(trigger)
		ready := f.ready.Load()
		if rep.T99Ms == nil && ready >= need99 && el > 500*time.Millisecond {
			v := el.Milliseconds()
			rep.T99Ms = &v
		}
		if rep.T100Ms == nil && ready == int64(cfg.Clients) && el > 500*time.Millisecond {
			v := el.Milliseconds()
			rep.T100Ms = &v
		}
		if el >= time.Duration(sec+1)*time.Second {
			n, _, err := handshakes(api)
			if err != nil {
				return rep, err
			}
			rep.Seconds = append(rep.Seconds, Second{T: sec, Attempts: int(n - last), Ready: int(ready)})
			last = n
			logf("storm: t=%ds attempts %d ready %d", sec, rep.Seconds[sec].Attempts, ready)
			sec++
			if ready == int64(cfg.Clients) && rep.T100Ms != nil {
				if readySince.IsZero() {
					readySince = time.Now()
				}
			} else {
				readySince = time.Time{}
			}
			if el >= cfg.Duration || (!cfg.Watch && !readySince.IsZero() && time.Since(readySince) >= 3*time.Second) {
				break
			}
		}
	}
	if cfg.AtEnd != nil {
		cfg.AtEnd()
	}
	for _, c := range f.clients {
		st := c.Stats()
		rep.Expiries += st.TokenRefreshes
		rep.Refreshes += st.Refreshes
	}
	for _, s := range rep.Seconds {
		rep.Attempts += s.Attempts
		if s.Attempts > rep.PeakAttempts {
			rep.PeakAttempts, rep.PeakSecond = s.Attempts, s.T
		}
		if time.Duration(s.T)*time.Second >= cfg.RecoverAt {
			rep.PeakAfter = max(rep.PeakAfter, s.Attempts)
		}
	}
	rep.AttemptsPer = float64(rep.Attempts) / float64(cfg.Clients)
	rep.ReadyAtEnd = int(f.ready.Load())
	f.mu.Lock()
	rep.RecoveryTimes = slices.Clone(f.recoveries)
	f.mu.Unlock()
	rep.Recoveries = len(rep.RecoveryTimes)
	sorted := slices.Clone(rep.RecoveryTimes)
	rep.RecoveryP50Ms = float64(Quantile(sorted, 0.50)) / float64(time.Millisecond)
	rep.RecoveryP99Ms = float64(Quantile(sorted, 0.99)) / float64(time.Millisecond)
	return rep, nil
}

func (f *fleet) close() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for _, c := range f.clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.Close()
		}()
	}
	wg.Wait()
}

func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func apiBase(wsURL string) string {
	u, _ := url.Parse(wsURL)
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path = "/api"
	u.RawQuery = ""
	return u.String()
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

// handshakes reads the server's handshake counter (since start).
func handshakes(api string) (uint64, *bool, error) {
	resp, err := apiClient.Get(api + "/stats?connections=false")
	if err != nil {
		return 0, nil, fmt.Errorf("storm: failed to read stats: %w", err)
	}
	defer resp.Body.Close()
	var st struct {
		Handshakes uint64 `json:"handshakes"`
		Slots      *bool  `json:"slots"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, nil, fmt.Errorf("storm: failed to read stats: %w", err)
	}
	return st.Handshakes, st.Slots, nil
}

func post(u, body string) error {
	resp, err := apiClient.Post(u, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return fmt.Errorf("storm: failed to trigger: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("storm: trigger refused with %s (is the server in -demo mode?)", resp.Status)
	}
	return nil
}

// ticketHook fetches a ticket for id from the demo server's POST
// /api/token through hc, as a page's hook does from its app. It caches
// nothing: the core asks only when it needs a token.
func ticketHook(hc *http.Client, api, id string) func(context.Context, bool) (string, error) {
	body := `{"clientId":"` + id + `"}`
	return func(ctx context.Context, _ bool) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/token", strings.NewReader(body))
		if err != nil {
			return "", fmt.Errorf("storm: failed to ask for a ticket: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return "", fmt.Errorf("storm: failed to ask for a ticket: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			io.Copy(io.Discard, resp.Body)
			return "", fmt.Errorf("storm: failed to get a ticket: %s", resp.Status)
		}
		var v struct{ Token string }
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<10)).Decode(&v); err != nil {
			return "", fmt.Errorf("storm: failed to read a ticket: %w", err)
		}
		return v.Token, nil
	}
}

// Row is a labelled report, for Table.
type Row struct {
	Label  string `json:"label"`
	Report Report `json:"report"`
}

func msText(p *int64) string {
	if p == nil {
		return "not within the run"
	}
	return fmt.Sprintf("%.1f s", float64(*p)/1000)
}

// Table renders storms as markdown.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| run | clients | peak attempts/s after recovery | peak attempts/s overall (second) | total attempts | attempts per client | 99% READY after | all READY after |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p := r.Report
		fmt.Fprintf(&b, "| %s | %d | %d | %d (t=%d s) | %d | %.2f | %s | %s |\n", r.Label, p.Clients, p.PeakAfter, p.PeakAttempts, p.PeakSecond, p.Attempts, p.AttemptsPer, msText(p.T99Ms), msText(p.T100Ms))
	}
	return b.String()
}

// SimTable renders the simulator's prediction in the same columns.
func SimTable(rows []sim.SessionRow) string {
	var b strings.Builder
	b.WriteString("| run | clients | peak attempts/s after recovery | peak attempts/s overall | total attempts | attempts per client | 99% connected at | all connected at |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p := r.Result
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.2f | %s | %s |\n", r.Label, p.Clients, p.PeakAfterRecovery, p.PeakOverall, p.Attempts, p.AttemptsPerClient, msText(p.T99Ms), msText(p.T100Ms))
	}
	return b.String()
}
