package protocol

// Close codes. 1000-1015 are RFC 6455's; 4000-4999 are wsready's own. The
// docs/protocol.md's close-code table says who sends each and what a client does about it.
const (
	CloseNormal           = 1000 // the client stopped on purpose; do not reconnect
	CloseGoingAway        = 1001 // the server is draining or shutting down; retry with backoff
	CloseAbnormal         = 1006 // no close frame (network loss, refused handshake); retry with backoff
	ClosePolicyViolation  = 1008 // forbidden; stop and tell the user
	CloseMessageTooBig    = 1009 // a frame exceeded MaxFrameBytes
	CloseInternalError    = 1011 // the server failed; retry with backoff
	CloseServiceRestart   = 1012 // the server is restarting (Restart switch); retry with backoff
	CloseTryAgainLater    = 1013 // overloaded; wait at least the retry-after the reason gives
	CloseFlapping         = 4000 // the Flapping switch closed the connection on purpose
	CloseTokenExpired     = 4001 // reserved: fetch a fresh token, then retry
	CloseForbidden        = 4003 // reserved: stop and tell the user
	CloseHeartbeatTimeout = 4408 // sent by the client when its watchdog gave up on the server
	CloseSendStalled      = 4409 // sent by the client when its own sends stopped draining (stage 8: bufferedAmount) and a probe went unanswered
	CloseSlowConsumer     = 4429 // the server's send queue to this client passed its byte bound, or a write made no progress within the write timeout
)

// ReasonOriginNotAllowed is the close reason (with 1008) a server gives a
// page whose origin it does not accept: it accepts the upgrade and closes,
// because a browser sees a refused handshake only as a bare 1006.
const ReasonOriginNotAllowed = "origin not allowed"
