package client

// The Reconnector's tab rule (stage 8, tabs.go): a tab that follows
// another's connection dials nothing; a failure while following waits for
// leadership (OutcomeWaitLeader).

// BecameFollower notes that another tab holds the connection: nothing is
// dialled until BecameLeader.
func (rc *Reconnector) BecameFollower() { rc.set(rcFollower, true) }

// BecameLeader notes that this tab holds the connection now: the backoff
// starts over, and it reports whether the client may dial at once (not
// while it waits for the network or a visible page).
func (rc *Reconnector) BecameLeader() (dialNow bool) {
	rc.set(rcFollower, false)
	rc.reset()
	return rc.mayDial()
}

// IsFollower reports whether another tab holds the connection.
func (rc *Reconnector) IsFollower() bool { return rc.is(rcFollower) }
