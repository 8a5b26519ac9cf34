//go:build !js

package server

import (
	"io/fs"
	"net/http"
	"time"
)

// TestDemo is the demo (server/demo's Demo) as this package's tests drive
// it: its site, its switches, its counters' reset.
type TestDemo interface {
	Handler() http.Handler
	Set(name string, value any) error
	ResetCounters()
	// Faults is each switch's state by name (the demo's Stats.Faults).
	Faults() map[string]bool
}

// DemoOptions are server/demo's Options as this package's tests set them:
// the same fields, in the same order (demo_new_test.go converts one to
// the other, which does not compile once they differ).
type DemoOptions struct {
	FeedInterval       time.Duration
	NoFeed             bool
	SlowReplyDelay     time.Duration
	FlapAfter          time.Duration
	JitterMax          time.Duration
	RestartDowntime    time.Duration
	ShortTicketLife    time.Duration
	OverloadRetryAfter time.Duration
}

// NewTestDemo is demo.New, set by demo_new_test.go: a test of package
// server cannot import server/demo (it imports server), a test of package
// server_test can, and both are built into one test binary.
var NewTestDemo func(s *Server, files fs.FS, o DemoOptions) (TestDemo, error)
