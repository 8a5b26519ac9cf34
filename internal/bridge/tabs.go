package bridge

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/protocol"
)

// Many tabs, one connection (stage 8): the browser driver's pure pieces.
// Tabs of one origin and server URL elect a leader with a Web Lock; the
// leader's core holds the connection and the others' cores follow it over
// a BroadcastChannel (wasm/tabs.go). Here: the timings, who outranks whom,
// the topics every tab wants (the leader subscribes their union), and the
// state and replies as they cross the channel.

// Leadership timings.
const (
	// Heartbeat is how often the leader broadcasts that it lives (and,
	// with less, whenever it does anything else).
	Heartbeat = 250 * time.Millisecond
	// AloneHeartbeat is the leader's heartbeat while no other tab is known
	// to it: a post to the channel is main-thread work (a structured clone
	// and a message to the browser process) that nobody hears. A tab that
	// starts announces itself, and the leader answers it at once (its
	// state), so a new follower hears the leader within the channel's
	// round trip; the slow beat stays for a leader that another tab took
	// the lock from to hear it.
	AloneHeartbeat = 2 * time.Second
	// SilentAfter is how long a follower waits without a word from a
	// visible leader before it takes the lock from it ({steal: true}): a
	// frozen or hung leader keeps its lock, only a closed or crashed one
	// releases it. SilentJitter is added, drawn per tab, so that two
	// followers rarely steal at once.
	SilentAfter  = 900 * time.Millisecond
	SilentJitter = 200 * time.Millisecond
	// SilentAfterHidden is the same for a leader whose page is hidden: the
	// browser runs a hidden page's timers about once a second (after 5
	// minutes, once a minute), so its heartbeats are late without it being
	// frozen; a page the browser freezes says so first (the freeze event),
	// and its followers take over at once.
	SilentAfterHidden = 10 * time.Second
	// Announce is how often a follower tells the leader again which topics
	// it wants; the leader forgets a tab not heard from for ForgetTab (one
	// closed without a word), then unsubscribes what only it wanted.
	Announce  = 5 * time.Second
	ForgetTab = 130 * time.Second
)

// Bounds on what the leader keeps for other tabs (a same-origin page can
// post anything on the channel): MaxTabs tabs of MaxTabTopics topics each,
// MaxForwarded requests forwarded and not yet answered.
const (
	MaxTabs      = 64
	MaxTabTopics = 64
	MaxForwarded = 1024
)

// ErrTooManyTabs is TabTopics.Set's error past MaxTabs: that tab's topics
// are not subscribed by the leader (its own requests still work).
var ErrTooManyTabs = errors.New("more than " + strconv.Itoa(MaxTabs) + " tabs follow this leader")

// Outranks reports whether leader a (its term, its tab id) outranks b: the
// higher term (each new leader takes the highest it has seen plus one), the
// higher id on a tie. A leader that hears one that outranks it steps down.
func Outranks(termA uint64, idA string, termB uint64, idB string) bool {
	if termA != termB {
		return termA > termB
	}
	return idA > idB
}

// TabSub is what one tab wants of a topic: its presence events, and where
// to start (its cursor) if the leader is not subscribed yet.
type TabSub struct {
	Presence bool
	Since    int64
	HasSince bool
}

// FormatSubs writes a tab's topics for the channel, sorted: one line each,
// "topic p since" (p "1" for presence, else "0"; since "-" for none).
func FormatSubs(subs map[string]TabSub) string {
	topics := make([]string, 0, len(subs))
	for t := range subs {
		topics = append(topics, t)
	}
	SortStrings(topics)
	var b []byte
	for _, t := range topics {
		s := subs[t]
		b = append(b, t...)
		if s.Presence {
			b = append(b, " 1 "...)
		} else {
			b = append(b, " 0 "...)
		}
		if s.HasSince {
			b = strconv.AppendInt(b, s.Since, 10)
		} else {
			b = append(b, '-')
		}
		b = append(b, '\n')
	}
	return string(b)
}

// ParseSubs reads FormatSubs' text, at most MaxTabTopics topics; a line
// that is not well formed is skipped.
func ParseSubs(s string) map[string]TabSub {
	out := map[string]TabSub{}
	for _, line := range splitLines(s) {
		if len(out) >= MaxTabTopics {
			break
		}
		f := fieldsOf(line)
		if len(f) != 3 || !protocol.ValidTopic(f[0]) || f[1] != "0" && f[1] != "1" {
			continue
		}
		sub := TabSub{Presence: f[1] == "1"}
		if f[2] != "-" {
			n, ok := protocol.ParseInt64(f[2])
			if !ok || n < 0 {
				continue
			}
			sub.Since, sub.HasSince = n, true
		}
		out[f[0]] = sub
	}
	return out
}

// TabTopics is the leader's table of the topics other tabs want, bounded
// by MaxTabs.
type TabTopics struct {
	tabs map[string]*tabEntry
}

type tabEntry struct {
	subs map[string]TabSub
	seen time.Time
}

// Set records tab's topics (heard at now) and reports whether the tab is
// new. Past MaxTabs a new tab is refused with ErrTooManyTabs.
func (tt *TabTopics) Set(tab string, subs map[string]TabSub, now time.Time) (bool, error) {
	if tt.tabs == nil {
		tt.tabs = map[string]*tabEntry{}
	}
	e, ok := tt.tabs[tab]
	if !ok {
		if len(tt.tabs) >= MaxTabs {
			return false, ErrTooManyTabs
		}
		e = &tabEntry{}
		tt.tabs[tab] = e
	}
	e.subs, e.seen = subs, now
	return !ok, nil
}

// Drop forgets tab (it said goodbye); it reports whether it was known.
func (tt *TabTopics) Drop(tab string) bool {
	_, ok := tt.tabs[tab]
	delete(tt.tabs, tab)
	return ok
}

// Expire forgets the tabs not heard from since now-after; it reports
// whether any was.
func (tt *TabTopics) Expire(now time.Time, after time.Duration) bool {
	gone := false
	for id, e := range tt.tabs {
		if now.Sub(e.seen) > after {
			delete(tt.tabs, id)
			gone = true
		}
	}
	return gone
}

// Reset forgets every tab.
func (tt *TabTopics) Reset() { tt.tabs = nil }

// Len is the number of tabs known.
func (tt *TabTopics) Len() int { return len(tt.tabs) }

// Want is the union of local (this tab's own topics) and every known
// tab's: presence if any asks for it, since the lowest any gives (the
// replay that serves them all; a tab's core drops what it already has).
func (tt *TabTopics) Want(local map[string]TabSub) map[string]TabSub {
	out := make(map[string]TabSub, len(local))
	add := func(topic string, s TabSub) {
		w, ok := out[topic]
		if !ok {
			out[topic] = s
			return
		}
		w.Presence = w.Presence || s.Presence
		if s.HasSince && (!w.HasSince || s.Since < w.Since) {
			w.Since, w.HasSince = s.Since, true
		}
		out[topic] = w
	}
	for t, s := range local {
		add(t, s)
	}
	for _, e := range tt.tabs {
		for t, s := range e.subs {
			add(t, s)
		}
	}
	return out
}

// TopicChange is one subscribe DiffTopics asks for.
type TopicChange struct {
	Topic string
	Sub   TabSub
}

// DiffTopics compares the topics a core is subscribed to (have: topic ->
// presence) with those wanted, and returns the subscribes (new topics with
// their since; topics whose presence changes, without one: a since would
// move the core's cursor back) and the unsubscribes that make them equal,
// each sorted by topic.
func DiffTopics(have map[string]bool, want map[string]TabSub) (sub []TopicChange, unsub []string) {
	topics := make([]string, 0, len(want))
	for t := range want {
		topics = append(topics, t)
	}
	SortStrings(topics)
	for _, t := range topics {
		w := want[t]
		p, ok := have[t]
		switch {
		case !ok:
			sub = append(sub, TopicChange{Topic: t, Sub: w})
		case p != w.Presence:
			sub = append(sub, TopicChange{Topic: t, Sub: TabSub{Presence: w.Presence}})
		}
	}
	for t := range have {
		if _, ok := want[t]; !ok {
			unsub = append(unsub, t)
		}
	}
	SortStrings(unsub)
	return sub, unsub
}

// LeaderStateValue is the leader's state as it crosses the channel: flat
// fields the follower's driver reads back with ParseLeaderState.
func LeaderStateValue(s client.State) map[string]any {
	return map[string]any{
		"transport": s.Transport.String(), "protocol": s.Protocol.String(), "service": s.Service.String(),
		"ready": s.Ready, "epoch": float64(s.Epoch), "attempt": float64(s.Attempt),
		"ended": string(s.Ended), "endCode": float64(s.EndCode),
		"errClass": string(s.LastError.Class), "errCode": float64(s.LastError.Code),
		"via": float64(s.Via), "notReadySince": float64(msOf(s.NotReadySince)),
		"degraded": s.Degraded, "offline": s.Offline,
		"refusals": float64(s.Refusals), "refTopic": s.Refused.Topic, "refCode": s.Refused.Code, "refMsg": s.Refused.Message,
	}
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ParseLeaderState reads LeaderStateValue's fields; what is missing or
// out of range reads as its zero value (down, not READY). Online is the
// follower's own (its core sets it).
func ParseLeaderState(g Getter) client.State {
	var st client.State
	level := func(name string) client.Level {
		s, _, _ := g.String(name)
		switch s {
		case "pending":
			return client.Pending
		case "up":
			return client.Up
		case "off":
			return client.Off
		}
		return client.Down
	}
	count := func(name string) float64 {
		n, ok, err := g.Number(name)
		if !ok || err != nil || n != math.Trunc(n) || n < 0 || n > 1<<53 {
			return 0
		}
		return n
	}
	flag := func(name string) bool {
		b, _, _ := g.Bool(name)
		return b
	}
	st.Transport, st.Protocol, st.Service = level("transport"), level("protocol"), level("service")
	st.Ready = flag("ready") && st.Transport == client.Up
	st.Epoch = uint64(count("epoch"))
	st.Attempt = int(min(count("attempt"), 1e9))
	if s, _, _ := g.String("ended"); isTerminal(client.Terminal(s)) {
		st.Ended = client.Terminal(s)
		st.EndCode = int(min(count("endCode"), 4999))
	}
	if s, _, _ := g.String("errClass"); isFailure(client.FailureClass(s)) {
		st.LastError = client.Failure{Class: client.FailureClass(s), Code: int(min(count("errCode"), 4999))}
	}
	if v := client.Transport(count("via")); v == client.TransportWebSocket || v == client.TransportHTTP {
		st.Via = v
	}
	if ms := count("notReadySince"); ms > 0 {
		st.NotReadySince = time.UnixMilli(int64(ms))
	}
	st.Degraded, st.Offline = flag("degraded"), flag("offline")
	if n := count("refusals"); n > 0 {
		st.Refused = ParseTopicError(g, "refTopic", "refCode", "refMsg")
		if st.Refused.Topic != "" {
			st.Refusals = int(min(n, 1e6))
		} else {
			st.Refused = client.TopicError{}
		}
	}
	return st
}

// ParseTopicError reads a topic error another tab sent: a topic that is
// not a valid name reads as none (zero), a code that is not one as
// "invalid", and the message is cut to client.MaxTopicErrorMessage bytes.
func ParseTopicError(g Getter, topic, code, msg string) client.TopicError {
	var e client.TopicError
	e.Topic, _, _ = g.String(topic)
	if !protocol.ValidTopic(e.Topic) {
		return client.TopicError{}
	}
	e.Code, _, _ = g.String(code)
	if !protocol.ValidErrorCode(e.Code) {
		e.Code = "invalid"
	}
	e.Message, _, _ = g.String(msg)
	if n := client.MaxTopicErrorMessage; len(e.Message) > n {
		for n > 0 && e.Message[n]&0xC0 == 0x80 {
			n--
		}
		e.Message = e.Message[:n]
	}
	return e
}

func isTerminal(t client.Terminal) bool {
	switch t {
	case client.Ended, client.Forbidden, client.RefreshExhausted, client.GaveUp, client.Stopped:
		return true
	}
	return false
}

func isFailure(f client.FailureClass) bool {
	switch f {
	case client.FailNetwork, client.FailRefused, client.FailTimeout, client.FailHeartbeat, client.FailSilent, client.FailToken,
		client.FailTokenExpired, client.FailForbidden, client.FailOrigin, client.FailEnded, client.FailClosed, client.FailSendStalled:
		return true
	}
	return false
}

// ReplyValue is a forwarded request's answer as it crosses the channel:
// SettleValue's fields, and a rate_limited error's retryAfterMs.
func ReplyValue(result []byte, err error) map[string]any {
	v := SettleValue(result, err)
	if se, ok := client.AsServerError(err); ok {
		v["message"] = se.Message // the server's own words, without the leader's request id
		if se.RetryAfter > 0 {
			v["retryAfterMs"] = float64(se.RetryAfter.Milliseconds())
		}
	}
	if re, ok := client.AsRequestError(err); ok {
		v["message"] = re.Detail // the leader's request id means nothing in the follower
	}
	return v
}

// ParseReply reads ReplyValue's fields back into what the leader's core
// settled the follower's request id with: the result (raw JSON), or a
// *client.ServerError or a *client.RequestError of the same kind. A result
// that is not JSON is a ServerError "bad_reply".
func ParseReply(g Getter, id uint64) ([]byte, error) {
	if ok, _, _ := g.Bool("ok"); ok {
		r, _, _ := g.String("result")
		if !protocol.Valid([]byte(r)) {
			return nil, &client.ServerError{ID: id, Code: "bad_reply", Message: "the leader tab relayed a result that is not JSON"}
		}
		return []byte(r), nil
	}
	name, _, _ := g.String("name")
	msg, _, _ := g.String("message")
	if len(msg) > 256 {
		msg = msg[:256]
	}
	var kind error
	switch name {
	case "ServerError":
		code, _, _ := g.String("code")
		if !protocol.ValidErrorCode(code) {
			code = "internal"
		}
		se := &client.ServerError{ID: id, Code: code, Message: msg}
		if ms, ok, err := g.Number("retryAfterMs"); ok && err == nil && ms > 0 && ms <= protocol.MaxTimeoutMs {
			se.RetryAfter = time.Duration(ms) * time.Millisecond
		}
		return nil, se
	case "NotReady":
		kind = client.ErrNotReady
	case "RequestTimeout":
		kind = client.ErrRequestTimeout
	case "InvalidRequest":
		kind = client.ErrInvalidRequest
	case "Aborted":
		kind = client.ErrAborted
	default:
		kind = client.ErrConnectionClosed
	}
	detail := "in the leader tab"
	if msg != "" {
		detail += ": " + msg
	}
	return nil, &client.RequestError{Kind: kind, ID: id, Detail: detail}
}
