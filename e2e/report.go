//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Report is what make measure writes to docs/measured/measurements.json.
type Report struct {
	Date     string `json:"date"`
	Command  string `json:"command"`
	Go       string `json:"go"`
	Chromium string `json:"chromium"`
	CPUs     int    `json:"cpus"`
	Plan     string `json:"plan"`
	Rows     []Row  `json:"rows"`
}

// NewReport fills in the environment.
func NewReport(plan Plan, rows []Row) Report {
	chromium := "unknown"
	if p, err := ChromiumPath(); err == nil {
		if out, err := exec.Command(p, "--version").Output(); err == nil {
			chromium = strings.TrimSpace(string(out))
		}
	}
	return Report{
		Date: time.Now().UTC().Format(time.RFC3339), Command: "make measure",
		Go: runtime.Version(), Chromium: chromium, CPUs: runtime.NumCPU(),
		Plan: fmt.Sprintf("freeze %v, service down %v, flapping %v, offline %v, short tokens %v, revoke %v, end session %v, overload %v; the demo server (ping 1 s, as make run passes it; slow replies 8 s, restart downtime 4 s, tickets 10 min or 5 s with Short tokens, overload retry-after 5 s), auth optional",
			plan.Freeze, plan.ServiceDown, plan.Flapping, plan.Offline, plan.ShortTokens, plan.Revoke, plan.EndSession, plan.Overload),
		Rows: rows,
	}
}

func ms(p *int64) string {
	if p == nil {
		return "never"
	}
	return fmt.Sprintf("%.1f s", float64(*p)/1000)
}

func num(p *int) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprint(*p)
}

func (r Row) ran(scenario string) bool { return slices.Contains(r.Ran, scenario) }

// ranOr returns v, or "-" for a scenario this run skipped (the CI subset
// skips some).
func (r Row) ranOr(scenario, v string) string {
	if !slices.Contains(r.Ran, scenario) {
		return "-"
	}
	return v
}

// Table renders the rows as the SPEC's markdown table plus the extra
// scenarios' columns.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| stage | Freeze detected after | Service outage detected after | Data after service recovery | Server-side connections after a 12 s Freeze | Connection attempts during 15 s of Flapping | Time to READY after Restart | Slow replies | Attempts while offline 10 s | READY after online |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		or := r.ranOr
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Stage,
			or("freeze", ms(r.FreezeDetectedMs)), or("serviceDown", ms(r.ServiceOutageDetectedMs)),
			or("serviceDown", ms(r.DataAfterRecoveryMs)), or("freeze", num(r.ConnectionsAfterFreeze)),
			or("flapping", num(r.FlappingAttempts)), or("restart", ms(r.ReadyAfterRestartMs)),
			or("slowReplies", r.SlowReply), or("offline", num(r.OfflineAttempts)), or("offline", ms(r.ReadyAfterOnlineMs)))
	}
	return b.String()
}

// LossTable renders the updates lost and duplicated per scenario.
func LossTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| stage | Freeze: lost (checked) / duplicates | Flapping: lost (checked) / duplicates | Restart: lost (checked) / duplicates |\n")
	b.WriteString("|---|---|---|---|\n")
	cell := func(ran bool, l *Loss) string {
		switch {
		case !ran:
			return "not run"
		case l == nil:
			return "n/a"
		}
		return fmt.Sprintf("%d (%d) / %d of %d", l.Lost, l.Checked, l.Duplicates, l.Span)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", r.Stage, cell(r.ran("freeze"), r.LossFreeze),
			cell(r.ran("flapping"), r.LossFlapping), cell(r.ran("restart"), r.LossRestart))
	}
	return b.String()
}

// FreezeSamplesTable renders the freeze detection samples: median and
// worst over the short freezes at random phases.
func FreezeSamplesTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| stage | freezes | median time to leave READY | worst | all (ms) |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		if len(r.FreezeSamplesMs) == 0 {
			continue
		}
		s := slices.Clone(r.FreezeSamplesMs)
		slices.Sort(s)
		fmt.Fprintf(&b, "| %d | %d | %.2f s | %.2f s | %v |\n", r.Stage, len(s), float64(s[len(s)/2])/1000, float64(s[len(s)-1])/1000, r.FreezeSamplesMs)
	}
	return b.String()
}

// SessionTable renders the session switches' columns.
func SessionTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| stage | Handshakes during Short tokens (token refreshes) | Attempts after Revoke | Attempts after End session | Shortest gap between attempts under Overload (dials) | Terminal states reached |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range rows {
		or := r.ranOr
		secs := func(ms int64) string { return fmt.Sprintf("%.0f s", float64(ms)/1000) }
		ended := strings.Join(r.Ended, ", ")
		if ended == "" {
			ended = "none"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", r.Stage,
			or("shortTokens", fmt.Sprintf("%s in %s (%s)", num(r.ShortTokensHandshakes), secs(r.ShortTokensWindowMs), num(r.ShortTokensRefreshes))),
			or("revoke", fmt.Sprintf("%s in %s", num(r.RevokeAttempts), secs(r.RevokeWindowMs))),
			or("endSession", fmt.Sprintf("%s in %s", num(r.EndSessionAttempts), secs(r.EndSessionWindowMs))),
			or("overload", fmt.Sprintf("%s (%s)", gap(r.OverloadMinGapMs), num(r.OverloadDials))), ended)
	}
	return b.String()
}

func gap(p *int64) string {
	if p == nil {
		return "fewer than 2 attempts"
	}
	return ms(p)
}

// Write saves docs/measured/measurements.md and docs/measured/measurements.json.
func (rep Report) Write(dir string) error {
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(dir+"/measurements.json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	md.WriteString("# Measurements: every stage against every failure, in a real browser\n\n")
	fmt.Fprintf(&md, "Made by `%s` on %s: %s, %s, %d CPUs. One fresh server and one fresh headless Chromium per stage; the scenarios run in sequence on one page, as a person clicks through the demo. Connection counts are the server's own.\n\n", rep.Command, rep.Date, rep.Go, rep.Chromium, rep.CPUs)
	fmt.Fprintf(&md, "Plan: %s.\n\n", rep.Plan)
	md.WriteString(Table(rep.Rows))
	md.WriteString("\n")
	md.WriteString(SessionTable(rep.Rows))
	md.WriteString("\nUpdates of the feed lost and delivered twice across each scenario. \"lost\" is the client's own gap accounting (missedUpdates); \"checked\" counts, from the server's seqs, the ones between the page's last seq before the scenario and its last after it that the page never delivered; \"of N\" is how many the server published meanwhile (the feed pauses while frozen). Stage 7 resumes from its cursor: both must be 0.\n\n")
	md.WriteString(LossTable(rep.Rows))
	// The page-load and stage 8 sections are TestMeasureLoad's and
	// TestMeasureStage8's: kept as they are when this test runs alone.
	if prev, err := os.ReadFile(dir + "/measurements.md"); err == nil {
		if kept := keptSections(string(prev)); kept != "" {
			md.WriteString("\n" + kept)
		}
	}
	md.WriteString("\nFreeze detection over short freezes, one in each of as many equal slices of the 1 s ping cycle (at a random point within it). Stages 2-5: a watchdog of two intervals from the last frame, and any frame from the server is proof of life, so with the feed every 250 ms the silence starts at most 250 ms before the freeze and detection sits just under 2 s. Stage 6 and up probe on the ping schedule, 1.25 intervals after the last ping, and give up 0.25 s later: 0.5 to 1.5 s after the freeze by the ping's phase, 1 s on average (a frame pushes the probe on only once a ping is overdue):\n\n")
	md.WriteString(FreezeSamplesTable(rep.Rows))
	md.WriteString("\n\"never\" means the event did not happen within the scenario's window (the freeze itself; 10 s after service recovery). The same figures, in milliseconds with null for never, are in measurements.json. docs/stages.md explains each column's result.\n")
	return os.WriteFile(dir+"/measurements.md", []byte(md.String()), 0o644)
}

// The sections of docs/measured/measurements.md that TestMeasureLoad and
// TestMeasureStage8 write, between these markers; TestMeasure rewrites
// the rest of the file and keeps them.
const (
	loadBegin   = "<!-- page load to READY: begin (TestMeasureLoad) -->"
	loadEnd     = "<!-- page load to READY: end -->"
	stage8Begin = "<!-- stage 8: begin (TestMeasureStage8) -->"
	stage8End   = "<!-- stage 8: end -->"
	// TestMeasureNetFaults's (linux only: it needs network namespaces).
	netFaultsBegin = "<!-- real network faults: begin (TestMeasureNetFaults) -->"
	netFaultsEnd   = "<!-- real network faults: end -->"
	// TestMeasureNetFaultRequests's (linux only, as TestMeasureNetFaults).
	netFaultRequestsBegin = "<!-- a request into a blackhole: begin (TestMeasureNetFaultRequests) -->"
	netFaultRequestsEnd   = "<!-- a request into a blackhole: end -->"
	// TestMeasureProxyIdle's (the proxies' 60 s read timeout).
	proxyIdleBegin = "<!-- idle through proxies: begin (TestMeasureProxyIdle) -->"
	proxyIdleEnd   = "<!-- idle through proxies: end -->"
)

// keptSections returns the sections of a measurements.md that other tests
// write (between their markers), each followed by a blank line, in the
// order of the markers' consts.
func keptSections(prev string) string {
	var b strings.Builder
	for _, m := range [][2]string{{loadBegin, loadEnd}, {stage8Begin, stage8End}, {netFaultsBegin, netFaultsEnd}, {netFaultRequestsBegin, netFaultRequestsEnd}, {proxyIdleBegin, proxyIdleEnd}} {
		i, j := strings.Index(prev, m[0]), strings.Index(prev, m[1])
		if i >= 0 && j > i {
			b.WriteString(prev[i:j+len(m[1])] + "\n\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// writeSection puts section between the markers begin and end in the
// file at path: in place of the last run's, else after the last of the
// other tests' sections there, else before the freeze samples, else at
// the end. The rest of the file is kept as it is.
func writeSection(path, begin, end, section string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", path, err)
	}
	s := string(old)
	block := begin + "\n" + strings.TrimSpace(section) + "\n" + end + "\n"
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + block + strings.TrimPrefix(s[j+len(end):], "\n")
	} else if k := afterLastSection(s); k >= 0 {
		s = s[:k] + "\n" + block + s[k:]
	} else if k := strings.Index(s, "\nFreeze detection over short freezes"); k >= 0 {
		s = s[:k+1] + block + s[k:]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + block
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// afterLastSection is where the last of the other tests' sections in
// s ends (after its end marker's line), or -1 when none is there.
func afterLastSection(s string) int {
	k := -1
	for _, end := range []string{loadEnd, stage8End, netFaultsEnd, netFaultRequestsEnd, proxyIdleEnd} {
		if i := strings.Index(s, end+"\n"); i >= 0 {
			k = max(k, i+len(end)+1)
		}
	}
	return k
}
