//go:build !js

package client

import "github.com/wsready/wsready/protocol"

// tooLarge says why a request's or publish's frame (m, as call has it)
// would exceed protocol.MaxFrameBytes, or "": the server closes a
// connection that sends a larger frame (1009), failing every request on
// it. In the browser (GOOS=js) it is nil: wsready.js measures the params
// before they reach the wasm, whose size this would add to.
var tooLarge = func(m protocol.Message, id uint64, key string, queue bool) string {
	// A method's byte can take six in the frame (<, > and & are escaped as
	// \u003c, ...); a topic's cannot (protocol.ValidTopic).
	if len(m.Params)+len(m.Data)+6*len(m.Method)+len(m.Topic) <= protocol.MaxFrameBytes-frameSlack {
		return ""
	}
	// As it would be sent: its id, the longest timeoutMs, its key or one
	// as long as those drawn.
	m.ID, m.TimeoutMs, m.Key = id, protocol.MaxTimeoutMs, key
	if key == "" && queue {
		m.Key = keyChars[:keyLen]
	}
	if n := len(protocol.Encode(m)); n > protocol.MaxFrameBytes {
		return "too large: " + utoa(uint64(n)) + " bytes as a frame, and the server takes at most " + utoa(protocol.MaxFrameBytes)
	}
	return ""
}

// frameSlack is more than a frame adds to its params or data, method (at
// six bytes a byte) and topic: a request within MaxFrameBytes-frameSlack
// of them fits.
const frameSlack = 1024
