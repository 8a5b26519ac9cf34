//go:build !js

package native

import (
	"strings"
	"testing"
)

// A SubscribeError counts the other refused topics in words that read
// right for one and for several.
func TestSubscribeErrorCountsTheOthers(t *testing.T) {
	for others, want := range map[int]string{0: "(forbidden: no)", 1: ", and 1 more topic (State().Refusals)", 3: ", and 3 more topics (State().Refusals)"} {
		e := &SubscribeError{Topic: "user.alice", Code: "forbidden", Message: "no", Others: others}
		if got := e.Error(); !strings.HasSuffix(got, want) {
			t.Errorf("Others %d: %q, want it to end %q", others, got, want)
		}
	}
}
