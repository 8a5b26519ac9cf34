// Package client is wsready's client brain: three-layer readiness, the
// request registry, the heartbeat watchdog, the stale-socket filter, the
// service subscription and the reconnection policy, for all six stages of
// the demo.
//
// It does no I/O, starts no goroutines, reads no clock and draws no random
// numbers of its own. A driver steps a Core with events (Opened, Received,
// Closed, Tick, Online, Offline, Request, Stop), each stamped with the time
// it happened, and then drains Effects: open a socket, send a frame, close a
// socket, arm the one timer at an instant, settle a request, publish a state
// change or a feed update. The browser driver (package wasm), the native
// driver (package client/native) and the fleet simulator all run this code.
//
// Where each rule lives:
//
//	readiness.go   the three levels and READY
//	registry.go    stage 1: every request settles; typed errors
//	heartbeat.go   stage 2: server pings and the watchdog
//	stale.go       stage 3: events from replaced sockets are ignored
//	service.go     stage 4: subscribe, resubscribe, service level
//	reconnect.go   stage 5: backoff with jitter, cooldown reset, offline/online
//	policy.go      the delay policies, shared with the simulator
package client
