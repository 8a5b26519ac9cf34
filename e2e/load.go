//go:build !js

package e2e

import (
	"slices"
	"time"
)

// Link is an emulated network link for page loads; zero is loopback as is.
type Link struct {
	Latency     time.Duration
	BytesPerSec float64
}

// TenMbit40ms is the slow link the page load goal is set on: 10 Mbit/s,
// 40 ms.
var TenMbit40ms = Link{Latency: 40 * time.Millisecond, BytesPerSec: 10e6 / 8}

// medianWorst returns the median and the largest of ms.
func medianWorst(ms []int64) (int64, int64) {
	s := slices.Clone(ms)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
