package soak

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clean is a history that keeps every promise: two clients on one topic,
// a fault the fleet recovers from, a gap reported lost with its exact
// range, a stored-anyway failed publish, a request settled.
func clean() []Event {
	return []Event{
		{T: 1, Kind: KindSub, Who: "c1", Topic: "a"},
		{T: 1, Kind: KindSub, Who: "c2", Topic: "a"},
		{T: 2, Kind: KindFleet, N: 0},
		{T: 5, Kind: KindSample, Who: "node1", RSS: 100 << 20, Gor: 50},
		{T: 10, Kind: KindAck, Who: "p-a", Topic: "a", Seq: 1, Data: "a:1"},
		{T: 11, Kind: KindUpdate, Who: "c1", Topic: "a", Seq: 1, Data: "a:1"},
		{T: 11, Kind: KindUpdate, Who: "c2", Topic: "a", Seq: 1, Data: "a:1"},
		{T: 15, Kind: KindSample, Who: "node1", RSS: 101 << 20, Gor: 52},
		{T: 20, Kind: KindFault, Who: "node1", Fault: KillNode},
		{T: 21, Kind: KindFleet, N: 2},
		{T: 22, Kind: KindPubFail, Who: "p-a", Topic: "a", Data: "a:2"},
		{T: 23, Kind: KindAck, Who: "p-a", Topic: "a", Seq: 3, Data: "a:3"},
		{T: 24, Kind: KindReq, Who: "c1", ID: 1},
		{T: 25, Kind: KindSample, Who: "node1", RSS: 99 << 20, Gor: 51},
		{T: 30, Kind: KindHeal, Who: "node1", Fault: KillNode},
		{T: 31, Kind: KindFleet, N: 0},
		{T: 31, Kind: KindSettle, Who: "c1", ID: 1, Err: "not_ready"},
		{T: 32, Kind: KindUpdate, Who: "c1", Topic: "a", Seq: 2, Data: "a:2"}, // the failed publish, stored all the same
		{T: 32, Kind: KindUpdate, Who: "c1", Topic: "a", Seq: 3, Data: "a:3"},
		{T: 32, Kind: KindLost, Who: "c2", Topic: "a", Seq: 2, To: 3},
		{T: 35, Kind: KindSample, Who: "node1", RSS: 102 << 20, Gor: 50},
		{T: 40, Kind: KindAck, Who: "p-a", Topic: "a", Seq: 4, Data: "a:4"},
		{T: 41, Kind: KindUpdate, Who: "c1", Topic: "a", Seq: 4, Data: "a:4"},
		{T: 41, Kind: KindUpdate, Who: "c2", Topic: "a", Seq: 4, Data: "a:4"},
		{T: 45, Kind: KindSample, Who: "node1", RSS: 101 << 20, Gor: 50},
		{T: 50, Kind: KindFinal, Who: "c1", N: 1},
		{T: 50, Kind: KindFinal, Who: "c2", N: 1},
	}
}

func mustCheck(t *testing.T, h []Event) *Result {
	t.Helper()
	r, err := CheckEvents(h, DefaultBounds())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestACleanHistoryHoldsEveryPromise(t *testing.T) {
	r := mustCheck(t, clean())
	if !r.OK() {
		t.Fatalf("violations in a clean history: %v", r.Violations)
	}
	if r.Updates != 6 || r.Acks != 3 || r.PubFails != 1 || r.Lost != 2 || r.Requests != 1 || r.Clients != 2 {
		t.Fatalf("counted %+v", r)
	}
	if len(r.Faults) != 1 || r.Faults[0].Recovery != 11 || r.Faults[0].MaxDown != 2 || r.Faults[0].Open {
		t.Fatalf("recovery %+v, want one fault recovered after 11 ms with 2 down", r.Faults)
	}
	if r.ReadyMs != 31 || r.LastHealMs != 30 {
		t.Fatalf("ready at %d after the last heal at %d, want 31 and 30", r.ReadyMs, r.LastHealMs)
	}
}

// edit returns clean() with f applied.
func edit(f func([]Event) []Event) []Event { return f(clean()) }

func TestTheCheckerNamesTheFirstViolation(t *testing.T) {
	cases := []struct {
		name, rule, who string
		h               []Event
	}{
		{"a second delivery", RuleDuplicate, "c2", edit(func(h []Event) []Event {
			return append(h, Event{T: 42, Kind: KindUpdate, Who: "c2", Topic: "a", Seq: 4, Data: "a:4"})
		})},
		{"a delivery out of order", RuleOrder, "c2", edit(func(h []Event) []Event {
			// c2 handed 4, then 3
			h[19] = Event{T: 32, Kind: KindLost, Who: "c2", Topic: "a", Seq: 2, To: 2}
			return append(h, Event{T: 42, Kind: KindUpdate, Who: "c2", Topic: "a", Seq: 3, Data: "a:3"})
		})},
		{"an acknowledged publish never delivered (resume off)", RuleMissing, "c2", edit(func(h []Event) []Event {
			h[19] = Event{T: 32, Kind: KindLost, Who: "c2", Topic: "a", Seq: 2, To: 2} // 3 neither delivered nor lost
			return h
		})},
		{"a lost range holding a delivered seq", RuleLostWrong, "c1", edit(func(h []Event) []Event {
			return append(h, Event{T: 33, Kind: KindLost, Who: "c1", Topic: "a", Seq: 3, To: 3})
		})},
		{"other data under an acknowledged seq", RuleData, "c1", edit(func(h []Event) []Event {
			h[22].Data = "a:9"
			h = append(h, Event{T: 9, Kind: KindPubFail, Who: "p-a", Topic: "a", Data: "a:9"})
			return h
		})},
		{"data nobody published", RulePhantom, "c1", edit(func(h []Event) []Event {
			h[17].Data = "zzz"
			return h
		})},
		{"a request never settled", RuleUnsettled, "c1", edit(func(h []Event) []Event {
			return append(h[:16], h[17:]...)
		})},
		{"a request ended by the runner", RuleUnsettled, "c1", edit(func(h []Event) []Event {
			h[16].Err = "late"
			return h
		})},
		{"a client left not READY", RuleNotReady, "c2", edit(func(h []Event) []Event {
			h[len(h)-1].N = 0
			return h
		})},
		{"the fleet not READY 15 s after the heal", RuleNotReady, "fleet", edit(func(h []Event) []Event {
			h[15].T = 30 + 15_001
			return h
		})},
		{"a panic", RuleCrash, "node1", edit(func(h []Event) []Event {
			return append(h, Event{T: 44, Kind: KindCrash, Who: "node1", Err: "panic: boom"})
		})},
		{"memory growing", RuleResources, "node1", edit(func(h []Event) []Event {
			h[24].RSS = 400 << 20
			return h
		})},
		{"goroutines growing", RuleResources, "node1", edit(func(h []Event) []Event {
			h[24].Gor = 50_000
			return h
		})},
		{"one seq acknowledged twice", RuleAckTwice, "p-a", edit(func(h []Event) []Event {
			return append(h, Event{T: 46, Kind: KindAck, Who: "p-a", Topic: "a", Seq: 4, Data: "a:5"})
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := mustCheck(t, tc.h)
			if r.OK() {
				t.Fatalf("no violation found")
			}
			found := false
			for _, v := range r.Violations {
				if v.Rule == tc.rule && v.Who == tc.who {
					found = true
				}
			}
			if !found {
				t.Fatalf("want a %s violation by %s, got %v", tc.rule, tc.who, r.Violations)
			}
			if f := r.First(); f == nil || f.String() == "" {
				t.Fatal("no first violation named")
			}
		})
	}
}

func TestADamagedHistoryIsRefusedNotCheckedInPart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.jsonl")
	w, err := Create(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range clean() {
		w.Add(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := CheckFile(path, DefaultBounds())
	if err != nil || !r.OK() || r.Updates != 6 {
		t.Fatalf("the written history: %v %+v", err, r)
	}
	b, _ := os.ReadFile(path)
	cut := bytes.Replace(b, []byte(`"k":"upd"`), []byte(`"k":`), 1)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, cut, 0o600)
	if _, err := CheckFile(bad, DefaultBounds()); err == nil || !strings.Contains(err.Error(), "line 6") {
		t.Fatalf("a damaged line 6: %v", err)
	}
	if _, err := CheckEvents([]Event{{Kind: KindAck, Topic: "a", Seq: 0}}, DefaultBounds()); err == nil {
		t.Fatal("seq 0 acknowledged was accepted")
	}
	if _, err := CheckEvents([]Event{{Kind: KindSettle, Who: "c", ID: 7}}, DefaultBounds()); err == nil {
		t.Fatal("a settle of a request never sent was accepted")
	}
}

func plan(seed uint64) Plan {
	return Plan{Seed: seed, Length: 30 * time.Minute, Warmup: 30 * time.Second, Quiet: 30 * time.Second,
		Nodes: 3, NATS: 3, Topics: 3, Pages: 3, MinGap: 10 * time.Second, MaxGap: 30 * time.Second}
}

func TestTheSameSeedReplaysTheSameSchedule(t *testing.T) {
	a, err := Schedule(plan(7))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Schedule(plan(7))
	c, _ := Schedule(plan(8))
	if len(a) < 60 || len(a) > 175 {
		t.Fatalf("%d faults in 30 minutes at one every 10-30 s", len(a))
	}
	if len(a) != len(b) {
		t.Fatalf("seed 7 drew %d then %d faults", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7's fault %d: %v then %v", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
}

func TestTheScheduleKeepsAMajorityUp(t *testing.T) {
	kinds := map[string]int{}
	for seed := uint64(1); seed <= 50; seed++ {
		p := plan(seed)
		fs, err := Schedule(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range fs {
			kinds[f.Kind]++
			if f.Kind == PageFreeze && (f.Hold < 5*time.Second && f.At+f.Hold != p.Length-p.Quiet || f.Hold > 40*time.Second || f.Target >= p.Pages) {
				t.Fatalf("seed %d: %v: a page frozen 5-40 s, one of %d pages", seed, f, p.Pages)
			}
			if f.At < p.Warmup || f.At+f.Hold > p.Length-p.Quiet {
				t.Fatalf("seed %d: %v outside the warmup and the quiet end", seed, f)
			}
			if i > 0 && (f.At-fs[i-1].At < p.MinGap || f.At-fs[i-1].At > p.MaxGap*8) {
				t.Fatalf("seed %d: %v then %v", seed, fs[i-1], f)
			}
			for _, g := range fs[:i] {
				if g.At+g.Hold+time.Second <= f.At {
					continue
				}
				cf, cg := category(f.Kind), category(g.Kind)
				switch {
				case cf == "nats" && cg == "nats":
					t.Fatalf("seed %d: two NATS servers down at once: %v and %v", seed, g, f)
				case cf == "down" && cg == "down":
					t.Fatalf("seed %d: two nodes down at once: %v and %v", seed, g, f)
				case cf == "page" && cg == "page":
					t.Fatalf("seed %d: two pages frozen at once: %v and %v", seed, g, f)
				case cf == "page" || cg == "page":
				case cf != "nats" && cg != "nats" && cf != "burst" && cg != "burst" && f.Target == g.Target:
					t.Fatalf("seed %d: two faults on node %d at once: %v and %v", seed, f.Target, g, f)
				}
			}
		}
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("50 schedules never drew %s", k)
		}
	}
	if _, err := Schedule(Plan{Length: time.Minute, Warmup: 30 * time.Second, Quiet: 30 * time.Second, Nodes: 3, NATS: 3, Topics: 1, MinGap: time.Second, MaxGap: time.Second}); err == nil {
		t.Fatal("a run with no room for faults was accepted")
	}
	if _, err := Schedule(Plan{Length: time.Hour, Nodes: 3, NATS: 3, Topics: 1, MinGap: time.Second, MaxGap: time.Second, Kinds: []string{"meteor"}}); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	if _, err := Schedule(Plan{Length: time.Hour, Nodes: 3, NATS: 3, Topics: 1, MinGap: time.Second, MaxGap: time.Second, Kinds: []string{PageFreeze}}); err == nil {
		t.Fatal("a page freeze without pages was accepted")
	}
	// Without pages no page is frozen, and a seed draws what it drew
	// before pages existed.
	for seed := uint64(1); seed <= 10; seed++ {
		p := plan(seed)
		p.Pages = 0
		fs, _ := Schedule(p)
		for _, f := range fs {
			if f.Kind == PageFreeze {
				t.Fatalf("seed %d without pages: %v", seed, f)
			}
		}
	}
}

// A node restarted empty fills up with the fleet: it is held to its first
// incarnation's steady state, not to its own empty start.
func TestARestartedProcessIsHeldToItsFirstSteadyState(t *testing.T) {
	var h []Event
	for i := range 8 {
		h = append(h, Event{T: int64(i), Kind: KindSample, Who: "node1#0", RSS: 100 << 20, Gor: 3000})
	}
	for i := range 8 {
		gor := int64(20)
		if i > 4 {
			gor = 3100
		}
		h = append(h, Event{T: int64(100 + i), Kind: KindSample, Who: "node1#1", RSS: 20 << 20, Gor: gor})
	}
	if r := mustCheck(t, h); !r.OK() {
		t.Fatalf("a restarted node filling up: %v", r.Violations)
	}
	h = append(h, Event{T: 200, Kind: KindSample, Who: "node1#1", RSS: 20 << 20, Gor: 9000})
	if r := mustCheck(t, h); r.Count[RuleResources] != 1 {
		t.Fatalf("9,000 goroutines against a steady 3,000: %v", r.Violations)
	}
}

// A Chromium page follows the demo's feed, which no publisher in the
// history acknowledges: its updates are no phantom, but a second
// delivery, a seq going back, a gap not reported lost or a page left not
// READY is still named.
func TestAPageOnTheUnacknowledgedFeedIsHeldToOrderAndREADY(t *testing.T) {
	page := func(extra ...Event) []Event {
		h := append(clean(),
			Event{T: 1, Kind: KindSub, Who: "page0", Topic: "feed", N: Unacked},
			Event{T: 12, Kind: KindUpdate, Who: "page0", Topic: "feed", Seq: 7},
			Event{T: 13, Kind: KindUpdate, Who: "page0", Topic: "feed", Seq: 8},
		)
		h = append(h, extra...)
		return append(h, Event{T: 50, Kind: KindFinal, Who: "page0", N: 1})
	}
	if r := mustCheck(t, page()); !r.OK() {
		t.Fatalf("a page's clean feed: %v", r.Violations)
	}
	// A gap reported lost is kept.
	if r := mustCheck(t, page(Event{T: 14, Kind: KindLost, Who: "page0", Topic: "feed", Seq: 9, To: 10}, Event{T: 14, Kind: KindUpdate, Who: "page0", Topic: "feed", Seq: 11})); !r.OK() {
		t.Fatalf("a page's gap reported lost: %v", r.Violations)
	}
	for _, tc := range []struct {
		name, rule string
		h          []Event
	}{
		{"a second delivery", RuleDuplicate, page(Event{T: 14, Kind: KindUpdate, Who: "page0", Topic: "feed", Seq: 8})},
		{"a seq going back", RuleOrder, page(Event{T: 14, Kind: KindUpdate, Who: "page0", Topic: "feed", Seq: 6})},
		{"a gap not reported lost", RuleMissing, page(Event{T: 14, Kind: KindUpdate, Who: "page0", Topic: "feed", Seq: 11})},
		{"not READY at the end", RuleNotReady, append(page(), Event{T: 51, Kind: KindFinal, Who: "page0", N: 0, Err: "ended=budget"})},
	} {
		r := mustCheck(t, tc.h)
		found := false
		for _, v := range r.Violations {
			found = found || v.Rule == tc.rule && v.Who == "page0"
		}
		if !found {
			t.Errorf("%s: want a %s violation by page0, got %v", tc.name, tc.rule, r.Violations)
		}
		if tc.rule == RuleNotReady && !strings.Contains(r.First().Detail, "ended=budget") {
			t.Errorf("a page not READY at the end: the state it reported is not said: %v", r.First())
		}
	}
	// Without the Unacked mark, the same feed is a phantom: the mark, not
	// the topic's name, is what exempts it.
	h := page()
	for i := range h {
		if h[i].Who == "page0" && h[i].Kind == KindSub {
			h[i].N = 0
		}
	}
	if r := mustCheck(t, h); r.Count[RulePhantom] != 2 {
		t.Fatalf("an unmarked feed: want 2 phantoms, got %v", r.Violations)
	}
}
