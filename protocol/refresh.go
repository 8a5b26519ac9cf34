package protocol

// In-band token refresh: a client whose token is about to expire sends a
// fresh one on the live connection instead of waiting for the 4001 close
// and dialing again. The server checks it as it checks an auth frame's
// token, and on success answers authenticated with the new expiresAt
// (the connection's expiry moves there); a token naming another user or
// tenant closes the connection with 4003. A refresh the server will not
// take now (more than RefreshBurst within RefreshEvery, or one on a
// connection that never authenticated) is answered with an error frame
// whose code is ErrRefreshRefused; the connection and its old expiry stay.
// An older server answers the frame with unknown_type: the client then
// sees the 4001 at expiry, as before.

// TypeRefresh is the client's refresh frame: {"type":"refresh","token":"..."},
// the token at most MaxTokenBytes, answered by authenticated or by an
// error frame (ErrRefreshRefused).
const TypeRefresh Type = "refresh"

// ErrRefreshRefused answers a refresh the server does not take now (too
// many in a row, or a connection with no token to refresh). The
// connection stays and expires when it would have; retryAfterMs, when
// set, says when a refresh would be taken again.
const ErrRefreshRefused = "refresh_refused"

// RefreshBurst refreshes per connection are taken at once, and one more
// per RefreshEvery after that: a client refreshes once per token lifetime
// (at 75-90% of it), so even a 2 s token needs one every 1.5 s at most.
// A flood beyond is refused with ErrRefreshRefused, never read as a new
// token each time.
const (
	RefreshBurst = 3
	RefreshEvery = 1000 // ms
)
