package client

// The Reconnector's waits: nothing is dialled while another tab holds the
// connection (reconnector_tabs.go), while the platform reports no network
// (stage 5) or while the page is hidden (stage 6; at stage 8 only with
// PauseWhenHidden). A failure during a wait decides the wait; its end
// starts the backoff over and reconnects after SoonDelay.

// waitFor says what the client waits for before it may dial again, if
// anything: the tab's leadership first, then the network, then a visible
// page.
func (rc *Reconnector) waitFor() Outcome {
	switch {
	case rc.is(rcFollower):
		return OutcomeWaitLeader
	case rc.r.waitOnline && rc.is(rcOffline):
		return OutcomeWaitOnline
	case rc.r.waitVisible && rc.is(rcHidden):
		return OutcomeWaitVisible
	}
	return ""
}

// WentOffline notes that the platform lost the network. It reports
// whether a scheduled reconnect is cancelled: with the Backoff fix nothing
// is dialled while offline.
func (rc *Reconnector) WentOffline() (cancel bool) {
	rc.set(rcOffline, true)
	return rc.r.waitOnline
}

// CameOnline notes that the network is back. With the Backoff fix the
// backoff starts over, and it reports whether a client that is down
// reconnects after SoonDelay (not while the page still hides it).
func (rc *Reconnector) CameOnline() (dialSoon bool) {
	rc.set(rcOffline, false)
	if !rc.r.waitOnline {
		return false
	}
	rc.reset()
	return rc.mayDial()
}

// WentHidden notes that the page was hidden. It reports whether a
// scheduled reconnect is cancelled: with the Session fix (and at stage 8
// PauseWhenHidden) nothing is dialled while hidden.
func (rc *Reconnector) WentHidden() (cancel bool) {
	rc.set(rcHidden, true)
	return rc.r.waitVisible
}

// BecameVisible notes that the page is visible again. While hidden pages
// wait, the backoff starts over, and it reports whether a client that is
// down reconnects after SoonDelay (not while it is offline).
func (rc *Reconnector) BecameVisible() (dialSoon bool) {
	rc.set(rcHidden, false)
	if !rc.r.waitVisible {
		return false
	}
	rc.reset()
	return rc.mayDial()
}

func (rc *Reconnector) mayDial() bool { return rc.waitFor() == "" }

// IsOnline reports the network as the platform last reported it.
func (rc *Reconnector) IsOnline() bool { return !rc.is(rcOffline) }

// IsHidden reports whether the page is hidden.
func (rc *Reconnector) IsHidden() bool { return rc.is(rcHidden) }
