package client

import (
	"time"

	"github.com/wsready/wsready/protocol"
)

// Service readiness (stage 4). After open the client subscribes; service is
// Pending until the server answers "subscribed". No answer within
// SubscribeTimeout: subscribe again on the same socket. "unsubscribed":
// subscribe again. A healthy socket is never torn down because the service
// is down. Before stage 4 the client subscribes once after open and keeps
// no service level, so it never notices the service going away.

func (c *Core) serviceOpened(now time.Time) {
	c.subscribe(now)
	if c.cfg.Features.Service {
		c.service = Pending
	}
}

func (c *Core) subscribe(now time.Time) {
	c.stats.SubscribesSent++
	c.trace("subscribe", c.current, "subscribe "+c.cfg.Topic)
	c.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: c.cfg.Topic})
	if c.cfg.Features.Service {
		c.dl[dlSubscribe] = now.Add(c.cfg.SubscribeTimeout)
	}
}

func (c *Core) onSubscribed(s SocketID, m protocol.Message) {
	c.trace("subscribed", s, "subscribed")
	if !c.cfg.Features.Service || m.Topic != c.cfg.Topic {
		return
	}
	c.service = Up
	c.dl[dlSubscribe] = time.Time{}
}

func (c *Core) onUnsubscribed(s SocketID, m protocol.Message, now time.Time) {
	c.trace("unsubscribed", s, "unsubscribed by the server")
	if !c.cfg.Features.Service || m.Topic != c.cfg.Topic {
		return
	}
	c.service = Pending
	c.subscribe(now)
}

func (c *Core) subscribeTimedOut(now time.Time) {
	c.trace("subscribe-timeout", c.current, "no subscribed within "+c.cfg.SubscribeTimeout.String()+"; subscribing again")
	c.subscribe(now)
}

// onUpdate delivers an update and accounts for any updates missed before
// it, within one socket or across a reconnect: until resume replays them,
// a loss must at least be visible.
func (c *Core) onUpdate(s SocketID, m protocol.Message) {
	c.stats.Updates++
	if last := c.stats.LastSeq; last != 0 && m.Seq > last+1 {
		c.stats.SeqGaps++
		c.stats.MissedUpdates += m.Seq - last - 1
	}
	c.stats.LastSeq = m.Seq
	c.emit(Effect{Kind: EffUpdate, Update: Update{Topic: m.Topic, Seq: m.Seq, Data: m.Data, Epoch: s}})
}
