package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// The write-ups table (wsready sim -tables writeups) puts the figures of
// the incident write-ups this project follows (a ride-dispatch
// system-design answer, an auth-loop page on reconnect storms, a chat
// post-mortem) beside figures made here: by the client's own policies and
// the simulator, or by arithmetic on the server's defaults and the costs
// measured in docs/measured. docs/sim.md says which assumption each row
// rests on.

// WriteupConfig holds every parameter of the write-ups table. Like Config,
// zero is a value, not "use the default" (a zero count or interval is
// refused); DefaultWriteupConfig has the write-ups' scenarios and the
// server's defaults.
type WriteupConfig struct {
	Seed uint64

	// Attempt-N peaks: PeakClients clients, exponential backoff from
	// PeakBase (no cap within reach), the busiest one-second window of
	// attempt PeakAttempt (1 is the first retry) with no jitter, with
	// +-Spread jitter and with full jitter.
	PeakClients int           // 100,000
	PeakBase    time.Duration // 500 ms
	PeakAttempt int           // 5
	Spread      float64       // 0.10: a delay times a uniform factor in [1-Spread, 1+Spread)

	// Lockstep: LockClients clients all try at t=0 against a server that
	// accepts LockCapacity handshakes a second; the first LockWaves waves
	// of exponential backoff without jitter (base 1 s, cap 30 s), beside
	// the busiest second of full jitter after t=0's.
	LockClients  int // 2,000
	LockCapacity int // 20 handshakes a second
	LockWaves    int // 4

	// Heartbeat load at Conns connections: the server's protocol ping
	// every PingInterval, and the liveness sweep's WebSocket ping, which
	// reaches a client that sends nothing else every other SweepInterval.
	// FrameCPU is the measured server CPU per delivered frame.
	Conns         int           // 1,000,000
	PingInterval  time.Duration // server.Options.PingInterval default: 25 s
	SweepInterval time.Duration // server.Options.SweepInterval default: 10 s
	FrameCPU      time.Duration // docs/measured/bench.md, CPU per delivered frame: about 20 µs
	// IdleCores is the server CPU measured for IdleConns idle connections
	// at the default pings, protocol and sweep together (docs/measured/
	// bench.md's idle row: 0.079 cores at 19,500), scaled to Conns.
	IdleConns int     // 19,500
	IdleCores float64 // 0.079

	// Drain of DrainConns connections: the server closes them over
	// DrainWindow and hands each a reconnect slot at 90% of AdmitRate.
	DrainConns  int           // 50,000
	DrainWindow time.Duration // server.Options.DrainWindow default: 10 s
	AdmitRate   float64       // server.Options.AdmitRate default: 500 handshakes a second

	// Polling against push for a day: PollClients clients poll every
	// PollFast or PollSlow with PollBytes a request and its response
	// together, or hold a connection that pushes an update every
	// PushInterval. PushBytes is the write-up's size of a pushed update
	// (as we reconstruct its model); ours is wsready's own frame for a
	// location of PushPayload's JSON, plus its heartbeat.
	PollClients  int           // 100,000
	PollBytes    int           // 1,600 bytes: HTTP request and response headers with a small JSON body
	PollFast     time.Duration // 1 s
	PollSlow     time.Duration // 6 s
	PushInterval time.Duration // 3 s
	PushBytes    int           // 100 bytes
}

// DefaultWriteupConfig has the write-ups' scenarios and the server's
// defaults, seed 1.
func DefaultWriteupConfig() WriteupConfig {
	return WriteupConfig{Seed: 1,
		PeakClients: 100_000, PeakBase: 500 * time.Millisecond, PeakAttempt: 5, Spread: 0.10,
		LockClients: 2000, LockCapacity: 20, LockWaves: 4,
		Conns: 1_000_000, PingInterval: 25 * time.Second, SweepInterval: 10 * time.Second, FrameCPU: 20 * time.Microsecond,
		IdleConns: 19_500, IdleCores: 0.079,
		DrainConns: 50_000, DrainWindow: 10 * time.Second, AdmitRate: 500,
		PollClients: 100_000, PollBytes: 1600, PollFast: time.Second, PollSlow: 6 * time.Second, PushInterval: 3 * time.Second, PushBytes: 100,
	}
}

// Validate refuses a parameter the arithmetic cannot use: a count below 1,
// an interval that is not positive, a spread outside (0, 1).
func (c WriteupConfig) Validate() error {
	switch {
	case c.PeakClients < 1 || c.PeakClients > 10_000_000:
		return errors.New("writeups: peak clients must be between 1 and 10000000")
	case c.PeakBase <= 0:
		return errors.New("writeups: peak base must be positive")
	case c.PeakAttempt < 1 || c.PeakAttempt > 20:
		return errors.New("writeups: peak attempt must be between 1 and 20")
	case !(c.Spread > 0 && c.Spread < 1):
		return errors.New("writeups: spread must be in (0, 1)")
	case c.LockClients < 1 || c.LockClients > 1_000_000 || c.LockCapacity < 0 || c.LockWaves < 1 || c.LockWaves > 20:
		return errors.New("writeups: lockstep needs 1..1000000 clients, a capacity of at least 0 and 1..20 waves")
	case c.Conns < 1 || c.DrainConns < 1 || c.PollClients < 1 || c.IdleConns < 1 || c.IdleCores < 0:
		return errors.New("writeups: connection counts must be at least 1")
	case c.PingInterval <= 0 || c.SweepInterval <= 0 || c.FrameCPU < 0 || c.DrainWindow <= 0 || !(c.AdmitRate > 0):
		return errors.New("writeups: ping and sweep intervals, drain window and admission rate must be positive, frame CPU not negative")
	case c.PollBytes < 1 || c.PushBytes < 1 || c.PollFast <= 0 || c.PollSlow <= 0 || c.PushInterval <= 0:
		return errors.New("writeups: poll and push sizes and intervals must be positive")
	}
	return nil
}

// spreadJitter waits min(cap, base * 2^attempt) times a uniform factor in
// [1-spread, 1+spread): the "+-10%" jitter of the write-ups. The client
// does not ship it (it ships full jitter); it is here only to put the
// write-ups' figure beside.
type spreadJitter struct {
	exp    client.Exponential
	spread float64
}

func (p spreadJitter) Delay(attempt int, prev time.Duration, r float64) time.Duration {
	d := p.exp.Delay(attempt, prev, r)
	return time.Duration(float64(d) * (1 - p.spread + 2*p.spread*r))
}

func (p spreadJitter) String() string {
	return fmt.Sprintf("exponential +-%.0f%% (base %v)", 100*p.spread, p.exp.Base)
}

// PeakRow is one policy's attempt-N figures.
type PeakRow struct {
	Policy string `json:"policy"`
	// InWindow is the busiest one-second window of attempt N, counted from
	// the instant every client failed attempt N-1 together (a fleet in
	// lockstep until then): how the write-ups count it.
	InWindow int `json:"inWindow"`
	// FromDisconnect is the busiest one-second window of attempt N counted
	// from a common disconnect, each client's N delays drawn in turn (the
	// spread of the attempts before adds to it).
	FromDisconnect int `json:"fromDisconnect"`
}

// LockstepRow is the lockstep figures.
type LockstepRow struct {
	Waves       []int `json:"waves"`       // attempts in each busy second of exponential without jitter, from t=0
	WaveSeconds []int `json:"waveSeconds"` // the seconds of those waves
	JitterWaves []int `json:"jitterWaves"` // full jitter: attempts in the same seconds
	JitterPeak  int   `json:"jitterPeak"`  // full jitter: the busiest second after t=0's
}

// WriteupResult is every figure of the write-ups table.
type WriteupResult struct {
	Config   WriteupConfig `json:"config"`
	Peaks    []PeakRow     `json:"peaks"`
	Lockstep LockstepRow   `json:"lockstep"`

	AppPingsPerSecond   float64 `json:"appPingsPerSecond"`   // Conns / PingInterval
	SweepPingsPerSecond float64 `json:"sweepPingsPerSecond"` // Conns / (2 SweepInterval), for clients that send nothing else
	HeartbeatCores      float64 `json:"heartbeatCores"`      // server CPU cores the protocol pings take at FrameCPU each
	IdleCoresAtConns    float64 `json:"idleCoresAtConns"`    // the measured idle CPU scaled to Conns

	DrainClosesPerSecond   float64 `json:"drainClosesPerSecond"`   // DrainConns / DrainWindow
	DrainReturnsPerSecond  float64 `json:"drainReturnsPerSecond"`  // the reconnect slots' rate: 0.9 AdmitRate
	DrainReturnedInSeconds float64 `json:"drainReturnedInSeconds"` // DrainConns at that rate

	PollFastBytesPerDay float64 `json:"pollFastBytesPerDay"`
	PollSlowBytesPerDay float64 `json:"pollSlowBytesPerDay"`
	PushBytesPerDay     float64 `json:"pushBytesPerDay"`     // the write-up's push model: PushBytes every PushInterval
	OursFrameBytes      int     `json:"oursFrameBytes"`      // wsready's update frame for the location, with its WebSocket header
	OursPingBytes       int     `json:"oursPingBytes"`       // wsready's ping frame, with its WebSocket header
	OursPushBytesPerDay float64 `json:"oursPushBytesPerDay"` // our frames every PushInterval and our pings every PingInterval

	// Storm is the field figures of a wsready storm report, when one was
	// given (wsready sim -storm FILE); nil otherwise.
	Storm []StormFigures `json:"storm,omitempty"`
}

// locationJSON is the pushed update of the ours column: a driver's
// position as JSON (id, latitude, longitude, heading, speed, time), the
// fields of the write-up's 40-byte binary record.
const locationJSON = `{"d":48213377,"lat":37.774929,"lng":-122.419416,"h":270,"v":13.4,"t":1764662400}`

// wsHeader is a server-to-client WebSocket frame's header for a payload of
// n bytes: unmasked, 2 bytes up to 125, 4 up to 65,535.
func wsHeader(n int) int {
	switch {
	case n <= 125:
		return 2
	case n <= 65535:
		return 4
	}
	return 10
}

// RunWriteups computes the write-ups table.
func RunWriteups(c WriteupConfig) (WriteupResult, error) {
	if err := c.Validate(); err != nil {
		return WriteupResult{}, err
	}
	res := WriteupResult{Config: c}
	huge := 24 * time.Hour // no cap within reach of the attempts the write-ups count
	exp := client.Exponential{Base: c.PeakBase, Cap: huge}
	for _, p := range []client.Policy{exp, spreadJitter{exp: exp, spread: c.Spread}, client.FullJitter{Base: c.PeakBase, Cap: huge}} {
		draw := newDraw(c.Seed)
		inWindow := map[int64]int{}
		fromStart := map[int64]int{}
		row := PeakRow{Policy: p.String()}
		for range c.PeakClients {
			var t, d time.Duration
			for n := range c.PeakAttempt {
				d = p.Delay(n, d, draw())
				t += d
			}
			inWindow[int64(d/time.Second)]++
			fromStart[int64(t/time.Second)]++
		}
		for _, v := range inWindow {
			row.InWindow = max(row.InWindow, v)
		}
		for _, v := range fromStart {
			row.FromDisconnect = max(row.FromDisconnect, v)
		}
		res.Peaks = append(res.Peaks, row)
	}

	lock := Config{Clients: c.LockClients, Capacity: c.LockCapacity, Horizon: 10 * time.Minute, Seed: c.Seed, FirstAttemptZero: true}
	pp := DefaultPolicyParams()
	// Exponential first: its waves name the seconds full jitter is read at.
	for _, np := range []NamedPolicy{{"exponential", client.Exponential{Base: pp.Base, Cap: pp.Cap}}, {"jitter", client.FullJitter{Base: pp.Base, Cap: pp.Cap}}} {
		r, err := Run(lock, np)
		if err != nil {
			return WriteupResult{}, fmt.Errorf("failed to run the lockstep scenario: %w", err)
		}
		if np.Name == "jitter" {
			for _, s := range res.Lockstep.WaveSeconds {
				res.Lockstep.JitterWaves = append(res.Lockstep.JitterWaves, r.AttemptsPerSecond[s])
			}
			for _, n := range r.AttemptsPerSecond[1:] {
				res.Lockstep.JitterPeak = max(res.Lockstep.JitterPeak, n)
			}
			continue
		}
		for s, n := range r.AttemptsPerSecond {
			if n > 0 && len(res.Lockstep.Waves) < c.LockWaves {
				res.Lockstep.Waves = append(res.Lockstep.Waves, n)
				res.Lockstep.WaveSeconds = append(res.Lockstep.WaveSeconds, s)
			}
		}
	}

	res.AppPingsPerSecond = float64(c.Conns) / c.PingInterval.Seconds()
	res.SweepPingsPerSecond = float64(c.Conns) / (2 * c.SweepInterval.Seconds())
	res.HeartbeatCores = res.AppPingsPerSecond * c.FrameCPU.Seconds()
	res.IdleCoresAtConns = c.IdleCores * float64(c.Conns) / float64(c.IdleConns)

	res.DrainClosesPerSecond = float64(c.DrainConns) / c.DrainWindow.Seconds()
	res.DrainReturnsPerSecond = 0.9 * c.AdmitRate
	res.DrainReturnedInSeconds = float64(c.DrainConns) / res.DrainReturnsPerSecond

	day := (24 * time.Hour).Seconds()
	perDay := func(clients, bytes int, every time.Duration) float64 {
		return float64(clients) * float64(bytes) * day / every.Seconds()
	}
	res.PollFastBytesPerDay = perDay(c.PollClients, c.PollBytes, c.PollFast)
	res.PollSlowBytesPerDay = perDay(c.PollClients, c.PollBytes, c.PollSlow)
	res.PushBytesPerDay = perDay(c.PollClients, c.PushBytes, c.PushInterval)
	frame := len(protocol.Encode(protocol.Message{Type: protocol.TypeUpdate, Topic: "ride.48213377", Seq: 1234567, Data: []byte(locationJSON)}))
	ping := len(protocol.Encode(protocol.Message{Type: protocol.TypePing, IntervalMs: c.PingInterval.Milliseconds()}))
	res.OursFrameBytes, res.OursPingBytes = frame+wsHeader(frame), ping+wsHeader(ping)
	res.OursPushBytesPerDay = perDay(c.PollClients, res.OursFrameBytes, c.PushInterval) + perDay(c.PollClients, res.OursPingBytes, c.PingInterval)
	return res, nil
}

// bytesText writes a daily volume the way the write-ups do: TB or GB,
// decimal.
func bytesText(b float64) string {
	if b >= 1e12 {
		return fmt.Sprintf("%.1f TB", b/1e12)
	}
	return fmt.Sprintf("%.0f GB", b/1e9)
}

// WriteupTable renders the write-ups table as markdown.
func WriteupTable(r WriteupResult) string {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "Write-ups' figures, made here (seed %d). Published figures and assumptions: [docs/sim.md](../sim.md).\n\n", c.Seed)
	fmt.Fprintf(&b, "Attempt %d at %d clients, exponential from %v: the busiest one-second window.\n\n", c.PeakAttempt, c.PeakClients, c.PeakBase)
	b.WriteString("| policy | counted from the previous attempt (lockstep until then) | counted from the disconnect |\n|---|---|---|\n")
	for _, p := range r.Peaks {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", p.Policy, p.InWindow, p.FromDisconnect)
	}
	join := func(v []int) string {
		s := make([]string, len(v))
		for i, w := range v {
			s[i] = fmt.Sprint(w)
		}
		return strings.Join(s, " / ")
	}
	fmt.Fprintf(&b, "\nLockstep: %d clients at t=0, a server taking %d handshakes a second, base 1s, cap 30s. Attempts in the seconds %s: exponential without jitter %s; full jitter %s (its busiest second after t=0: %d).\n\n",
		c.LockClients, c.LockCapacity, join(r.Lockstep.WaveSeconds), join(r.Lockstep.Waves), join(r.Lockstep.JitterWaves), r.Lockstep.JitterPeak)
	b.WriteString("| figure | made here |\n|---|---|\n")
	fmt.Fprintf(&b, "| heartbeat at %d connections: protocol pings a second (every %v) | %.0f |\n", c.Conns, c.PingInterval, r.AppPingsPerSecond)
	fmt.Fprintf(&b, "| the sweep's WebSocket pings a second, clients that send nothing else (every other %v) | %.0f |\n", c.SweepInterval, r.SweepPingsPerSecond)
	fmt.Fprintf(&b, "| server CPU for the protocol pings at %v a frame | %.2f cores |\n", c.FrameCPU, r.HeartbeatCores)
	fmt.Fprintf(&b, "| server CPU for %d idle connections, measured %.3f cores at %d, scaled | %.1f cores |\n", c.Conns, c.IdleCores, c.IdleConns, r.IdleCoresAtConns)
	fmt.Fprintf(&b, "| drain of %d connections: closes a second (over %v) | %.0f |\n", c.DrainConns, c.DrainWindow, r.DrainClosesPerSecond)
	fmt.Fprintf(&b, "| drain: reconnections a second (slots at 90%% of %.0f/s), all back after | %.0f, %.0f s |\n", c.AdmitRate, r.DrainReturnsPerSecond, r.DrainReturnedInSeconds)
	fmt.Fprintf(&b, "| a day of polling every %v (%d clients, %d B an exchange) | %s |\n", c.PollFast, c.PollClients, c.PollBytes, bytesText(r.PollFastBytesPerDay))
	fmt.Fprintf(&b, "| a day of polling every %v | %s |\n", c.PollSlow, bytesText(r.PollSlowBytesPerDay))
	fmt.Fprintf(&b, "| a day of push, %d B every %v | %s (polling %.0fx and %.0fx) |\n", c.PushBytes, c.PushInterval, bytesText(r.PushBytesPerDay),
		r.PollFastBytesPerDay/r.PushBytesPerDay, r.PollSlowBytesPerDay/r.PushBytesPerDay)
	fmt.Fprintf(&b, "| a day of wsready push: a %d B update frame every %v and a %d B ping every %v | %s (polling %.0fx and %.0fx) |\n",
		r.OursFrameBytes, c.PushInterval, r.OursPingBytes, c.PingInterval, bytesText(r.OursPushBytesPerDay),
		r.PollFastBytesPerDay/r.OursPushBytesPerDay, r.PollSlowBytesPerDay/r.OursPushBytesPerDay)
	if len(r.Storm) > 0 {
		b.WriteString("\nField figures from a wsready storm report (real clients and sockets through a Restart):\n\n")
		b.WriteString(StormTable(r.Storm))
	}
	return b.String()
}

// StormFigures are the chat post-mortem's field figures read from one run
// of wsready storm -compare -json (real clients and sockets through a
// Restart): the time until half and 99% of the fleet were READY again, and
// the seconds at or after the server's recovery in which the fleet asked
// for more handshakes than the server admits (storm seconds).
type StormFigures struct {
	Label        string `json:"label"`
	Clients      int    `json:"clients"`
	MedianMs     *int64 `json:"medianMs"` // the end of the first second with half the fleet READY: a bound, to the second
	P99Ms        *int64 `json:"p99Ms"`    // the storm's own 99% READY
	StormSeconds int    `json:"stormSeconds"`
}

// stormFile is what wsready storm -compare -json writes, the fields read
// here.
type stormFile struct {
	Storm []struct {
		Label  string `json:"label"`
		Report struct {
			Clients int    `json:"clients"`
			T99Ms   *int64 `json:"t99Ms"`
			Seconds []struct {
				T        int `json:"t"`
				Attempts int `json:"attempts"`
				Ready    int `json:"ready"`
			} `json:"seconds"`
		} `json:"report"`
	} `json:"storm"`
	AdmitRate  int   `json:"admitRate"`
	DowntimeMs int64 `json:"downtimeMs"`
}

// maxStormFile bounds what ReadStorm reads: a 90 s storm of three runs is
// about 30 KB.
const maxStormFile = 16 << 20

// ReadStorm reads a wsready storm -compare -json file and returns each
// run's field figures.
func ReadStorm(r io.Reader) ([]StormFigures, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxStormFile+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read the storm report: %w", err)
	}
	if len(b) > maxStormFile {
		return nil, fmt.Errorf("failed to read the storm report: larger than %d bytes", maxStormFile)
	}
	var f stormFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("failed to decode the storm report: %w", err)
	}
	if len(f.Storm) == 0 || f.AdmitRate < 1 {
		return nil, errors.New("failed to read the storm report: no runs or no admission rate (is it wsready storm -compare -json?)")
	}
	var out []StormFigures
	for _, run := range f.Storm {
		p := run.Report
		fig := StormFigures{Label: run.Label, Clients: p.Clients, P99Ms: p.T99Ms}
		for _, s := range p.Seconds {
			if fig.MedianMs == nil && 2*s.Ready >= p.Clients {
				v := int64(s.T+1) * 1000
				fig.MedianMs = &v
			}
			if int64(s.T)*1000 >= f.DowntimeMs && s.Attempts > f.AdmitRate {
				fig.StormSeconds++
			}
		}
		out = append(out, fig)
	}
	return out, nil
}

// StormTable renders the storm's field figures as markdown.
func StormTable(fs []StormFigures) string {
	var b strings.Builder
	b.WriteString("| run | clients | half READY again within | 99% READY again after | storm seconds (attempts above the admission rate after recovery) |\n|---|---|---|---|---|\n")
	for _, f := range fs {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d |\n", f.Label, f.Clients, at(f.MedianMs), at(f.P99Ms), f.StormSeconds)
	}
	return b.String()
}
