//go:build !js

package server

import (
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"
)

// The authority keeps the accounting of tokens (our tickets and the
// application's JWTs alike): the revoked users, the rejections that feed
// the backstop for looping clients, the ticket issuance limiter, and the
// counts in Stats. A token that verified is accounted for against its
// user at the address it came from (anyone holding a stale one can replay
// it); one that did not, against the address alone (its user is whatever
// its sender wrote).

type authority struct {
	key []byte
	jwt *jwtVerifier // Options.JWT's; nil: tickets only

	mu        sync.Mutex
	byID      rejectionLog // verified tokens refused (revoked, expired), per user at an address (userAddrKey)
	byAddr    rejectionLog // tokens that did not verify (garbage, forged, another key's, a JWT not for us), per remote address
	issuance  ticketLimiter
	backstops uint64 // connections refused by the backstop
	rejected  uint64
	accepted  uint64
	// refreshed and refreshRefused count in-band refreshes taken and
	// refused (auth_refresh.go).
	refreshed      uint64
	refreshRefused uint64
}

// The bounds of what peers can grow here. maxTrackedAddr also bounds the
// ticket limiters of POST /api/token.
const (
	maxTrackedID   = 10000
	maxTrackedAddr = 10000
)

// newAuthority makes the authority of o's tokens. It fails when
// Options.JWT is not usable (a key that does not parse, a JWKS file that
// cannot be read).
func newAuthority(o *Options) (*authority, error) {
	key := o.AuthKey
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	jv, err := newJWTVerifier(o.JWT, o.Logger, o.Now)
	if err != nil {
		return nil, fmt.Errorf("failed to create the server: %w", err)
	}
	return &authority{key: key, jwt: jv,
		byID:     newRejectionLog(o.RejectionThreshold, o.RejectionWindow, maxTrackedID),
		byAddr:   newRejectionLog(o.BadTicketThreshold, o.RejectionWindow, maxTrackedAddr),
		issuance: newTicketLimiter(o.TicketRate, o.TicketBurst, maxTrackedAddr),
	}, nil
}

// rejectionLog counts rejections per key (a user, or a remote
// address) over a sliding window, for the backstop: a key rejected more
// than threshold times within the window is over. It holds at most max
// keys and at most threshold+1 times per key. When a new key would pass
// max, the keys whose newest rejection is older than the window are
// pruned; if it is still full the new key goes uncounted (a flood of new
// keys cannot grow it, at the price of not backstopping them).
type rejectionLog struct {
	threshold int
	window    time.Duration
	max       int
	m         map[string][]time.Time // newest last
}

func newRejectionLog(threshold int, window time.Duration, max int) rejectionLog {
	return rejectionLog{threshold: threshold, window: window, max: max, m: map[string][]time.Time{}}
}

func (l *rejectionLog) add(key string, now time.Time) {
	ts, ok := l.m[key]
	if !ok && len(l.m) >= l.max {
		l.prune(now)
		if len(l.m) >= l.max {
			return // full of live entries: the new key goes uncounted
		}
	}
	ts = append(ts, now)
	if len(ts) > l.threshold+1 {
		ts = ts[len(ts)-l.threshold-1:]
	}
	l.m[key] = ts
}

// count is key's rejections within the window.
func (l *rejectionLog) count(key string, now time.Time) int {
	n := 0
	for _, t := range l.m[key] {
		if now.Sub(t) <= l.window {
			n++
		}
	}
	return n
}

func (l *rejectionLog) over(key string, now time.Time) bool { return l.count(key, now) > l.threshold }

func (l *rejectionLog) prune(now time.Time) {
	for k, ts := range l.m {
		if len(ts) == 0 || now.Sub(ts[len(ts)-1]) > l.window {
			delete(l.m, k)
		}
	}
}

// rejectUnverified accounts for a token that did not verify (a ticket not
// signed with our key, a JWT that fails its checks, or not a token at
// all), from address addr. It reports whether addr
// is over BadTicketThreshold already: the backstop refuses it then, and
// does not count it again (the window lets the address in again once its
// old rejections age out).
//
// Such a token's user is the sender's to choose, so it is counted
// against the address, never the user: counting it against the user let
// anyone lock a client out by sending 21 forged tickets naming it. A
// connection carries one token (its first frame, and any refusal closes
// it), so there is nothing more to count per connection.
func (a *authority) rejectUnverified(addr string, now time.Time) (backstop bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if addr != "" && a.byAddr.over(addr, now) {
		a.backstops++
		return true
	}
	a.rejected++
	if addr != "" {
		a.byAddr.add(addr, now)
	}
	return false
}

// rejectVerified counts a rejection of a token that verified (revoked,
// expired) against its user at the address it came from (addrKey).
//
// Not against the user alone: a token that verified may still be replayed
// by anyone who holds it (an expired one copied from a log, a proxy or a
// shared machine), and counting its replays against the user let anyone
// with a stale token get its owner's next ones refused. The caller asks
// only for a token refused anyway, so the backstop never refuses a token
// that is good now; per address, a replayer elsewhere does not even turn
// the owner's expired token's 4001 (refresh) into a final 4003.
func (a *authority) rejectVerified(id, addr string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rejected++
	a.byID.add(userAddrKey(id, addr), now)
}

// looping reports whether user id's verified tokens from addr were
// rejected more than RejectionThreshold times within the window: the
// backstop refuses it without counting it again.
func (a *authority) looping(id, addr string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID.over(userAddrKey(id, addr), now) {
		a.backstops++
		return true
	}
	return false
}

// userAddrKey is byID's key: the address first, since an address never
// holds a NUL and a user may, so the user is everything after the first.
func userAddrKey(id, addr string) string { return addr + "\x00" + id }

// userOf is the user of a byID key.
func userOf(key string) string {
	_, id, _ := strings.Cut(key, "\x00")
	return id
}

// forgetRejections clears the rejection windows, per user and per
// address (the demo's Reset counters).
func (a *authority) forgetRejections() {
	a.mu.Lock()
	clear(a.byID.m)
	clear(a.byAddr.m)
	a.mu.Unlock()
}

// AuthStats is the authority's accounting in /api/stats.
type AuthStats struct {
	Mode      AuthMode `json:"mode"`
	Accepted  uint64   `json:"accepted"`
	Rejected  uint64   `json:"rejected"`
	Backstops uint64   `json:"backstops"` // refused by the backstop: a looping user or address
	// Refreshed counts in-band refreshes taken (a token's expiry moved
	// without a reconnect), RefreshRefused those refused (flood, no token,
	// another user, or a token refused as a first one would be).
	Refreshed      uint64 `json:"refreshed"`
	RefreshRefused uint64 `json:"refreshRefused"`
	Revoked        int    `json:"revoked"` // users refused now (Server.Revoke), every node's
	// TrackedIDs are users with recent rejections of tokens that
	// verified, counted once per address they came from; TrackedAddrs
	// remote addresses with recent rejections of tokens that did not.
	TrackedIDs   int `json:"trackedIds"`
	TrackedAddrs int `json:"trackedAddrs"`
	// RejectionsByID counts each user's rejections in the sliding
	// window, from every address; user ids name people, so only in Demo
	// mode.
	RejectionsByID map[string]int `json:"rejectionsById,omitempty"`
}

func (a *authority) stats(now time.Time, byID bool) AuthStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byID.prune(now)
	a.byAddr.prune(now)
	st := AuthStats{Accepted: a.accepted, Rejected: a.rejected, Backstops: a.backstops, Refreshed: a.refreshed, RefreshRefused: a.refreshRefused,
		TrackedIDs: len(a.byID.m), TrackedAddrs: len(a.byAddr.m)}
	if byID {
		st.RejectionsByID = map[string]int{}
		for k := range a.byID.m {
			if n := a.byID.count(k, now); n > 0 {
				st.RejectionsByID[userOf(k)] += n
			}
		}
	}
	return st
}
