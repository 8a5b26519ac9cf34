//go:build !js

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/wsready/wsready/storm"
)

// refreshCompare is wsready storm -refresh-compare: the same fleet with
// tickets of life lifetime, once with in-band refresh and once without,
// each against a fresh wsready serve (a process of its own, -auth
// required), watched for cfg.Duration with no trigger. It reports the
// handshakes the server counted in the watch (with refresh off, the
// expiries' reconnects), the clients' own counts of 4001s and refreshes,
// and the server process's CPU time in the watch.
func refreshCompare(ctx context.Context, cfg storm.Config, life time.Duration) (string, map[string]any, error) {
	if life < time.Second {
		return "", nil, fmt.Errorf("storm: -ticket-life must be at least 1s")
	}
	type row struct {
		Label     string       `json:"label"`
		Refresh   bool         `json:"refresh"`
		Report    storm.Report `json:"report"`
		CPUMs     int64        `json:"serverCpuMs"` // the serve process's user+system CPU in the watch
		RSSKiB    int64        `json:"serverRssKiB"`
		PerExpiry float64      `json:"serverCpuMsPerTokenLifetime"`
	}
	var rows []row
	for _, on := range []bool{true, false} {
		label := "in-band refresh on"
		if !on {
			label = "in-band refresh off (4001 and a reconnect per token)"
		}
		url, pid, stop, err := startAuthServe(life)
		if err != nil {
			return "", nil, err
		}
		cc := cfg
		cc.URL, cc.Trigger, cc.Watch, cc.Tokens, cc.NoInBandRefresh = url, "none", true, true, !on
		var cpu0, cpu1, rss int64
		cc.AtTrigger = func() { cpu0, _ = procCPU(pid) }
		cc.AtEnd = func() { cpu1, rss = procCPU(pid) }
		fmt.Fprintf(os.Stderr, "storm: %s, %d clients, %v tickets, %v\n", label, cc.Clients, life, cc.Duration)
		rep, err := storm.Run(ctx, cc)
		stop()
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", label, err)
		}
		lifetimes := float64(cc.Clients) * cc.Duration.Seconds() / life.Seconds()
		rows = append(rows, row{Label: label, Refresh: on, Report: rep, CPUMs: cpu1 - cpu0, RSSKiB: rss, PerExpiry: float64(cpu1-cpu0) / lifetimes})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| run | clients | handshakes in the %v watch | 4001s the clients saw | in-band refreshes | server CPU in the watch | server CPU per token lifetime | READY at the end |\n|---|---|---|---|---|---|---|---|\n", cfg.Duration)
	for _, r := range rows {
		p := r.Report
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f s | %.2f ms | %d |\n", r.Label, p.Clients, p.Attempts, p.Expiries, p.Refreshes,
			float64(r.CPUMs)/1000, r.PerExpiry, p.ReadyAtEnd)
	}
	return b.String(), map[string]any{"ticketLifeMs": life.Milliseconds(), "durationMs": cfg.Duration.Milliseconds(), "rows": rows}, nil
}

// startAuthServe runs this binary's serve on a free loopback port with
// tickets required, issued by its demo /api/token to anyone (no rate
// limit that 5,000 clients on 16 addresses would trip), living life.
func startAuthServe(life time.Duration) (string, int, func(), error) {
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
	cmd := exec.Command(self, "serve", "-demo", "-addr", addr, "-auth", "required", "-ticket-life", life.String(),
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
