package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/wsready/wsready/client"
)

// TokenConfig is the token-expiry scenario: Clients hold connections whose
// tokens live Life, first issued uniformly over Spread (0: all at t=0, a
// fleet that connected together after a restart or a deploy), watched
// for Horizon. The server accepts every handshake and refresh; what the
// table shows is what expiries cost, not a storm.
type TokenConfig struct {
	Clients int           // 1..10,000,000
	Life    time.Duration // a token's life, 1s..24h
	Spread  time.Duration // the first tokens are issued over [0, Spread); 0: all at t=0
	Horizon time.Duration // simulated time, 1s..24h
	Seed    uint64
}

// TokenResult is one row: refresh in band, or a 4001 and a reconnect per
// token. Handshakes count the reconnects expiries caused; refreshes the
// in-band refreshes (a frame on the live connection each).
type TokenResult struct {
	Clients        int     `json:"clients"`
	LifeMs         int64   `json:"lifeMs"`
	SpreadMs       int64   `json:"spreadMs"`
	HorizonMs      int64   `json:"horizonMs"`
	Refresh        bool    `json:"refresh"`
	Handshakes     int     `json:"handshakes"`
	PeakHandshakes int     `json:"peakHandshakesPerSecond"`
	MeanHandshakes float64 `json:"meanHandshakesPerSecond"`
	Refreshes      int     `json:"refreshes"`
	PeakRefreshes  int     `json:"peakRefreshesPerSecond"`
}

func (c TokenConfig) validate() error {
	switch {
	case c.Clients < 1 || c.Clients > 10_000_000:
		return errors.New("clients must be between 1 and 10000000")
	case c.Life < time.Second || c.Life > 24*time.Hour:
		return errors.New("token life must be between 1s and 24h")
	case c.Spread < 0:
		return errors.New("spread must not be negative")
	case c.Horizon < time.Second || c.Horizon > 24*time.Hour:
		return errors.New("horizon must be between 1s and 24h")
	}
	return nil
}

// RunTokens runs the scenario. Each client's refresh point is the
// client's own (client.RefreshPoint, drawn per token); its fresh token is
// issued at the refresh (or, without refresh, at the reconnect that
// follows the 4001 at once), so the next lifetime starts there. Round
// trips are not modelled: they shift each event by milliseconds.
func RunTokens(c TokenConfig, refresh bool) (TokenResult, error) {
	if err := c.validate(); err != nil {
		return TokenResult{}, fmt.Errorf("failed to run the token scenario: %w", err)
	}
	secs := int(c.Horizon / time.Second)
	hs := make([]int32, secs)
	rf := make([]int32, secs)
	rng := rand.New(rand.NewPCG(c.Seed, 39))
	for range c.Clients {
		issued := time.Duration(rng.Float64() * float64(c.Spread))
		for {
			at := issued + c.Life
			if refresh {
				at = issued + client.RefreshPoint(c.Life, rng.Float64())
			}
			if at >= c.Horizon {
				break
			}
			if refresh {
				rf[at/time.Second]++
			} else {
				hs[at/time.Second]++
			}
			issued = at
		}
	}
	r := TokenResult{Clients: c.Clients, LifeMs: c.Life.Milliseconds(), SpreadMs: c.Spread.Milliseconds(), HorizonMs: c.Horizon.Milliseconds(), Refresh: refresh}
	for i := range secs {
		r.Handshakes += int(hs[i])
		r.Refreshes += int(rf[i])
		r.PeakHandshakes = max(r.PeakHandshakes, int(hs[i]))
		r.PeakRefreshes = max(r.PeakRefreshes, int(rf[i]))
	}
	r.MeanHandshakes = float64(r.Handshakes) / float64(secs)
	return r, nil
}

// TokenTable renders token rows as markdown.
func TokenTable(rows []TokenResult) string {
	var b strings.Builder
	b.WriteString("| clients | token life | first tokens issued over | in-band refresh | handshakes from expiry | peak handshakes/s | mean handshakes/s | refreshes | peak refreshes/s |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		on := "off"
		if r.Refresh {
			on = "on"
		}
		fmt.Fprintf(&b, "| %d | %v | %v | %s | %d | %d | %.0f | %d | %d |\n", r.Clients, time.Duration(r.LifeMs)*time.Millisecond,
			time.Duration(r.SpreadMs)*time.Millisecond, on, r.Handshakes, r.PeakHandshakes, r.MeanHandshakes, r.Refreshes, r.PeakRefreshes)
	}
	return b.String()
}
