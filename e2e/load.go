//go:build !js

package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Link is an emulated network link for page loads; zero is loopback as is.
type Link struct {
	Latency     time.Duration
	BytesPerSec float64
}

// TenMbit40ms is issue 14's slow link: 10 Mbit/s, 40 ms.
var TenMbit40ms = Link{Latency: 40 * time.Millisecond, BytesPerSec: 10e6 / 8}

// LoadToReady opens the demo at ?stage=7 in a fresh Chromium (a fresh
// profile: a cold cache) over link, trials times, and returns the time from
// navigation start to READY of each, in ms.
func LoadToReady(env *Env, link Link, trials int) ([]int64, error) {
	var out []int64
	for i := 0; i < trials; i++ {
		b, err := NewBrowser(context.Background())
		if err != nil {
			return out, err
		}
		if link != (Link{}) {
			if err := b.Throttle(link.Latency, link.BytesPerSec); err != nil {
				b.Close()
				return out, err
			}
		}
		err = b.Navigate(env.Base + "/?stage=7")
		if err == nil {
			err = WaitJS(b, "window.wsreadyDemo && wsreadyDemo.firstReadyMs !== undefined", 30*time.Second)
		}
		var ms float64
		if err == nil {
			ms, err = Eval[float64](b, "wsreadyDemo.firstReadyMs")
		}
		b.Close()
		if err != nil {
			return out, fmt.Errorf("load %d: %w", i, err)
		}
		out = append(out, int64(ms))
	}
	return out, nil
}

// medianWorst returns the median and the largest of ms.
func medianWorst(ms []int64) (int64, int64) {
	s := slices.Clone(ms)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
