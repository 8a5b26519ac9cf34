// Package client is wsready's client brain: three-layer readiness, the
// request registry, the heartbeat watchdog, the stale-socket filter, the
// service subscription, the reconnection policy and the session contract,
// for every stage of the demo.
//
// It does no I/O, starts no goroutines, reads no clock and draws no random
// numbers of its own. A driver steps a Core with events (Opened, Received,
// Closed, Tick, Online, Offline, Hidden, Visible, TokenReady, TokenFailed,
// Request, Reconnect, Stop), each stamped with the time it happened, and
// then drains Effects: open a socket, send a frame, close a socket, arm the
// one timer at an instant, settle a request, ask for a token, publish a
// state change, a feed update or a reconnect record. The browser driver (package wasm), the native
// driver (package client/native) and the fleet simulator all run this code.
//
// Where each rule lives:
//
//	readiness.go   the three levels and READY
//	registry.go    stage 1: every request settles; typed errors
//	heartbeat.go   stage 2: server pings and the watchdog
//	stale.go       stage 3: events from replaced sockets are ignored
//	service.go     stage 4: subscribe, resubscribe, service level
//	reconnector.go stages 0-6: every reconnect rule in one pure value, shared with the simulator:
//	               the delay and its reset, the watchdog's immediate reconnect, the waits for
//	               online and a visible page (stage 5: backoff with jitter, cooldown; stage 6:
//	               budget, window, refreshes, terminal states)
//	reconnect.go   carries out the Reconnector's decisions: records, dials, offline/online
//	classify.go    stage 6: what each close means
//	session.go     stage 6: tokens, the window, terminal states, records, Reconnect, visibility
//	deadlines.go   the named deadlines the one timer serves
//	policy.go      the delay policies, shared with the simulator
package client
