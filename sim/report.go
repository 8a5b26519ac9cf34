package sim

import (
	"fmt"
	"strings"

	"github.com/wsready/wsready/internal/chart"
)

// Table renders the base scenario's results as markdown.
func Table(cfg Config, rs []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Base scenario: %d clients lose their connection at t=0; the server refuses everything for %v, then accepts at most %d handshakes per second; horizon %v; seed %d.\n\n",
		cfg.Clients, cfg.Downtime, cfg.Capacity, cfg.Horizon, cfg.Seed)
	b.WriteString("| policy | peak attempts/s after recovery | peak attempts/s overall | total attempts | rejected | attempts per client | 99% connected at | all connected at (or connected at horizon) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f | %s | %s |\n", r.Description, r.PeakAfterRecovery, r.PeakOverall,
			r.Attempts, r.Rejected, r.AttemptsPerClient, at(r.T99Ms), all(r))
	}
	return b.String()
}

func at(ms *int64) string {
	if ms == nil {
		return "not within the horizon"
	}
	return fmt.Sprintf("%.1f s", float64(*ms)/1000)
}

func all(r Result) string {
	if r.T100Ms != nil {
		return at(r.T100Ms)
	}
	return fmt.Sprintf("%d of %d connected at the horizon", r.ConnectedAtHorizon, r.Clients)
}

// SessionRow is one row of the stage 6 table: a label and its result.
type SessionRow struct {
	Label  string `json:"label"`
	Result Result `json:"result"`
}

// SessionTable renders what stage 6's rules do to the base scenario.
func SessionTable(cfg Config, rows []SessionRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Stage 6 rules in the base scenario (%d clients, %v down, %d/s, %s): the server's refusals carry a retry-after or not, the clients have an attempt budget or not.\n\n",
		cfg.Clients, cfg.Downtime, cfg.Capacity, rows[0].Result.Description)
	b.WriteString("| clients | peak attempts/s after recovery | total attempts | attempts per client | 99% connected at | all connected at (or connected at horizon) | gave up |\n|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		r := row.Result
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %s | %s | %d |\n", row.Label, r.PeakAfterRecovery, r.Attempts, r.AttemptsPerClient, at(r.T99Ms), all(r), r.GaveUp)
	}
	return b.String()
}

// FlapTable renders the second table.
func FlapTable(cfg FlapConfig, rs []FlapResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Flapping: the server accepts every handshake and closes it %v later; %d clients over %v; seed %d. Connections per minute, per client (and for the fleet).\n\n",
		cfg.CloseAfter, cfg.Clients, cfg.Horizon, cfg.Seed)
	fmt.Fprintf(&b, "| policy | backoff resets on open | backoff resets after %v of READY |\n|---|---|---|\n", cfg.Cooldown)
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.1f (%.0f) | %.1f (%.0f) |\n", r.Policy, r.PerMinuteResetOnOpen, r.FleetPerMinuteResetOnOpen,
			r.PerMinuteResetOnReady, r.FleetPerMinuteResetOnReady)
	}
	return b.String()
}

func Charts(cfg Config, rs []Result) (attempts, connected string) {
	var a, c []chart.Series
	for _, r := range rs {
		a = append(a, chart.Series{Name: r.Policy, Values: r.AttemptsPerSecond})
		c = append(c, chart.Series{Name: r.Policy, Values: r.ConnectedPerSecond})
	}
	attempts = chart.Line(fmt.Sprintf("Connection attempts per second (%d clients, server down %v, then %d/s)", cfg.Clients, cfg.Downtime, cfg.Capacity),
		"attempts per second (log scale)", a, cfg.Capacity, fmt.Sprintf("capacity %d/s", cfg.Capacity), true)
	connected = chart.Line(fmt.Sprintf("Connected clients over time (seed %d)", cfg.Seed), "clients connected", c, cfg.Clients, "whole fleet", false)
	return attempts, connected
}
