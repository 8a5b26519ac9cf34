package client

// accept decides whether an event from socket s may change the client's
// state. With StaleFilter (stage 3) only the current socket may: a late
// close or message from a socket the client already replaced is ignored.
// Without it (stage 2) every event is taken as the current socket's, which
// is how a late close of a replaced socket tears down a healthy connection
// and leaks it.
func (c *Core) accept(s SocketID, what string) bool {
	if s == c.current && s != 0 {
		return true
	}
	if !c.cfg.on.StaleFilter {
		c.stats.ForeignEvents++
		c.trace("foreign", s, what+" from replaced socket "+s.String()+" taken as current (no stale filter)")
		return true
	}
	c.stats.StaleEvents++
	c.trace("stale", s, "stale "+what+" from replaced socket "+s.String()+" ignored")
	return false
}
