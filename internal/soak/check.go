package soak

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Rules the checker holds a history to, named in its violations.
const (
	RuleDuplicate   = "duplicate"    // an update handed to a client twice
	RuleOrder       = "order"        // seqs of one topic not increasing at a client
	RuleData        = "data"         // an acknowledged seq delivered with other data
	RulePhantom     = "phantom"      // data delivered that no publisher sent
	RuleMissing     = "missing"      // an acknowledged publish neither delivered nor reported lost
	RuleLostWrong   = "lost-wrong"   // a continuity_lost range holding a seq the client was handed
	RuleUnsettled   = "unsettled"    // a request that never settled, or only by the runner's own deadline
	RuleNotReady    = "not-ready"    // a client not READY 15 s after the last fault healed
	RuleCrash       = "crash"        // a panic, a race report, or a process that exited unasked
	RuleResources   = "resources"    // RSS or goroutines past the bound of their steady state
	RuleAckTwice    = "ack-twice"    // one seq acknowledged for two publishes
	RuleUnknownSubs = "unknown-subs" // an update for a topic the client never subscribed to
)

// Bounds are the checker's limits.
type Bounds struct {
	// ReadyWithin is how long after the last fault healed every client
	// must be READY again (15 s).
	ReadyWithin int64 // ms
	// RSSFactor and RSSSlack bound a process's RSS: at most
	// RSSFactor x its steady state + RSSSlack bytes (2x + 64 MiB).
	RSSFactor float64
	RSSSlack  int64
	// GorFactor and GorSlack bound its goroutines likewise (2x + 2,000).
	GorFactor float64
	GorSlack  int64
}

// DefaultBounds are the soak's bounds.
func DefaultBounds() Bounds {
	return Bounds{ReadyWithin: 15_000, RSSFactor: 2, RSSSlack: 64 << 20, GorFactor: 2, GorSlack: 2000}
}

// Violation is one broken promise: when, which rule, whose.
type Violation struct {
	T      int64
	Rule   string
	Who    string
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("t=%.3fs %s %s: %s", float64(v.T)/1000, v.Rule, v.Who, v.Detail)
}

// maxViolationsPerRule bounds what a result keeps of one rule (the rest
// are counted).
const maxViolationsPerRule = 20

// Result is what the checker found.
type Result struct {
	Violations []Violation     // the first maxViolationsPerRule of each rule, by time
	Count      map[string]int  // every violation, by rule
	Updates    int64           // updates handed to clients
	Acks       int64           // acknowledged publishes
	PubFails   int64           // failed publishes
	Lost       int64           // seqs reported lost to clients
	Requests   int64           // requests sent
	Clients    int             // clients that subscribed
	Faults     []FaultRecovery // each fault and how long the fleet took
	Skips      []Event         // fault kinds the machine could not make
	Steady     map[string][2]int64
	Peak       map[string][2]int64
	LastHealMs int64
	ReadyMs    int64 // the first time after LastHealMs with every client READY; -1 never
}

// FaultRecovery is one fault and the fleet's recovery from it: the time
// from the fault's start until every client was READY again (0: none
// left READY), or Open when the next fault came first.
type FaultRecovery struct {
	T        int64
	Fault    string
	Who      string
	Recovery int64 // ms
	Open     bool  // not recovered before the next fault started
	MaxDown  int64 // the most clients not READY at once
}

// OK says whether the history held every promise.
func (r *Result) OK() bool { return len(r.Violations) == 0 }

// First is the earliest violation, or nil.
func (r *Result) First() *Violation {
	if len(r.Violations) == 0 {
		return nil
	}
	return &r.Violations[0]
}

// CheckFile checks the history at path, reading it twice (a 30-minute
// run's history is hundreds of megabytes: it is streamed, not held).
func CheckFile(path string, b Bounds) (*Result, error) {
	return check(func(f func(Event) error) error {
		fh, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("failed to open the history: %w", err)
		}
		defer fh.Close()
		return scan(fh, f)
	}, b)
}

// CheckEvents checks a history held in memory.
func CheckEvents(events []Event, b Bounds) (*Result, error) {
	return check(func(f func(Event) error) error {
		for _, e := range events {
			if err := f(e); err != nil {
				return err
			}
		}
		return nil
	}, b)
}

// scan calls f for each event of r, failing on a damaged line.
func scan(r io.Reader, f func(Event) error) error {
	return eachLine(r, func(_ int, e Event) error { return f(e) })
}

type topicKey struct{ who, topic string }

// seqSet is a growable bitmap of seqs.
type seqSet []uint64

func (s *seqSet) has(q int64) bool {
	i := int(q >> 6)
	return q >= 0 && i < len(*s) && (*s)[i]&(1<<(q&63)) != 0
}

func (s *seqSet) add(q int64) {
	if q < 0 {
		return
	}
	i := int(q >> 6)
	for len(*s) <= i {
		*s = append(*s, 0)
	}
	(*s)[i] |= 1 << (q & 63)
}

// maxSeq bounds the seqs the checker tracks (a bitmap per client and
// topic): a history with a seq past it is refused, not checked in part.
const maxSeq = 1 << 24

var errSeqRange = errors.New("soak: a seq outside 1..16777216 in the history")

func check(each func(func(Event) error) error, b Bounds) (*Result, error) {
	r := &Result{Count: map[string]int{}, Steady: map[string][2]int64{}, Peak: map[string][2]int64{}, ReadyMs: -1}
	add := func(v Violation) {
		r.Count[v.Rule]++
		if r.Count[v.Rule] <= maxViolationsPerRule {
			r.Violations = append(r.Violations, v)
		}
	}

	// Pass 1: what was published, subscribed, lost, asked and done.
	acks := map[string]map[int64]string{}      // topic -> seq -> data
	ackedAt := map[string]map[int64]int64{}    // topic -> seq -> when
	ackedData := map[string]map[string]int64{} // topic -> data -> seq
	failed := map[string]map[string]bool{}     // topic -> data
	since := map[topicKey]int64{}
	unacked := map[topicKey]bool{}
	lost := map[topicKey][][2]int64{}
	reqs := map[string]map[int64]int64{} // who -> id -> t sent
	var faults []Event
	var fleet []Event
	samples := map[string][]Event{}
	finals := map[string]bool{}
	finalWhy := map[string]string{} // a final's Err: the client's state when not READY
	var lastHeal int64
	err := each(func(e Event) error {
		switch e.Kind {
		case KindAck:
			if e.Seq < 1 || e.Seq >= maxSeq {
				return errSeqRange
			}
			if acks[e.Topic] == nil {
				acks[e.Topic], ackedData[e.Topic] = map[int64]string{}, map[string]int64{}
			}
			if prev, dup := acks[e.Topic][e.Seq]; dup && prev != e.Data {
				add(Violation{T: e.T, Rule: RuleAckTwice, Who: e.Who, Detail: fmt.Sprintf("%s seq %d acknowledged for %q and for %q", e.Topic, e.Seq, prev, e.Data)})
			}
			acks[e.Topic][e.Seq] = e.Data
			if ackedAt[e.Topic] == nil {
				ackedAt[e.Topic] = map[int64]int64{}
			}
			ackedAt[e.Topic][e.Seq] = e.T
			ackedData[e.Topic][e.Data] = e.Seq
			r.Acks++
		case KindPubFail:
			if failed[e.Topic] == nil {
				failed[e.Topic] = map[string]bool{}
			}
			failed[e.Topic][e.Data] = true
			r.PubFails++
		case KindSub:
			k := topicKey{e.Who, e.Topic}
			if _, ok := since[k]; !ok {
				since[k] = e.Seq
			}
			if e.N == Unacked {
				unacked[k] = true
			}
		case KindLost:
			k := topicKey{e.Who, e.Topic}
			lost[k] = append(lost[k], [2]int64{e.Seq, e.To})
			r.Lost += max(0, e.To-e.Seq+1)
		case KindReq:
			if reqs[e.Who] == nil {
				reqs[e.Who] = map[int64]int64{}
			}
			reqs[e.Who][e.ID] = e.T
			r.Requests++
		case KindSettle:
			if _, ok := reqs[e.Who][e.ID]; !ok {
				return fmt.Errorf("soak: request %d of %s settled but was never sent", e.ID, e.Who)
			}
			delete(reqs[e.Who], e.ID)
			if e.Err == "late" {
				add(Violation{T: e.T, Rule: RuleUnsettled, Who: e.Who, Detail: "request " + strconv.FormatInt(e.ID, 10) + " was ended by the runner's deadline, not by the client's own"})
			}
		case KindFault:
			faults = append(faults, e)
			lastHeal = max(lastHeal, e.T)
		case KindHeal:
			lastHeal = max(lastHeal, e.T)
		case KindFleet:
			fleet = append(fleet, e)
		case KindSample:
			samples[e.Who] = append(samples[e.Who], e)
		case KindCrash:
			add(Violation{T: e.T, Rule: RuleCrash, Who: e.Who, Detail: e.Err})
		case KindFinal:
			finals[e.Who] = e.N == 1
			finalWhy[e.Who] = e.Err
		case KindSkip:
			r.Skips = append(r.Skips, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for who, m := range reqs {
		for id, t := range m {
			add(Violation{T: t, Rule: RuleUnsettled, Who: who, Detail: "request " + strconv.FormatInt(id, 10) + " never settled"})
		}
	}

	// Pass 2: every update against what was published.
	delivered := map[topicKey]*seqSet{}
	last := map[topicKey]int64{}
	// An Unacked subscription's first seq and the time of its last update:
	// with no acknowledgements to hold it to, its stream is held to
	// itself, every seq from its first to its last delivered or lost.
	firstSeq := map[topicKey]int64{}
	lastAt := map[topicKey]int64{}
	err = each(func(e Event) error {
		if e.Kind != KindUpdate {
			return nil
		}
		if e.Seq < 1 || e.Seq >= maxSeq {
			return errSeqRange
		}
		r.Updates++
		k := topicKey{e.Who, e.Topic}
		if _, ok := since[k]; !ok {
			add(Violation{T: e.T, Rule: RuleUnknownSubs, Who: e.Who, Detail: "an update of " + e.Topic + ", never subscribed"})
			return nil
		}
		set := delivered[k]
		if set == nil {
			set = &seqSet{}
			delivered[k] = set
		}
		switch {
		case set.has(e.Seq):
			add(Violation{T: e.T, Rule: RuleDuplicate, Who: e.Who, Detail: fmt.Sprintf("%s seq %d handed over a second time", e.Topic, e.Seq)})
		case e.Seq <= last[k]:
			add(Violation{T: e.T, Rule: RuleOrder, Who: e.Who, Detail: fmt.Sprintf("%s seq %d after seq %d", e.Topic, e.Seq, last[k])})
		}
		set.add(e.Seq)
		last[k] = max(last[k], e.Seq)
		if unacked[k] {
			if f, ok := firstSeq[k]; !ok || e.Seq < f {
				firstSeq[k] = e.Seq
			}
			lastAt[k] = e.T
			return nil
		}
		if want, ok := acks[e.Topic][e.Seq]; ok {
			if want != e.Data {
				add(Violation{T: e.T, Rule: RuleData, Who: e.Who, Detail: fmt.Sprintf("%s seq %d delivered as %q, acknowledged as %q", e.Topic, e.Seq, e.Data, want)})
			}
		} else if q, ok := ackedData[e.Topic][e.Data]; ok {
			add(Violation{T: e.T, Rule: RuleData, Who: e.Who, Detail: fmt.Sprintf("%s seq %d delivered %q, acknowledged as seq %d", e.Topic, e.Seq, e.Data, q)})
		} else if !failed[e.Topic][e.Data] {
			add(Violation{T: e.T, Rule: RulePhantom, Who: e.Who, Detail: fmt.Sprintf("%s seq %d: %q was never published", e.Topic, e.Seq, e.Data)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Every acknowledged publish, for every client subscribed through it.
	keys := make([]topicKey, 0, len(since))
	for k := range since {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].who != keys[j].who {
			return keys[i].who < keys[j].who
		}
		return keys[i].topic < keys[j].topic
	})
	clients := map[string]bool{}
	for _, k := range keys {
		clients[k.who] = true
		set := delivered[k]
		if set == nil {
			set = &seqSet{}
		}
		ranges := lost[k]
		inLost := func(q int64) bool {
			for _, rg := range ranges {
				if q >= rg[0] && q <= rg[1] {
					return true
				}
			}
			return false
		}
		seqs := make([]int64, 0, len(acks[k.topic]))
		for q := range acks[k.topic] {
			if q > since[k] {
				seqs = append(seqs, q)
			}
		}
		slices.Sort(seqs)
		missing, first := 0, int64(0)
		for _, q := range seqs {
			if !set.has(q) && !inLost(q) {
				if missing == 0 {
					first = q
				}
				missing++
			}
		}
		if unacked[k] {
			gap, from := 0, int64(0)
			if f, ok := firstSeq[k]; ok {
				for q := f + 1; q < last[k]; q++ {
					if !set.has(q) && !inLost(q) {
						if gap == 0 {
							from = q
						}
						gap++
					}
				}
			}
			if gap > 0 {
				add(Violation{T: lastAt[k], Rule: RuleMissing, Who: k.who, Detail: fmt.Sprintf("%d seqs of %s (no acknowledgements) between its first and last update neither delivered nor reported lost, the first seq %d", gap, k.topic, from)})
			}
		}
		if missing > 0 {
			add(Violation{T: ackedAt[k.topic][first], Rule: RuleMissing, Who: k.who, Detail: fmt.Sprintf("%d acknowledged publishes of %s neither delivered nor reported lost, the first seq %d", missing, k.topic, first)})
		}
		for _, rg := range ranges {
			for q := rg[0]; q <= rg[1] && q-rg[0] < maxSeq; q++ {
				if set.has(q) {
					add(Violation{T: lastHeal, Rule: RuleLostWrong, Who: k.who, Detail: fmt.Sprintf("%s seqs %d-%d reported lost, but seq %d was delivered", k.topic, rg[0], rg[1], q)})
					break
				}
			}
		}
	}
	r.Clients = len(clients)

	// READY again after the last fault healed.
	r.LastHealMs = lastHeal
	slices.SortStableFunc(fleet, func(a, b Event) int { return int(a.T - b.T) })
	down := int64(0)
	for _, e := range fleet {
		if e.T <= lastHeal {
			down = e.N
			continue
		}
		if down == 0 && r.ReadyMs < 0 {
			r.ReadyMs = lastHeal
		}
		down = e.N
		if down == 0 && r.ReadyMs < 0 {
			r.ReadyMs = e.T
		}
	}
	if down == 0 && r.ReadyMs < 0 {
		r.ReadyMs = lastHeal
	}
	if r.ReadyMs < 0 || r.ReadyMs > lastHeal+b.ReadyWithin {
		add(Violation{T: lastHeal + b.ReadyWithin, Rule: RuleNotReady, Who: "fleet", Detail: fmt.Sprintf("%d clients not READY %.0f s after the last fault healed", down, float64(b.ReadyWithin)/1000)})
	}
	names := make([]string, 0, len(finals))
	for who := range finals {
		names = append(names, who)
	}
	slices.Sort(names)
	for _, who := range names {
		if !finals[who] {
			detail := "not READY at the end of the run"
			if finalWhy[who] != "" {
				detail += " (" + finalWhy[who] + ")"
			}
			add(Violation{T: lastHeal + b.ReadyWithin, Rule: RuleNotReady, Who: who, Detail: detail})
		}
	}

	// Recovery per fault.
	slices.SortStableFunc(faults, func(a, b Event) int { return int(a.T - b.T) })
	for i, f := range faults {
		end := int64(1 << 62)
		if i+1 < len(faults) {
			end = faults[i+1].T
		}
		fr := FaultRecovery{T: f.T, Fault: f.Fault, Who: f.Who}
		cur := int64(0)
		for _, e := range fleet {
			if e.T <= f.T {
				cur = e.N
			}
		}
		fr.MaxDown = cur
		lastZero := int64(-1)
		if cur == 0 {
			lastZero = f.T
		}
		for _, e := range fleet {
			if e.T <= f.T || e.T >= end {
				continue
			}
			fr.MaxDown = max(fr.MaxDown, e.N)
			if e.N == 0 {
				lastZero = e.T
			} else {
				lastZero = -1
			}
		}
		if lastZero < 0 {
			fr.Open = true
			if end < 1<<62 {
				fr.Recovery = end - f.T
			}
		} else {
			fr.Recovery = lastZero - f.T
		}
		r.Faults = append(r.Faults, fr)
	}

	// Resources: each process against its own steady state.
	procs := make([]string, 0, len(samples))
	for who := range samples {
		procs = append(procs, who)
	}
	slices.Sort(procs)
	// A restarted process (name#N) is held to its first incarnation's
	// steady state: a node restarted empty fills up with the fleet.
	first := map[string][2]int64{}
	for _, who := range procs {
		ss := samples[who]
		if len(ss) < 4 {
			continue
		}
		// The steady state: the median of the first third after the
		// first sample (start-up), at most 12 samples.
		n := min(12, max(1, (len(ss)-1)/3))
		rss := make([]int64, 0, n)
		gor := make([]int64, 0, n)
		for _, s := range ss[1 : 1+n] {
			rss = append(rss, s.RSS)
			gor = append(gor, s.Gor)
		}
		slices.Sort(rss)
		slices.Sort(gor)
		steady := [2]int64{rss[len(rss)/2], gor[len(gor)/2]}
		base, _, _ := strings.Cut(who, "#")
		if f, ok := first[base]; ok {
			steady = [2]int64{max(steady[0], f[0]), max(steady[1], f[1])}
		} else {
			first[base] = steady
		}
		r.Steady[who] = steady
		peak := [2]int64{}
		reported := false
		for _, s := range ss {
			peak[0], peak[1] = max(peak[0], s.RSS), max(peak[1], s.Gor)
			overRSS := float64(s.RSS) > b.RSSFactor*float64(steady[0])+float64(b.RSSSlack)
			overGor := steady[1] > 0 && float64(s.Gor) > b.GorFactor*float64(steady[1])+float64(b.GorSlack)
			if (overRSS || overGor) && !reported {
				reported = true
				add(Violation{T: s.T, Rule: RuleResources, Who: who, Detail: fmt.Sprintf("RSS %d MiB, %d goroutines against a steady %d MiB, %d", s.RSS>>20, s.Gor, steady[0]>>20, steady[1])})
			}
		}
		r.Peak[who] = peak
	}

	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	return r, nil
}
