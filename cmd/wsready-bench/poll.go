//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The HTTP transport's long polls beside its stream: a client that, once
// its session is made, GETs <mount>/sse?session=…&poll=1 in a loop, each
// time with the last event id it got as &lastEventId= (docs/http-transport.md).
// The server answers a poll once it holds events and nothing more is
// parked, or after one ping interval with none, so each delivered burst
// costs a request.

// transportPoll is the clients child's -transport for long polls.
const transportPoll = "poll"

// pollMaxEvents bounds the events read from one poll's answer: the server
// ends an answer once nothing more is parked, so a handful is usual; an
// answer that never ends still ends the loop.
const pollMaxEvents = 4096

// errPollTooLong is an answer with more than pollMaxEvents events.
var errPollTooLong = fmt.Errorf("a poll's answer has more than %d events", pollMaxEvents)

// poller is one long-poll client's state across its polls.
type poller struct {
	hc         *http.Client
	url        string // <mount>/sse?session=…&poll=1
	silence    time.Duration
	lastID     string // the last event id got, sent as lastEventId
	subscribe  bool
	subscribed bool
	lastSeq    int64 // the feed's last update seq (0: none yet)
	st         *counters
}

// pollConn is one long-poll client until ctx ends or its session does;
// dialled is called once its connect is over (the session, the first poll
// and the subscribe's answer), whatever the outcome. It counts as sseConn
// does, and each update whose seq is not the last one's next as
// misordered.
func pollConn(ctx context.Context, base string, hc *http.Client, subscribe bool, st *counters, tm *sseTiming, dialled func()) {
	once := sync.OnceFunc(dialled)
	defer once()
	in := false
	err := pollLoop(ctx, base, hc, subscribe, st, tm, func() { in = true; once() })
	switch {
	case ctx.Err() != nil:
	case !in || errors.Is(err, errRefused):
		st.failed.Add(1)
	default:
		st.dropped.Add(1)
	}
}

// pollLoop makes a session, polls once (the welcome), POSTs the
// subscribe, calls connected and polls until ctx ends or a poll fails.
// A failure before connected counts as failed, as does a refusal
// (errRefused) after it.
func pollLoop(ctx context.Context, base string, hc *http.Client, subscribe bool, st *counters, tm *sseTiming, connected func()) error {
	tm.started(time.Now())
	var sess struct {
		Session    string `json:"session"`
		IntervalMs int64  `json:"intervalMs"`
	}
	if err := ssePost(ctx, hc, base+"/session", `{}`, http.StatusOK, &sess); err != nil {
		return err
	}
	tm.made(time.Now())
	if sess.Session == "" || sess.IntervalMs <= 0 || sess.IntervalMs > time.Hour.Milliseconds() {
		return fmt.Errorf("failed to make a session: the answer has no session or an interval of %d ms", sess.IntervalMs)
	}
	st.dialed.Add(1)
	q := "?session=" + url.QueryEscape(sess.Session)
	p := &poller{hc: hc, url: base + "/sse" + q + "&poll=1", silence: sseSilence(time.Duration(sess.IntervalMs) * time.Millisecond),
		subscribe: subscribe, st: st}
	if err := p.poll(ctx); err != nil {
		return err
	}
	st.connected.Add(1)
	if subscribe {
		if err := ssePost(ctx, hc, base+"/send"+q, sseSubscribe, http.StatusNoContent, nil); err != nil {
			return err
		}
	}
	connected()
	for {
		if err := p.poll(ctx); err != nil {
			return err
		}
	}
}

// poll is one long poll: the request, its answer's events counted, the
// last id kept for the next. It fails when the answer is not an event
// stream (errRefused), when no answer comes within the silence bound, on
// event: close, and on a refused subscribe (errRefused).
func (p *poller) poll(ctx context.Context) error {
	u := p.url
	if p.lastID != "" {
		u += "&lastEventId=" + url.QueryEscape(p.lastID)
	}
	rctx, cancel := context.WithTimeout(ctx, p.silence)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("failed to poll: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := p.hc.Do(req)
	if err != nil {
		return fmt.Errorf("failed to poll: %w", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		io.Copy(io.Discard, io.LimitReader(resp.Body, sseSmallBody))
		return fmt.Errorf("failed to poll: %s, %q: %w", resp.Status, ct, errRefused)
	}
	p.st.polls.Add(1)
	rd := newSSEReader(resp.Body)
	rd.lastID = p.lastID // an id persists across answers, as across a stream's events
	for range pollMaxEvents {
		ev, err := rd.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read a poll's answer: %w", err)
		}
		p.lastID = ev.ID
		if err := p.event(ev); err != nil {
			return err
		}
	}
	return errPollTooLong
}

// event counts one event as sseBody.read does, and checks an update's
// seq against the last.
func (p *poller) event(ev sseEvent) error {
	if ev.Type == "close" {
		if p.subscribe && !p.subscribed {
			return fmt.Errorf("failed to subscribe: the server closed the session: %w", errRefused)
		}
		return errors.New("the server closed the session")
	}
	p.st.frames.Add(1)
	p.st.msgs.Add(1)
	switch wsreadyType(ev.Data) {
	case "ping":
		p.st.pings.Add(1)
	case "update":
		p.st.updates.Add(1)
		var u struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(ev.Data, &u) != nil || (p.lastSeq != 0 && u.Seq != p.lastSeq+1) {
			p.st.misordered.Add(1)
		}
		p.lastSeq = u.Seq
	case "subscribed":
		if !p.subscribed {
			p.subscribed = true
			p.st.subscribed.Add(1)
		}
	case "error", "unsubscribed":
		if p.subscribe && !p.subscribed {
			return fmt.Errorf("failed to subscribe: %w", errRefused)
		}
	}
	return nil
}

// pollMarkdown is the long-poll leg's rows of the row's section: its
// ratios over WebSocket run by run with their medians (no goal: shown),
// the stream's CPU per update beside them, and what the polls did.
func (s SSEFigures) pollMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "\nThe long-poll leg, on a third fresh server in each run: %s clients, each making its session, polling once (`GET /ws/sse?session=…&poll=1`, the welcome), POSTing the subscribe and then polling again at once after every answer with `&lastEventId=` the last id it got, on its one keep-alive connection. An answer ends once it holds events and nothing more is parked, or after one ping interval with none, so every burst the client gets costs a request. Every update's seq is checked against the last one's (none lost or repeated, or the run fails).\n\n",
		thousands(s.Conns))
	b.WriteString("| figure |")
	for _, x := range s.Runs {
		fmt.Fprintf(b, " run %d |", x.Trial)
	}
	b.WriteString(" median |\n|---|" + strings.Repeat("---|", len(s.Runs)) + "---|\n")
	row := func(label string, get func(SSERun) string, med *float64) {
		fmt.Fprintf(b, "| %s |", label)
		for _, x := range s.Runs {
			if x.Error != "" || x.Poll == nil {
				b.WriteString(" failed |")
				continue
			}
			fmt.Fprintf(b, " %s |", get(x))
		}
		m := "n/a"
		if med != nil {
			m = "**" + ratioText(*med) + "**"
		}
		fmt.Fprintf(b, " %s |\n", m)
	}
	row("CPU per delivered update, long poll / WebSocket", func(x SSERun) string {
		return fmt.Sprintf("%s (%s / %s)", ratioText(x.PollCPUPerUpdateRatio), num(x.Poll.CPUPerUpdateUs, "µs"), num(x.WS.CPUPerUpdateUs, "µs"))
	}, s.MedianPollCPUPerUpdateRatio)
	row("RSS per connection, long poll / WebSocket", func(x SSERun) string {
		return fmt.Sprintf("%s (%s / %s)", ratioText(x.PollRSSPerConnRatio), num(x.Poll.RSSPerConnBytes/1e3, "KB"), num(x.WS.RSSPerConnBytes/1e3, "KB"))
	}, s.MedianPollRSSPerConnRatio)
	row("CPU per delivered update, SSE stream / WebSocket (beside)", func(x SSERun) string {
		return fmt.Sprintf("%s (%s / %s)", ratioText(x.SSECPUPerUpdateRatio), num(x.SSE.CPUPerUpdateUs, "µs"), num(x.WS.CPUPerUpdateUs, "µs"))
	}, s.MedianSSECPUPerUpdateRatio)
	line := func(label string, get func(SSELeg) string) {
		fmt.Fprintf(b, "| %s |", label)
		for _, x := range s.Runs {
			if x.Error != "" || x.Poll == nil {
				b.WriteString(" failed |")
				continue
			}
			fmt.Fprintf(b, " %s |", get(*x.Poll))
		}
		b.WriteString(" |\n")
	}
	line("long poll: polls, updates and pings per connection per second", func(l SSELeg) string {
		return fmt.Sprintf("%.2f; %.2f + %.2f", l.PollsPerConnPerSec, l.UpdatesPerConnPerSec, l.PingsPerConnPerSec)
	})
	line("long poll: server CPU through the window", func(l SSELeg) string { return num(l.ServerCores, "cores") })
	line("long poll: time to connect and subscribe all", func(l SSELeg) string { return num(l.ConnectSeconds, "s") })
	line("long poll: RSS before the clients, mean through the window", func(l SSELeg) string {
		return fmt.Sprintf("%.0f, %.0f MB", l.BaseRSSBytes/1e6, l.Steady.RSS.Mean/1e6)
	})
	line("long poll: connections dropped, updates lost or repeated", func(l SSELeg) string { return fmt.Sprintf("%d, %d", l.Dropped, l.Misordered) })
}
