//go:build !js

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wsready/wsready/sim"
	"github.com/wsready/wsready/storm"
)

func runStorm(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("storm", flag.ContinueOnError)
	var cfg storm.Config
	fs.StringVar(&cfg.URL, "url", "", "the server's WebSocket URL (a wsready serve -demo); with -compare the command starts its own servers")
	fs.IntVar(&cfg.Clients, "clients", 1000, "clients in this process (1..20000)")
	fs.IntVar(&cfg.Stage, "stage", 6, "the clients' stage")
	fs.StringVar(&cfg.Trigger, "trigger", "restart", "restart, drain or none")
	fs.DurationVar(&cfg.Settle, "settle", 2*time.Second, "READY this long before the trigger")
	fs.DurationVar(&cfg.Duration, "duration", 90*time.Second, "watch this long after the trigger (stops 3 s after every client is READY again)")
	fs.IntVar(&cfg.Sources, "sources", 16, "source addresses 127.0.0.2.. to spread the clients over (ephemeral ports are per address)")
	fs.DurationVar(&cfg.Connect, "connect", 2*time.Minute, "how long the fleet may take to be READY at the start")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed for the clients' jitter")
	fs.DurationVar(&cfg.RecoverAt, "recover-at", 0, "when the server accepts again after the trigger (its Restart downtime): the peak after recovery counts from there")
	jsonOut := fs.String("json", "", "write the report(s) as JSON to this file")
	compare := fs.Bool("compare", false, "run the headline comparison: stage 5, stage 6 without slots, stage 6 with slots, each against a fresh server this command starts, beside the simulator's prediction")
	mdOut := fs.String("md", "", "with -compare: write the markdown table to this file")
	rate := fs.Int("admit-rate", 500, "with -compare: the servers' admission rate (handshakes per second)")
	downtime := fs.Duration("restart-downtime", 10*time.Second, "with -compare: the servers' Restart downtime")
	verbose := fs.Bool("v", false, "log each second")
	refresh := fs.Bool("refresh-compare", false, "run the token comparison instead: the fleet with tickets of -ticket-life for -duration, with in-band refresh and without, each against a fresh serve -auth required, no trigger")
	ticketLife := fs.Duration("ticket-life", time.Minute, "with -refresh-compare: the tickets' life")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("storm: unexpected argument %q", fs.Arg(0))
	}
	if *verbose {
		cfg.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *refresh {
		md, js, err := refreshCompare(ctx, cfg, *ticketLife)
		if err != nil {
			return err
		}
		md = fmt.Sprintf("# Token expiries: in-band refresh against a reconnect per token\n\nMade by `wsready storm -refresh-compare -clients %d -ticket-life %v -duration %v` on %s (%d CPUs).\n\n", cfg.Clients, *ticketLife, cfg.Duration,
			time.Now().UTC().Format("2006-01-02"), numCPU()) + md
		fmt.Fprint(stdout, md)
		if *mdOut != "" {
			if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
				return err
			}
		}
		return writeJSON(*jsonOut, js)
	}
	if !*compare {
		if cfg.URL == "" {
			return fmt.Errorf("storm: -url is required (or -compare)")
		}
		rep, err := storm.Run(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, storm.Table([]storm.Row{{Label: fmt.Sprintf("stage %d", cfg.Stage), Report: rep}}))
		return writeJSON(*jsonOut, rep)
	}
	if *rate < 1 || *downtime <= 0 {
		return fmt.Errorf("storm: -admit-rate must be at least 1 and -restart-downtime positive")
	}
	cases := []struct {
		label string
		stage int
		slots bool
	}{
		{"stage 5 (full jitter; ignores slots)", 5, true},
		{"stage 6, server without slots", 6, false},
		{"stage 6, server with slots", 6, true},
	}
	var rows []storm.Row
	for _, c := range cases {
		url, stopServer, err := startServe(*rate, *downtime, c.slots)
		if err != nil {
			return err
		}
		cc := cfg
		cc.URL, cc.Stage, cc.RecoverAt = url, c.stage, *downtime
		fmt.Fprintf(os.Stderr, "storm: %s, %d clients\n", c.label, cc.Clients)
		rep, err := storm.Run(ctx, cc)
		stopServer()
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		rows = append(rows, storm.Row{Label: c.label, Report: rep})
	}
	// The simulator's prediction for the same fleet, with the same client code.
	sc := sim.Config{Clients: cfg.Clients, Capacity: *rate, Downtime: *downtime, Horizon: cfg.Duration, Seed: cfg.Seed}
	jitter, _ := sim.PolicyByName("jitter", sim.DefaultPolicyParams())
	var predicted []sim.SessionRow
	for _, c := range cases {
		s := sc
		s.Session, s.Slots = c.stage == 6, c.slots
		r, err := sim.Run(s, jitter)
		if err != nil {
			return err
		}
		predicted = append(predicted, sim.SessionRow{Label: c.label, Result: r})
	}
	md := fmt.Sprintf("# Storm: %d real clients through a Restart\n\nMade by `wsready storm -compare -clients %d -admit-rate %d -restart-downtime %v` on %s (%d CPUs): "+
		"for each row a fresh `wsready serve -demo` (admission %d/s, Restart downtime %v, ping 2 s, feed 10 s) and %d clients in one process "+
		"(the client core over the native driver, spread over %d source addresses), READY for %v, then Restart. Attempts are the server's own handshake count; "+
		"times are from the Restart.\n\n", cfg.Clients, cfg.Clients, *rate, *downtime, time.Now().UTC().Format("2006-01-02"), numCPU(), *rate, *downtime, cfg.Clients, cfg.Sources, cfg.Settle)
	md += storm.Table(rows)
	md += "\nThe simulator's prediction for the same fleet (`wsready sim` with the same clients, capacity and downtime; the same client code):\n\n"
	md += storm.SimTable(predicted)
	md += agreement(rows, predicted)
	fmt.Fprint(stdout, md)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			return err
		}
	}
	return writeJSON(*jsonOut, map[string]any{"storm": rows, "sim": predicted, "admitRate": *rate, "downtimeMs": downtime.Milliseconds()})
}

// startServe runs this binary's serve on a free loopback port for a storm.
func startServe(rate int, downtime time.Duration, slots bool) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self, "serve", "-demo", "-addr", addr, "-admit-rate", strconv.Itoa(rate), "-admit-burst", strconv.Itoa(max(1, rate/10)),
		"-tenant-rate", "100000", "-tenant-burst", "100000", "-max-conns", "20000", "-max-conns-per-ip", "20000",
		"-restart-downtime", downtime.String(), "-ping", "2s", "-feed", "10s", "-slots="+strconv.FormatBool(slots))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
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
			return "", nil, fmt.Errorf("storm: the server did not start on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "ws://" + addr + "/ws", stop, nil
}

func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, strings.Count(string(b), "processor\t:"))
}

// agreement says how far the storm and the simulator are apart on the two
// figures they are compared on: time to 99% READY and the peak second after
// recovery.
func agreement(rows []storm.Row, predicted []sim.SessionRow) string {
	var b strings.Builder
	b.WriteString("\nStorm against prediction (storm / simulator - 1):\n\n| run | 99% READY | peak second after recovery |\n|---|---|---|\n")
	for i, r := range rows {
		p := predicted[i].Result
		ratio := func(a, b float64) string {
			if b == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%+.0f%%", (a/b-1)*100)
		}
		t99 := "n/a"
		if r.Report.T99Ms != nil && p.T99Ms != nil {
			t99 = ratio(float64(*r.Report.T99Ms), float64(*p.T99Ms))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Label, t99, ratio(float64(r.Report.PeakAfter), float64(p.PeakAfterRecovery)))
	}
	return b.String()
}
