//go:build !js

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wsready/wsready/server"
	"github.com/wsready/wsready/storm"
)

// refreshCompare is wsready storm -refresh-compare: the same fleet three
// times, each against a fresh wsready serve (a process of its own, -auth
// required), watched for cfg.Duration with no trigger: with tickets that
// outlive the watch (the baseline: idle connections), then with tickets of
// life, in-band refresh on, then off. It reports the handshakes the server
// counted in the watch (with refresh off, the expiries' reconnects), the
// clients' own counts of 4001s and refreshes, the server process's CPU
// time in the watch, and that CPU above the baseline per refresh or per
// 4001 and reconnect.
func refreshCompare(ctx context.Context, cfg storm.Config, life time.Duration) (string, map[string]any, error) {
	if life < time.Second {
		return "", nil, fmt.Errorf("storm: -ticket-life must be at least 1s")
	}
	// The tickets are minted here with the servers' key, so that the
	// servers' CPU is the connections' side alone: an application issues
	// its tokens elsewhere (its login, an identity provider).
	dir, err := os.MkdirTemp("", "wsready-refresh")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	raw := make([]byte, 32)
	rand.Read(raw)
	key := []byte(hex.EncodeToString(raw))
	keyFile := filepath.Join(dir, "auth.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return "", nil, err
	}
	type row struct {
		Label    string       `json:"label"`
		LifeMs   int64        `json:"ticketLifeMs"`
		Refresh  bool         `json:"refresh"`
		Report   storm.Report `json:"report"`
		CPUMs    int64        `json:"serverCpuMs"` // the serve process's user+system CPU in the watch
		RSSKiB   int64        `json:"serverRssKiB"`
		PerEvent float64      `json:"serverCpuMsPerEvent"` // above the baseline, per refresh or per 4001 and reconnect
	}
	runs := []struct {
		label string
		life  time.Duration
		on    bool
	}{
		{"baseline: tickets outliving the watch (" + (cfg.Duration * 12).String() + ")", cfg.Duration * 12, true},
		{"in-band refresh on", life, true},
		{"in-band refresh off (4001 and a reconnect per token)", life, false},
	}
	var rows []row
	for _, r := range runs {
		minter, err := server.New(&server.Options{AuthKey: key, TicketLife: r.life, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return "", nil, err
		}
		url, pid, stop, err := startAuthServe(r.life, keyFile)
		if err != nil {
			minter.Close()
			return "", nil, err
		}
		cc := cfg
		cc.URL, cc.Trigger, cc.Watch, cc.Tokens, cc.NoInBandRefresh = url, "none", true, true, !r.on
		cc.Mint = func(id string) (string, error) {
			tok, _, err := minter.IssueTicket(server.Identity{User: id})
			return tok, err
		}
		var cpu0, cpu1, rss int64
		cc.AtTrigger = func() { cpu0, _ = procCPU(pid) }
		cc.AtEnd = func() { cpu1, rss = procCPU(pid) }
		fmt.Fprintf(os.Stderr, "storm: %s, %d clients, %v tickets, %v\n", r.label, cc.Clients, r.life, cc.Duration)
		rep, err := storm.Run(ctx, cc)
		stop()
		minter.Close()
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", r.label, err)
		}
		rows = append(rows, row{Label: r.label, LifeMs: r.life.Milliseconds(), Refresh: r.on, Report: rep, CPUMs: cpu1 - cpu0, RSSKiB: rss})
	}
	base := rows[0].CPUMs
	for i := 1; i < len(rows); i++ {
		if n := rows[i].Report.Refreshes + rows[i].Report.Expiries; n > 0 {
			rows[i].PerEvent = float64(rows[i].CPUMs-base) / float64(n)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| run | clients | handshakes in the %v watch | 4001s the clients saw | in-band refreshes | server CPU in the watch | above the baseline, per refresh or per 4001 and reconnect | server RSS at the end | READY at the end |\n|---|---|---|---|---|---|---|---|---|\n", cfg.Duration)
	for i, r := range rows {
		p := r.Report
		per := "-"
		if i > 0 {
			per = fmt.Sprintf("%.3f ms", r.PerEvent)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f s | %s | %.0f MiB | %d |\n", r.Label, p.Clients, p.Attempts, p.Expiries, p.Refreshes,
			float64(r.CPUMs)/1000, per, float64(r.RSSKiB)/1024, p.ReadyAtEnd)
	}
	return b.String(), map[string]any{"ticketLifeMs": life.Milliseconds(), "durationMs": cfg.Duration.Milliseconds(), "rows": rows}, nil
}

// startAuthServe runs this binary's serve on a free loopback port with
// tickets required, signed with the key in keyFile, living life (its demo
// /api/token issues them to anyone, with no rate limit that 5,000 clients
// on 16 addresses would trip).
func startAuthServe(life time.Duration, keyFile string) (string, int, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(self, "serve", "-demo", "-addr", addr, "-auth", "required", "-auth-key-file", keyFile, "-ticket-life", life.String(),
		"-ticket-rate", "100000", "-ticket-burst", "100000", "-admit-rate", "1000", "-admit-burst", "200",
		"-tenant-rate", "100000", "-tenant-burst", "100000", "-max-conns", "20000", "-max-conns-per-ip", "20000",
		"-rejection-threshold", "1000", "-ping", "25s", "-feed", "10s")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", 0, nil, fmt.Errorf("storm: the server did not start on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "ws://" + addr + "/ws", cmd.Process.Pid, stop, nil
}

// procCPU reads a process's user+system CPU time (ms) and resident set
// (KiB) from /proc (Linux; zeros elsewhere).
func procCPU(pid int) (cpuMs, rssKiB int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 22 {
		return 0, 0
	}
	// f[0] is field 3 (state): utime is field 14, stime 15, rss 24 (pages).
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	pages, _ := strconv.ParseInt(f[21], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return (ut + st) * 1000 / hz, pages * int64(os.Getpagesize()) / 1024
}
