package soak

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Fault kinds the nemesis draws from.
const (
	KillNode  = "kill-node"  // SIGKILL a node; restart it after Hold
	KillNATS  = "kill-nats"  // SIGKILL one NATS server; restart it after Hold
	DrainNode = "drain-node" // SIGTERM a node (it drains); restart it Hold after it exits
	ResetNode = "reset-node" // reset every TCP connection to a node (ss -K)
	Blackhole = "blackhole"  // drop every packet to and from a node's port, both ways, for Hold (iptables)
	Burst     = "burst"      // a topic's publisher sends BurstSize publishes at once
	// The demo's switches on one node, turned off after Hold (restart
	// is an action: the node's own downtime).
	Freeze      = "freeze"
	ServiceDown = "serviceDown"
	Flapping    = "flapping"
	Restart     = "restart"
	Jitter      = "jitter"
	Overload    = "overload"
	// PageFreeze freezes one Chromium page (CDP Page.setWebLifecycleState
	// frozen) for Hold, then makes it active again: what Chromium does to a
	// background tab. One page at a time; drawn only when Plan.Pages > 0.
	PageFreeze = "page-freeze"
)

// Kinds is every fault kind, in the order the nemesis draws from.
var Kinds = []string{KillNode, KillNATS, DrainNode, ResetNode, Blackhole, Burst, Freeze, ServiceDown, Flapping, Restart, Jitter, Overload, PageFreeze}

// BurstSize is how many publishes a burst sends back to back.
const BurstSize = 100

// Fault is one entry of the nemesis's schedule.
type Fault struct {
	At     time.Duration // from the start of the run
	Kind   string
	Target int           // the node's or NATS server's index; the topic's for a burst
	Hold   time.Duration // how long before it is healed (0: nothing to heal)
}

func (f Fault) String() string {
	return fmt.Sprintf("%6.1fs %-11s target %d hold %v", f.At.Seconds(), f.Kind, f.Target, f.Hold)
}

// Plan is what Schedule draws over: the run's length, its cluster and
// the kinds it may use.
type Plan struct {
	Seed   uint64
	Length time.Duration // the whole run
	Warmup time.Duration // no fault before (the steady state is measured then)
	Quiet  time.Duration // every fault healed this long before the end
	Nodes  int
	NATS   int
	Topics int
	Pages  int      // Chromium pages; 0: none, and no page-freeze drawn
	Kinds  []string // default Kinds (without PageFreeze when Pages is 0)
	MinGap time.Duration
	MaxGap time.Duration
}

// holdRange is how long each kind holds, drawn uniformly.
func holdRange(kind string) (time.Duration, time.Duration) {
	switch kind {
	case KillNode:
		return time.Second, 5 * time.Second
	case KillNATS:
		return 2 * time.Second, 10 * time.Second
	case DrainNode:
		return time.Second, 3 * time.Second
	case Blackhole:
		return 5 * time.Second, 60 * time.Second
	case Freeze, ServiceDown, Flapping, Jitter, Overload:
		return 5 * time.Second, 20 * time.Second
	case PageFreeze:
		return 5 * time.Second, 40 * time.Second
	}
	return 0, 0
}

// category is what a fault occupies: a NATS server, a node down, a node
// switched, a page, or nothing (a burst). At most one NATS server and one
// node down at once keeps a majority of NATS servers and two of three
// nodes up; one page frozen at a time keeps a page to read.
func category(kind string) string {
	switch kind {
	case KillNATS:
		return "nats"
	case KillNode, DrainNode, Blackhole:
		return "down"
	case Burst:
		return "burst"
	case PageFreeze:
		return "page"
	}
	return "node"
}

// Schedule draws the nemesis's faults from p.Seed: one every MinGap to
// MaxGap after Warmup, each healed by Length-Quiet. Faults may overlap
// (a node killed while another is frozen), but never two on one target,
// never two NATS servers or two nodes down at once, never two pages frozen. The same plan gives
// the same schedule.
func Schedule(p Plan) ([]Fault, error) {
	if p.Length <= 0 || p.Warmup < 0 || p.Quiet < 0 || p.Warmup+p.Quiet >= p.Length {
		return nil, fmt.Errorf("soak: a run of %v cannot hold a %v warmup and a %v quiet end", p.Length, p.Warmup, p.Quiet)
	}
	if p.Nodes < 2 || p.NATS < 3 || p.Topics < 1 {
		return nil, fmt.Errorf("soak: the schedule needs at least 2 nodes, 3 NATS servers and a topic (have %d, %d, %d)", p.Nodes, p.NATS, p.Topics)
	}
	if p.MinGap <= 0 || p.MaxGap < p.MinGap {
		return nil, fmt.Errorf("soak: fault gaps %v..%v", p.MinGap, p.MaxGap)
	}
	if p.Pages < 0 {
		return nil, fmt.Errorf("soak: %d pages", p.Pages)
	}
	kinds := p.Kinds
	if len(kinds) == 0 {
		// Without pages the kinds (and so a seed's schedule) are those
		// of a soak before pages existed.
		for _, k := range Kinds {
			if k != PageFreeze || p.Pages > 0 {
				kinds = append(kinds, k)
			}
		}
	}
	for _, k := range kinds {
		if !known(k) {
			return nil, fmt.Errorf("soak: unknown fault kind %q (known: %s)", k, strings.Join(Kinds, ", "))
		}
		if k == PageFreeze && p.Pages == 0 {
			return nil, fmt.Errorf("soak: fault kind %s needs pages", k)
		}
	}
	rng := rand.New(rand.NewPCG(p.Seed, 0x50a4))
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	end := p.Length - p.Quiet
	// until[category][target] is when that target is free again.
	until := map[string]map[int]time.Duration{}
	var out []Fault
	for at := p.Warmup + between(p.MinGap, p.MaxGap); at < end; at += between(p.MinGap, p.MaxGap) {
		for try := 0; try < 8; try++ {
			kind := kinds[rng.IntN(len(kinds))]
			cat := category(kind)
			n := p.Nodes
			switch cat {
			case "nats":
				n = p.NATS
			case "burst":
				n = p.Topics
			case "page":
				n = p.Pages
			}
			// At most one NATS server and one node down at once; a node
			// takes one fault at a time (down or a switch).
			free := make([]int, 0, n)
			anyBusy := false
			for t := 0; t < n; t++ {
				var ok bool
				switch cat {
				case "burst":
					ok = true
				case "nats", "page":
					ok = until[cat][t] <= at
				default:
					ok = until["down"][t] <= at && until["node"][t] <= at
				}
				if until[cat][t] > at {
					anyBusy = true
				}
				if ok {
					free = append(free, t)
				}
			}
			if (cat == "nats" || cat == "down" || cat == "page") && anyBusy || len(free) == 0 {
				continue
			}
			target := free[rng.IntN(len(free))]
			lo, hi := holdRange(kind)
			hold := between(lo, hi)
			if at+hold > end {
				hold = end - at
			}
			if until[cat] == nil {
				until[cat] = map[int]time.Duration{}
			}
			until[cat][target] = at + hold + time.Second
			out = append(out, Fault{At: at, Kind: kind, Target: target, Hold: hold})
			break
		}
	}
	return out, nil
}

func known(kind string) bool {
	for _, k := range Kinds {
		if k == kind {
			return true
		}
	}
	return false
}
