package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// Service readiness (stage 4) and topics. After open the client subscribes
// to every topic wanted: Config.Topic if set, and every topic the app
// subscribed to. The service layer is Up when the server has answered for
// every one of them on this socket, and Pending until then; with no topic
// wanted it is Up when the server says it serves the session (its
// welcome frame; an answer to a subscribe says so too, for a server that
// sends none). READY means the server took every topic the app asked
// for, so a topic the server refused (forbidden, invalid_topic,
// too_many_subscriptions, or a code of the app's own from an Authorize
// hook) holds the service layer Down: the app hears of it
// (EffTopicError), State.Refused names it with the server's code and
// message, and READY waits until the app unsubscribes it. It is not asked
// for again on this socket, whose refusal it is: asking again would hammer
// the server for the same answer; the next socket (after a loss, on the
// backoff's schedule) asks once again. The socket stays up. Other errors
// (unknown_topic, too_many_topics, unavailable, ...) mean the service does
// not serve the topic now: it stays Pending and is asked for again. No
// answer within SubscribeTimeout: subscribe again on the same socket.
// "unsubscribed": Pending, and subscribe again. A subscribe the app adds
// while READY makes the service Pending until it is answered. A healthy
// socket is never torn down because the service is down. Before stage 4
// the client subscribes once after open and keeps no service level, so it
// never notices the service going away.
//
// Resume (stage 7): the client keeps a cursor per topic, the last seq it
// delivered, and subscribes with since=cursor after every reconnect; the
// server replays what followed. An update at or below the cursor is
// dropped and counted. A "subscribed" whose from is past cursor+1 means
// the server no longer has the start of the gap: the client emits one
// ContinuityLost with the missing range and moves its cursor on. A stream
// that changed (the server's history was reset) is a ContinuityLost with an
// unknown end.

// Cursor is where a client stands in a topic: the last seq it delivered, in
// which stream. Drivers persist them (Core.Cursors) and hand them back in
// Config.Cursors.
type Cursor struct {
	Topic  string
	Stream string
	Seq    int64
}

// ContinuityLost reports updates of Topic the client will never deliver:
// From to To inclusive. To is 0 when the end is unknown (Reset: the
// server's history for the topic was reset, so the old cursor means
// nothing in the new stream, which is taken from its start).
type ContinuityLost struct {
	Topic string
	From  int64
	To    int64
	Reset bool
}

// TopicStats is one topic's accounting since the client started.
type TopicStats struct {
	Topic      string
	Cursor     int64  // the last seq delivered (0: none)
	Stream     string // the stream the cursor belongs to, once known
	Subscribed bool   // the server confirmed the subscription on the current socket
	Delivered  int    // updates delivered to the app
	Replayed   int    // of them, sent by the server as a replay after a subscribe with since
	Duplicates int    // updates at or below the cursor: dropped with Resume, delivered without it
	Gaps       int    // times an update skipped past cursor+1, or a subscribed reported a loss
	Lost       int64  // updates skipped by those gaps (known ranges only)
}

type topicState struct {
	TopicStats
	has       bool       // the cursor is known (Resume: subscribe with since)
	wanted    bool       // the app (or the service) wants it
	app       bool       // the app subscribed to it (the service topic may be both)
	replayTo  int64      // updates up to this seq are the current replay
	sentSince bool       // the subscribe on this socket carried since
	presence  bool       // the app asked for the topic's presence events
	refused   bool       // the server refused it on this socket for good (refusal)
	refusal   TopicError // the refusal, while refused
	// joining: the app subscribed while the service was Up on this socket.
	// Until the server answers, the topic does not hold READY: an app
	// adding a topic must not make its requests fail NotReady for a round
	// trip (the topic's own Subscribed says when it is live). After a
	// reconnect, or an unsubscribed from the server, it counts again.
	joining bool
}

func (c *Core) topicOf(name string) *topicState {
	for _, t := range c.topics {
		if t.Topic == name {
			return t
		}
	}
	return nil
}

func (c *Core) addTopic(name string) *topicState {
	t := c.topicOf(name)
	if t == nil {
		t = &topicState{TopicStats: TopicStats{Topic: name}}
		c.topics = append(c.topics, t)
	}
	return t
}

// SubscribeOptions are a subscribe's options.
type SubscribeOptions struct {
	// Since, with HasSince, asks the first subscribe for a replay of what
	// followed seq Since (Resume replays on reconnect in any case).
	Since    int64
	HasSince bool
	// Presence asks for the topic's presence events (EffPresence): a
	// user's first connection joining it, its last leaving.
	Presence bool
}

// Subscribe asks for topic's updates (EffUpdate), from now on and after
// every reconnect. With hasSince the first subscribe asks for a replay of
// what followed since (Resume replays on reconnect in any case). It
// reports false for an invalid topic name (protocol.ValidTopic).
func (c *Core) Subscribe(topic string, since int64, hasSince bool, now time.Time) bool {
	return c.SubscribeWith(topic, SubscribeOptions{Since: since, HasSince: hasSince}, now)
}

// SubscribeWith is Subscribe with options. Subscribing again to a topic
// with another Presence sends the subscribe again (with since = the
// cursor under Resume, so nothing is lost or repeated).
func (c *Core) SubscribeWith(topic string, o SubscribeOptions, now time.Time) bool {
	if !protocol.ValidTopic(topic) || o.Since < 0 {
		return false
	}
	t := c.addTopic(topic)
	t.app = true
	if o.HasSince {
		if !t.has || t.Cursor != o.Since {
			t.Stream = "" // a cursor from the app: whatever stream the server has
		}
		t.Cursor, t.has = o.Since, true
	}
	again := t.wanted && t.presence != o.Presence
	up := c.transport == Up && c.current != 0 && c.serviceLevel() == Up
	t.presence = o.Presence
	if c.primary == nil {
		c.primary = t
	}
	if !t.wanted || again {
		t.wanted = true
		t.Subscribed = false
		t.joining = up
		if c.transport == Up && c.current != 0 {
			c.subscribeTopic(t, now)
		}
	}
	c.after(now)
	return true
}

// Unsubscribe stops topic's updates (the service topic stays subscribed).
func (c *Core) Unsubscribe(topic string, now time.Time) {
	t := c.topicOf(topic)
	if t == nil || !t.app {
		return
	}
	t.app = false
	if topic == c.cfg.Topic {
		return
	}
	t.wanted, t.Subscribed, t.refused = false, false, false
	if c.transport == Up {
		c.send(protocol.Message{Type: protocol.TypeUnsubscribe, Topic: topic})
	}
	c.settledAll()
	c.after(now)
}

// Topics returns each topic's accounting, in the order they were first
// named (Config.Topic first).
func (c *Core) Topics() []TopicStats {
	out := make([]TopicStats, 0, len(c.topics))
	for _, t := range c.topics {
		out = append(out, t.TopicStats)
	}
	return out
}

// Cursors returns the cursor of every topic that has one, for a driver to
// persist.
func (c *Core) Cursors() []Cursor {
	var out []Cursor
	for _, t := range c.topics {
		if t.has && t.Cursor > 0 {
			out = append(out, Cursor{Topic: t.Topic, Stream: t.Stream, Seq: t.Cursor})
		}
	}
	return out
}

func (c *Core) serviceOpened(now time.Time) {
	for _, t := range c.topics {
		t.Subscribed, t.refused, t.joining = false, false, false
		if t.wanted {
			c.subscribeTopic(t, now)
		}
	}
}

func (c *Core) subscribeTopic(t *topicState, now time.Time) {
	c.stats.SubscribesSent++
	t.refused = false
	c.trace("subscribe", c.current, "subscribe "+t.Topic)
	m := protocol.Message{Type: protocol.TypeSubscribe, Topic: t.Topic}
	// With Resume every subscribe carries the cursor. Before stage 7 only a
	// since the app gave is sent, and only until something was delivered:
	// those stages subscribe live after a reconnect.
	if t.has && (c.cfg.on.Resume || t.Delivered == 0) {
		m.HasSince, m.Since, m.Stream = true, t.Cursor, t.Stream
	}
	t.sentSince = m.HasSince
	m.Presence = t.presence
	c.send(m)
	if c.cfg.on.Service {
		c.dl[dlSubscribe] = now.Add(c.cfg.SubscribeTimeout)
	}
}

func (c *Core) onSubscribed(s SocketID, m protocol.Message) {
	c.trace("subscribed", s, "subscribed to "+m.Topic)
	c.served = true
	t := c.topicOf(m.Topic)
	if t == nil || !t.wanted {
		return
	}
	t.Subscribed, t.refused, t.joining = true, false, false
	if t.sentSince {
		t.replayTo = m.Head
	}
	if c.cfg.on.Resume || t.sentSince {
		c.continuity(t, m)
	}
	c.settledAll()
}

// continuity compares a subscribed's from and stream with the cursor.
func (c *Core) continuity(t *topicState, m protocol.Message) {
	switch {
	case m.From <= 0:
		// An old server: it says nothing about where it starts.
	case t.has && t.Stream != "" && m.Stream != "" && m.Stream != t.Stream:
		c.lose(ContinuityLost{Topic: t.Topic, From: t.Cursor + 1, Reset: true})
		t.Cursor = m.From - 1
	case t.has && m.From > t.Cursor+1:
		lost := ContinuityLost{Topic: t.Topic, From: t.Cursor + 1, To: m.From - 1}
		t.Lost += lost.To - lost.From + 1
		c.stats.MissedUpdates += lost.To - lost.From + 1
		c.lose(lost)
		t.Cursor = m.From - 1
	case !t.has:
		t.Cursor = m.From - 1
	}
	t.has = true
	if m.Stream != "" {
		t.Stream = m.Stream
	}
	if t == c.primary {
		c.stats.LastSeq = t.Cursor
	}
}

func (c *Core) lose(l ContinuityLost) {
	c.stats.ContinuityLost++
	t := c.topicOf(l.Topic)
	t.Gaps++
	c.stats.SeqGaps++
	c.trace("continuity-lost", c.current, "the server no longer has updates of "+l.Topic+" from "+itoa64(l.From))
	c.emit(Effect{Kind: EffContinuityLost, Lost: l})
}

// onWelcome notes that the server serves this socket's session: with no
// topic wanted, the service layer is Up.
func (c *Core) onWelcome(s SocketID, m protocol.Message) {
	c.stats.Welcomes++
	c.served = true
	c.trace("welcome", s, "the server serves the session")
}

// serviceLevel is the service layer of an open socket (Service): Down
// while the server refuses a wanted topic (refusal) on it; Up when every
// wanted topic is subscribed (or joining), and with none wanted when the
// server served the session; else Pending.
func (c *Core) serviceLevel() Level {
	wanted, pending := false, false
	for _, t := range c.topics {
		if t.wanted {
			wanted = true
			if t.refused {
				return Down
			}
			if !t.Subscribed && !t.joining {
				pending = true
			}
		}
	}
	if !pending && (wanted || c.served) {
		return Up
	}
	return Pending
}

// refusals returns the first wanted topic the server refused on this
// socket, in the order the topics were first named, and how many it
// refused.
func (c *Core) refusals() (first TopicError, n int) {
	for _, t := range c.topics {
		if t.wanted && t.refused {
			if n == 0 {
				first = t.refusal
			}
			n++
		}
	}
	return first, n
}

// settledAll stops the subscribe deadline once nothing waits for an answer.
func (c *Core) settledAll() {
	for _, t := range c.topics {
		if t.wanted && !t.Subscribed && !t.refused {
			return
		}
	}
	c.dl[dlSubscribe] = time.Time{}
}

// refusal says a topic error is the server's final word for this socket:
// the app may not have the topic, and asking again will not change that.
// That is every code but the server's own transient ones: forbidden,
// invalid_topic, too_many_subscriptions, and any code of the app's own
// (a server's Authorize hook refusing with a *server.Error).
func refusal(code string) bool {
	switch code {
	case protocol.ErrUnknownTopic, protocol.ErrTooManyTopics, protocol.ErrUnavailable, protocol.ErrInternal, protocol.ErrTimeout, protocol.ErrRateLimited:
		return false
	}
	return true
}

func (c *Core) onUnsubscribed(s SocketID, m protocol.Message, now time.Time) {
	c.trace("unsubscribed", s, "unsubscribed from "+m.Topic)
	t := c.topicOf(m.Topic)
	if t == nil || !t.wanted {
		return // the answer to our own unsubscribe
	}
	t.Subscribed, t.joining = false, false // the service dropped it: it holds READY until it is back
	if !c.cfg.on.Service {
		return
	}
	c.subscribeTopic(t, now)
}

// onPresence hands a presence frame to the app if it asked for the
// topic's presence.
func (c *Core) onPresence(m protocol.Message) {
	if t := c.topicOf(m.Topic); t != nil && t.wanted && t.presence {
		c.emit(Effect{Kind: EffPresence, Presence: PresenceEvent{Topic: m.Topic, Event: m.Event, User: m.User}})
	}
}

// onTopicError handles an error frame about a topic: the app hears of it.
// A refusal (see refusal) is the server's answer for this socket, and
// holds the service layer Down until the app unsubscribes the topic; a
// transient error (unknown_topic, too_many_topics, unavailable, internal,
// timeout, rate_limited) is retried at the subscribe deadline (Service).
func (c *Core) onTopicError(m protocol.Message) {
	c.trace("topic-error", c.current, "subscribe to "+m.Topic+" refused: "+m.Error.Code)
	t := c.topicOf(m.Topic)
	if t == nil || !t.wanted {
		return
	}
	e := TopicError{Topic: m.Topic, Code: m.Error.Code, Message: cutMessage(m.Error.Message, MaxTopicErrorMessage)}
	c.emit(Effect{Kind: EffTopicError, TopicError: e})
	if refusal(m.Error.Code) && !t.Subscribed {
		t.refused, t.refusal, t.joining = true, e, false
		c.settledAll()
	}
}

func (c *Core) subscribeTimedOut(now time.Time) {
	c.trace("subscribe-timeout", c.current, "no subscribed within "+c.cfg.SubscribeTimeout.String()+"; subscribing again")
	for _, t := range c.topics {
		if t.wanted && !t.Subscribed && !t.refused {
			c.subscribeTopic(t, now)
		}
	}
}

// onUpdate delivers an update and accounts for any updates missed before
// it, within one socket or across a reconnect. With Resume an update at or
// below the cursor is dropped; without it, delivered and counted.
func (c *Core) onUpdate(s SocketID, m protocol.Message) {
	t := c.topicOf(m.Topic)
	if t == nil || !t.wanted {
		return // a topic we left: its last updates may still be on the way
	}
	if t.has && m.Seq <= t.Cursor {
		t.Duplicates++
		if c.cfg.on.Resume {
			c.stats.DuplicatesDropped++
			return
		}
		c.stats.Duplicates++
	} else if t.has && m.Seq > t.Cursor+1 && (t.Delivered > 0 || t.sentSince || c.cfg.on.Resume) {
		t.Gaps++
		t.Lost += m.Seq - t.Cursor - 1
		c.stats.SeqGaps++
		c.stats.MissedUpdates += m.Seq - t.Cursor - 1
	}
	if m.Seq > t.Cursor || !t.has {
		t.Cursor = m.Seq
	}
	t.has = true
	t.Delivered++
	if m.Seq <= t.replayTo {
		t.Replayed++
		c.stats.Replayed++
	}
	c.stats.Updates++
	if t == c.primary {
		c.stats.LastSeq = t.Cursor
	}
	c.emit(Effect{Kind: EffUpdate, Update: Update{Topic: m.Topic, Seq: m.Seq, Data: m.Data, Epoch: uint64(s)}})
}

// initTopics makes Config.Topic's topic, if any (first, always wanted),
// and takes Config.Cursors: the topics they name are resumed from them
// (Config.Topic's too); others are not subscribed until the app asks.
func (c *Core) initTopics() {
	if c.cfg.Topic != "" {
		c.primary = c.addTopic(c.cfg.Topic)
		c.primary.wanted = true
	}
	for _, cur := range c.cfg.Cursors {
		if !protocol.ValidTopic(cur.Topic) || cur.Seq < 0 {
			continue
		}
		t := c.addTopic(cur.Topic)
		t.Cursor, t.Stream, t.has = cur.Seq, cur.Stream, true
	}
}

func itoa64(n int64) string { return utoa(uint64(max(n, 0))) }
