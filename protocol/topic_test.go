package protocol

import (
	"strconv"
	"strings"
	"testing"
)

// ErrBadTopic's words and ValidTopic say the same rule: the length bound
// is MaxTopicBytes and the charset is exactly the one the text lists.
func TestErrBadTopicStatesValidTopicsRule(t *testing.T) {
	msg := ErrBadTopic.Error()
	if !strings.Contains(msg, "1 to "+strconv.Itoa(MaxTopicBytes)+" ") {
		t.Fatalf("ErrBadTopic %q does not state the bound %d", msg, MaxTopicBytes)
	}
	listed := func(c byte) bool {
		return strings.Contains(msg, "A-Z") && 'A' <= c && c <= 'Z' ||
			strings.Contains(msg, "a-z") && 'a' <= c && c <= 'z' ||
			strings.Contains(msg, "0-9") && '0' <= c && c <= '9' ||
			strings.Contains(msg, " - ") && c == '-' || strings.HasSuffix(msg, " _") && c == '_'
	}
	for c := 0; c < 256; c++ {
		if got, want := ValidTopic(string([]byte{byte(c)})), listed(byte(c)); got != want {
			t.Errorf("byte %q: ValidTopic %v, the text lists it: %v", byte(c), got, want)
		}
	}
	if !ValidTopic(strings.Repeat("a", MaxTopicBytes)) || ValidTopic(strings.Repeat("a", MaxTopicBytes+1)) || ValidTopic("") {
		t.Error("ValidTopic's length bound is not 1 to MaxTopicBytes")
	}
}
