//go:build !js

package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/wsready/wsready/protocol"
)

// The application's control of its users' connections: Disconnect closes
// a user's connections, Revoke also refuses the user's tickets for a
// while. Both act on this node at once and, with NATS (Options.NATS, or a
// JetStream History's connection), on every node that shares it, through
// the core NATS subject wsready.control. A node that starts later learns
// the revocations in force from the others' presence snapshots
// (presence_nats.go). A node away from NATS when a message goes misses it.
//
// A connection's user is its Identity's User or, for the demo's tickets,
// their client id (conn.user). Its connections close with 4003, which a
// stage 6+ client takes as terminal (forbidden), and the application's
// reason, cut to 123 bytes (a close frame's room).

// controlSubject carries Disconnect and Revoke between nodes.
const controlSubject = "wsready.control"

// maxCloseReason is the room for a reason in a close frame (125 bytes of
// payload less the code's 2).
const maxCloseReason = 123

// maxRevocations bounds the users refused at once; a Revoke past it fails
// with ErrTooManyRevocations.
const maxRevocations = 10000

// ErrTooManyRevocations is a Revoke while maxRevocations (10,000) users
// are refused already; errors.Is matches Revoke's error.
var ErrTooManyRevocations = errors.New("too many users revoked at once (10,000)")

// reasonRevoked is the close reason of a revoked user's connections.
const reasonRevoked = "forbidden"

// controlMsg is one control message between nodes.
type controlMsg struct {
	Node   string `json:"n"`               // the sender: its own message is done already
	Op     string `json:"op"`              // opDisconnect, opRevoke, opClearRevocations
	User   string `json:"u,omitempty"`     // disconnect, revoke
	Reason string `json:"r,omitempty"`     // disconnect: the close reason
	Until  int64  `json:"until,omitempty"` // revoke: until when (Unix ms); 0 lifts it
}

const (
	opDisconnect       = "disconnect"
	opRevoke           = "revoke"
	opClearRevocations = "clear" // the demo's Revoke switch pressed again
)

// checkUser refuses a user id no connection can have.
func checkUser(user string) error {
	if user == "" || len(user) > MaxIdentityBytes {
		return fmt.Errorf("%w: a user is 1 to %d bytes", ErrBadIdentity, MaxIdentityBytes)
	}
	return nil
}

// closeReason makes an application's reason fit a close frame: valid
// UTF-8, at most maxCloseReason bytes.
func closeReason(reason string) string {
	return truncateUTF8(strings.ToValidUTF8(reason, ""), maxCloseReason)
}

// Disconnect closes every connection of user, on this node and on every
// node that shares its NATS, with 4003 (a stage 6+ client stops: terminal
// forbidden) and reason, cut to 123 bytes; "" reads "disconnected". The
// user may connect again at once: Revoke keeps it out. It fails for a user
// id no identity can have, or when the message could not reach NATS
// within ctx (5s if it has no deadline; this node's connections are
// closed already).
func (s *Server) Disconnect(ctx context.Context, user, reason string) error {
	if err := checkUser(user); err != nil {
		return fmt.Errorf("failed to disconnect: %w", err)
	}
	if reason = closeReason(reason); reason == "" {
		reason = "disconnected"
	}
	s.disconnectLocal(user, reason)
	if err := s.sendControl(ctx, controlMsg{Op: opDisconnect, User: user, Reason: reason}); err != nil {
		return fmt.Errorf("failed to disconnect on the other nodes: %w", err)
	}
	return nil
}

// Revoke refuses user for d, on this node and on every node that shares
// its NATS: its connections close with 4003 (reason "forbidden") and its
// tickets are refused with 4003 until d has passed. d <= 0 lifts a
// revocation. At most 10,000 users are refused at once (an expired one
// makes room): one more fails with ErrTooManyRevocations. It also fails
// for a user id no identity can have, or when the message could not reach
// NATS within ctx (this node has acted already).
func (s *Server) Revoke(ctx context.Context, user string, d time.Duration) error {
	if err := checkUser(user); err != nil {
		return fmt.Errorf("failed to revoke: %w", err)
	}
	now := s.opts.Now()
	m := controlMsg{Op: opRevoke, User: user}
	if d > 0 {
		until := now.Add(d)
		if err := s.revocations.add(user, until, now); err != nil {
			return fmt.Errorf("failed to revoke: %w", err)
		}
		m.Until = until.UnixMilli()
		s.disconnectLocal(user, reasonRevoked)
	} else {
		s.revocations.lift(user)
	}
	if err := s.sendControl(ctx, m); err != nil {
		return fmt.Errorf("failed to revoke on the other nodes: %w", err)
	}
	return nil
}

// revoked reports whether user's credentials are refused now. Every path
// that admits a user (tickets, and JWTs) asks it.
func (s *Server) revoked(user string) bool {
	return user != "" && s.revocations.has(user, s.opts.Now())
}

// disconnectLocal closes this node's connections of user with 4003.
func (s *Server) disconnectLocal(user, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.conns {
		// served is stored after the identity is set (auth_connect.go), so its
		// identity is read after it was written; clientID is under s.mu.
		if c.served.Load() && c.user() == user {
			c.closeAsync(protocol.CloseForbidden, reason)
			n++
		}
	}
	if n > 0 {
		s.log.Info("user's connections closed by the application", "conns", n)
	}
}

// controlFlushTimeout bounds the wait for NATS to take a control message
// when the caller's ctx has no deadline.
const controlFlushTimeout = 5 * time.Second

// sendControl tells the other nodes, and waits until NATS has the message
// (or ctx ends; controlFlushTimeout if ctx has no deadline). Without NATS
// there is nobody to tell.
func (s *Server) sendControl(ctx context.Context, m controlMsg) error {
	nc := s.opts.NATS
	if nc == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, controlFlushTimeout)
		defer cancel()
	}
	m.Node = s.presence.node
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := nc.Publish(controlSubject, data); err != nil {
		return err
	}
	return nc.FlushWithContext(ctx)
}

// onControl acts on another node's Disconnect or Revoke.
func (s *Server) onControl(msg *nats.Msg) {
	var m controlMsg
	if json.Unmarshal(msg.Data, &m) != nil || m.Node == s.presence.node {
		return
	}
	if m.Op != opClearRevocations && checkUser(m.User) != nil {
		return
	}
	switch m.Op {
	case opDisconnect:
		s.disconnectLocal(m.User, closeReason(m.Reason))
	case opRevoke:
		if m.Until == 0 {
			s.revocations.lift(m.User)
			return
		}
		now := s.opts.Now()
		if err := s.revocations.add(m.User, time.UnixMilli(m.Until), now); err != nil {
			s.log.Warn("a revocation from another node was not kept", "cause", err.Error())
		}
		s.disconnectLocal(m.User, reasonRevoked)
	case opClearRevocations:
		s.revocations.clear()
	}
}

// clearRevocations lifts every revocation, on every node (the demo's
// Revoke switch pressed again).
func (s *Server) clearRevocations(ctx context.Context) error {
	s.revocations.clear()
	return s.sendControl(ctx, controlMsg{Op: opClearRevocations})
}

// revocationSet is the users refused, each until a time; bounded by
// maxRevocations, expired entries dropped when room is needed.
type revocationSet struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// revocation is one entry as a presence snapshot carries it.
type revocation struct {
	User  string `json:"u"`
	Until int64  `json:"t"` // Unix ms
}

// add refuses user until then (a later until wins).
func (r *revocationSet) add(user string, until, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]time.Time{}
	}
	if old, ok := r.m[user]; ok {
		if until.After(old) {
			r.m[user] = until
		}
		return nil
	}
	if len(r.m) >= maxRevocations {
		r.pruneLocked(now)
		if len(r.m) >= maxRevocations {
			return ErrTooManyRevocations
		}
	}
	r.m[user] = until
	return nil
}

func (r *revocationSet) pruneLocked(now time.Time) {
	for u, until := range r.m {
		if !now.Before(until) {
			delete(r.m, u)
		}
	}
}

func (r *revocationSet) lift(user string) {
	r.mu.Lock()
	delete(r.m, user)
	r.mu.Unlock()
}

func (r *revocationSet) clear() {
	r.mu.Lock()
	clear(r.m)
	r.mu.Unlock()
}

func (r *revocationSet) has(user string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.m[user]
	return ok && now.Before(until)
}

// count is how many users are refused now.
func (r *revocationSet) count(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked(now)
	return len(r.m)
}

// list is every revocation in force, for a presence snapshot.
func (r *revocationSet) list(now time.Time) []revocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked(now)
	out := make([]revocation, 0, len(r.m))
	for u, until := range r.m {
		out = append(out, revocation{User: u, Until: until.UnixMilli()})
	}
	return out
}

// merge takes another node's revocations (its snapshot's); entries no node
// sends, and those past the bound, are left out.
func (r *revocationSet) merge(list []revocation, now time.Time) {
	for _, v := range list {
		if checkUser(v.User) == nil && utf8.ValidString(v.User) && now.Before(time.UnixMilli(v.Until)) {
			r.add(v.User, time.UnixMilli(v.Until), now)
		}
	}
}
