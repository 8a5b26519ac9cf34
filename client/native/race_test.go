//go:build race && !js

package native

// raceEnabled: the race detector is on (it allows 8,128 live goroutines,
// which a fleet test of 2,000 clients and its server exceeds).
const raceEnabled = true
