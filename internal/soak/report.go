package soak

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ReportInput is what a report is made of.
type ReportInput struct {
	Seed      uint64
	Length    time.Duration
	Clients   int
	Topics    int
	Schedule  []Fault
	Result    *Result
	Took      time.Duration
	Race      bool   // the processes were built with -race
	Broken    string // a deliberately broken client ("resume"), or ""
	Pages     int    // Chromium pages at stage 8 (0: none)
	PagesNote string // why there were none
}

// rules in the order the report lists them, with what each promises.
var rules = []struct{ name, promise string }{
	{RuleMissing, "every acknowledged publish delivered to every client subscribed through it, or reported lost with its range"},
	{RuleDuplicate, "no update handed to a client twice"},
	{RuleOrder, "seqs increasing per client and topic"},
	{RuleData, "each seq delivered with the data acknowledged for it"},
	{RulePhantom, "no data delivered that no publisher sent"},
	{RuleLostWrong, "a continuity_lost range holds only seqs never delivered"},
	{RuleAckTwice, "one seq acknowledged for one publish"},
	{RuleUnknownSubs, "updates only for subscribed topics"},
	{RuleUnsettled, "every request settled by the client's own deadline"},
	{RuleNotReady, "every client READY within 15 s of the last fault healing"},
	{RuleCrash, "no panic, fatal error, race report or unasked exit"},
	{RuleResources, "RSS and goroutines within 2x (+64 MiB, +2,000) of each process's steady state"},
}

// Report renders a run as markdown: the schedule, per fault kind the
// fleet's recovery (median and worst), the invariants, resources.
func Report(in ReportInput) string {
	var b strings.Builder
	r := in.Result
	verdict := "every invariant held"
	if !r.OK() {
		verdict = fmt.Sprintf("FAILED: %d rules broken, the first %v", len(r.Count), r.First())
	}
	fmt.Fprintf(&b, "# Chaos soak, seed %d\n\n", in.Seed)
	fmt.Fprintf(&b, "Made by `make soak SEED=%d MINUTES=%g`", in.Seed, in.Length.Minutes())
	if in.Race {
		b.WriteString(" with every process built with -race")
	}
	if in.Broken != "" {
		fmt.Fprintf(&b, ", the clients deliberately broken (%s off)", in.Broken)
	}
	pages := fmt.Sprintf("%d Chromium pages at stage 8 (two tabs sharing a connection, one over HTTP behind a proxy refusing upgrades)", in.Pages)
	if in.Pages == 0 {
		pages = "no Chromium pages (" + in.PagesNote + ")"
	}
	fmt.Fprintf(&b, ": %d native clients on %d topics, %s, three nodes on three NATS servers (replicas 3), %d faults in %v (the run took %v). Result: **%s**.\n\n",
		in.Clients, in.Topics, pages, len(in.Schedule), in.Length, in.Took.Round(time.Second), verdict)
	fmt.Fprintf(&b, "%d updates handed to clients, %d publishes acknowledged, %d failed, %d seqs reported lost, %d requests.\n\n",
		r.Updates, r.Acks, r.PubFails, r.Lost, r.Requests)

	b.WriteString("## Invariants\n\n| rule | promise | violations | first |\n|---|---|---|---|\n")
	for _, ru := range rules {
		first := ""
		for _, v := range r.Violations {
			if v.Rule == ru.name {
				first = v.String()
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", ru.name, ru.promise, r.Count[ru.name], strings.ReplaceAll(first, "|", "/"))
	}
	if r.ReadyMs >= 0 {
		fmt.Fprintf(&b, "\nThe last fault healed at %.1f s; every client was READY again at %.1f s.\n", float64(r.LastHealMs)/1000, float64(r.ReadyMs)/1000)
	}

	b.WriteString("\n## Recovery per fault kind\n\nFrom the fault's start until every client was READY again (0: no client left READY). " +
		"Open: the next fault came first (its time until then counted).\n\n| fault | times | median | worst | most clients not READY | open |\n|---|---|---|---|---|---|\n")
	byKind := map[string][]FaultRecovery{}
	for _, f := range r.Faults {
		byKind[f.Fault] = append(byKind[f.Fault], f)
	}
	for _, k := range Kinds {
		fs := byKind[k]
		if len(fs) == 0 {
			continue
		}
		ms := make([]int64, len(fs))
		down, open := int64(0), 0
		for i, f := range fs {
			ms[i] = f.Recovery
			down = max(down, f.MaxDown)
			if f.Open {
				open++
			}
		}
		slices.Sort(ms)
		fmt.Fprintf(&b, "| %s | %d | %.2f s | %.2f s | %d | %d |\n", k, len(fs), float64(ms[(len(ms)-1)/2])/1000, float64(ms[len(ms)-1])/1000, down, open)
	}
	if len(r.Skips) > 0 {
		b.WriteString("\nFaults this machine could not make (drawn, logged, skipped):\n\n")
		seen := map[string]bool{}
		for _, s := range r.Skips {
			if !seen[s.Fault] {
				seen[s.Fault] = true
				fmt.Fprintf(&b, "- %s: %s\n", s.Fault, s.Err)
			}
		}
	}

	b.WriteString("\n## Resources\n\nEach process incarnation (`#N`: restarted N times) against its own steady state (the median of its first samples, every 5 s).\n\n| process | steady RSS | peak RSS | steady goroutines | peak goroutines |\n|---|---|---|---|---|\n")
	procs := make([]string, 0, len(r.Steady))
	for p := range r.Steady {
		procs = append(procs, p)
	}
	slices.Sort(procs)
	for _, p := range procs {
		s, pk := r.Steady[p], r.Peak[p]
		gs, gp := "-", "-"
		if s[1] > 0 {
			gs, gp = fmt.Sprint(s[1]), fmt.Sprint(pk[1])
		}
		fmt.Fprintf(&b, "| %s | %.0f MiB | %.0f MiB | %s | %s |\n", p, float64(s[0])/(1<<20), float64(pk[0])/(1<<20), gs, gp)
	}

	b.WriteString("\n## Schedule\n\n| at | fault | target | held |\n|---|---|---|---|\n")
	for _, f := range in.Schedule {
		target := fmt.Sprintf("node%d", f.Target+1)
		switch category(f.Kind) {
		case "nats":
			target = fmt.Sprintf("nats%d", f.Target+1)
		case "burst":
			target = fmt.Sprintf("topic %d", f.Target+1)
		case "page":
			target = fmt.Sprintf("page%d", f.Target) // soakpages's own names, from 0
		}
		fmt.Fprintf(&b, "| %.1f s | %s | %s | %v |\n", f.At.Seconds(), f.Kind, target, f.Hold.Round(100*time.Millisecond))
	}
	return b.String()
}
