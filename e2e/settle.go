//go:build !js

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// The page-load measurements navigate a fresh Chromium (a fresh profile: a
// cold cache) only once the browser has finished starting: a user's
// browser is running before they open a page, and on this 2-CPU machine a
// browser's own start-up takes both CPUs for about a second, which the
// page's load would otherwise share (measured: the demo's loopback median
// was 357-366 ms navigated 0.3 s after the start, 268-283 ms after 1 s,
// 248-289 ms after 3 s).
const (
	settleQuiet  = 50 * time.Millisecond // CPU time the browser's processes may use per settleWindow: 25% of one CPU
	settleWindow = 200 * time.Millisecond
	settleMax    = 5 * time.Second // then navigate anyway (a busy machine): Settle reports false
)

// Settle waits until b's Chromium (the browser process and every process
// under it) used less than settleQuiet of CPU over settleWindow, at most
// settleMax, and returns how long it waited and whether it went quiet (on
// a busy machine it may not: the load then goes ahead, and its figures
// say so). Without /proc (not Linux) it returns false at once: the e2e
// suite runs on Linux.
func (b *Browser) Settle() (time.Duration, bool, error) {
	start := time.Now()
	c := chromedp.FromContext(b.Ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0, false, errors.New("settle: no browser process")
	}
	root := c.Browser.Process().Pid
	last, ok := treeTicks(root)
	if !ok {
		return 0, false, nil
	}
	for time.Since(start) < settleMax {
		time.Sleep(settleWindow)
		now, ok := treeTicks(root)
		if !ok {
			return time.Since(start), false, errors.New("settle: the browser's processes are gone")
		}
		// Per process, so one that ended meanwhile takes nothing off the
		// sum (its ticks leave with it); a new one counts from zero.
		var used int64
		for pid, t := range now {
			used += max(0, t-last[pid])
		}
		if time.Duration(used)*time.Second/clockTick < settleQuiet {
			return time.Since(start), true, nil
		}
		last = now
	}
	return time.Since(start), false, nil
}

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's times (100
// on every Linux this runs on).
const clockTick = 100

// treeTicks is the CPU time (user and system, in clock ticks) of pid and
// each of its descendants, by pid, from /proc; false without /proc or pid.
func treeTicks(pid int) (map[int]int64, bool) {
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(paths) == 0 {
		return nil, false
	}
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold
		// spaces and parens, so the fields are counted after the last one.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		id, err := strconv.Atoi(s[:max(strings.IndexByte(s, ' '), 0)])
		f := strings.Fields(s[i+1:])
		if err != nil || len(f) < 13 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		parent[id], ticks[id] = pp, ut+st
	}
	if _, ok := ticks[pid]; !ok {
		return nil, false
	}
	tree := map[int]int64{}
	for id, t := range ticks {
		// Up the parents, at most as many steps as there are processes (a
		// pid reused while /proc was read could make a cycle).
		for p, n := id, 0; p > 1 && n <= len(parent); p, n = parent[p], n+1 {
			if p == pid {
				tree[id] = t
				break
			}
		}
	}
	return tree, true
}
