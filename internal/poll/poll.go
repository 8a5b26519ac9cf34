// Package poll lets a test wait on the thing it awaits (a counter, a state,
// a line in a log) with a bounded deadline, instead of sleeping a guess at
// how long that takes. Inside a testing/synctest bubble its waits run on
// the bubble's fake clock.
package poll

import "time"

// Every is how often Until looks: 10 ms, short next to any deadline a test
// gives and long enough not to spin a core the other tests share.
const Every = 10 * time.Millisecond

// Until calls cond every Every until it returns true (Until then returns
// true) or d has passed (false). cond runs on the caller's goroutine.
func Until(d time.Duration, cond func() bool) bool {
	return UntilEvery(d, Every, cond)
}

// UntilEvery is Until looking every every, for a cond that costs (a round
// trip to a browser or another process).
func UntilEvery(d, every time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(end) {
			return false
		}
		time.Sleep(every) // real time: what is awaited runs on other goroutines or in other processes
	}
}
