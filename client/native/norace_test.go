//go:build !race && !js

package native

// raceEnabled: the race detector is on (race_test.go).
const raceEnabled = false
