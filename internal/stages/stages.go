// Package stages builds the demo's stages as client configurations: stage
// n keeps the first n of the client's fixes (client.Fixes) and disables
// the rest, so each stage shows the failure the next fix prevents. The
// demo's page (wasm, internal/bridge), the simulator, the storm and the
// tests select them; a production client uses client.Config's zero value,
// every fix, and needs none of this.
package stages

import (
	"errors"

	"github.com/wsready/wsready/client"
)

// Max is the last stage: every fix.
const Max = 8

// ErrBadStage is the error for a stage outside 0..Max.
var ErrBadStage = errors.New("invalid stage: stage must be 0, 1, 2, 3, 4, 5, 6, 7 or 8")

// Disabled returns the fixes stage n turns off: every fix after the n-th.
// Stage 5's backoff comes with its cooldown.
func Disabled(n int) (client.Fixes, error) {
	if n < 0 || n > Max {
		return client.Fixes{}, ErrBadStage
	}
	return client.Fixes{
		Registry:      n < 1,
		Heartbeat:     n < 2,
		StaleFilter:   n < 3,
		Service:       n < 4,
		Backoff:       n < 5,
		Cooldown:      n < 5,
		Session:       n < 6,
		Resume:        n < 7,
		WhereUsersAre: n < 8,
	}, nil
}

// Config returns the library's defaults for stage n with the given random
// source (nil: a driver supplies one).
func Config(n int, rand func() float64) (client.Config, error) {
	d, err := Disabled(n)
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{Disable: d, Rand: rand}, nil
}

// Must returns the configuration of stage n (0..Max) with no random
// source (a driver supplies one); it panics on any other n, like
// regexp.MustCompile, for use with a constant.
func Must(n int) *client.Config {
	c, err := Config(n, nil)
	if err != nil {
		panic(err)
	}
	return &c
}
