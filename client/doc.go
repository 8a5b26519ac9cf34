// Package client is wsready's client brain: three-layer readiness, the
// request registry, the heartbeat watchdog, the stale-socket filter, the
// service subscription, the reconnection policy, the session contract,
// resume, and the rules for where users are (tabs, sleep, blocked
// WebSocket). The zero Config (with a random source) is the client with
// every fix; Config.Disable turns fixes off, which is how the demo's stages
// are built (internal/stages). A Go program uses it through package
// client/native.
//
// It does no I/O, starts no goroutines, reads no clock and draws no random
// numbers of its own. A driver steps a Core with events (Opened, Received,
// Closed, Tick, Online, Offline, Hidden, Visible, TokenReady, TokenFailed,
// Request, Reconnect, Stop, NetworkChanged; at stage 8 also HTTPProbe, Buffered,
// BecameLeader, BecameFollower, LeaderState, LeaderUpdate, Relayed), each
// stamped with the time it happened, and then drains Effects: open a
// socket (over a transport), send a frame, close a socket, arm the one
// timer at an instant, settle a request, ask for a token, publish a state
// change, an update, a presence event or a reconnect record, probe the
// server over HTTP, forward a follower tab's request. The browser driver
// (package wasm), the native driver (package client/native) and the fleet
// simulator all run this code.
//
// Where each rule lives:
//
//	config.go               the Config and its defaults; Fixes, what Config.Disable turns off
//	readiness.go            the three levels and READY; stage 8: how long not READY (degraded, offline)
//	registry.go             stage 1: every request settles; typed errors; timeoutMs on the wire
//	heartbeat.go            stage 2: server pings, any frame as proof of life, and the watchdog;
//	                        stage 6: the probe on the ping schedule, and a probe when the app
//	                        waits on a silent connection (a request, a visible page, online)
//	stale.go                stage 3: events from replaced sockets are ignored
//	service.go              stage 4: the app's subscriptions (or the server's welcome) are the service; presence
//	reconnector.go          stages 0-8: every reconnect rule in one pure value, shared with the
//	                        simulator, and AfterFailure, the decision that follows every failure;
//	                        one file per rule beside it:
//	reconnector_delay.go    the delay: the policy's backoff, the cap growth (stage 6), the reset on
//	                        open or after the cooldown (stage 5), the watchdog's immediate reconnect
//	reconnector_budget.go   stage 6: the attempt budget, the reconnect window, refreshes, terminal states
//	reconnector_waits.go    the waits for online (stage 5) and a visible page (stage 6)
//	reconnector_fallback.go stage 8: the transport the next dial uses (HTTP fallback, re-probe)
//	reconnector_tabs.go     stage 8: a follower tab dials nothing until it leads
//	reconnector_clock.go    stage 8: a clock jump is not charged to the window
//	reconnect.go            carries out the Reconnector's decisions: records, dials, offline/online
//	classify.go             stage 6: what each close means
//	session.go              stage 6: tokens, the window, terminal states, records, Reconnect, visibility
//	refresh.go              stage 6: in-band token refresh, late in each token's life, on the live socket
//	transport.go            stage 8: the HTTP fallback, the re-probe and the move back to WebSocket
//	clock.go                stage 8: clock jumps (sleep, frozen tabs); hidden pages keep their connection
//	sendstall.go            stage 8: sends that stop draining
//	queue.go                the opt-in queue for requests made while not READY, with idempotency keys
//	report.go               readiness reports: one frame to the server per READY (time, attempts, cause, transport)
//	tabs.go                 stage 8: tab leadership (one connection for many tabs)
//	deadlines.go            the named deadlines the one timer serves
//	netchange.go            NetworkChanged: a program that knows the network changed probes at once
//	records.go              decision records an operator can replay: admission, cap in force, acked events, the run's end
//	policy.go               the delay policies, shared with the simulator
package client
