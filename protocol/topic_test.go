package protocol

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// topicGrammar is the rule TopicRule states, as a regular expression: the
// reference ValidTopic is held to.
var topicGrammar = regexp.MustCompile(`^[A-Za-z0-9_-]+([.:/][A-Za-z0-9_-]+)*$`)

func refValidTopic(s string) bool { return len(s) <= MaxTopicBytes && topicGrammar.MatchString(s) }

// ErrBadTopic's text is TopicRule, and it states the bound, the word bytes
// and the separators ValidTopic uses.
func TestErrBadTopicStatesValidTopicsRule(t *testing.T) {
	msg := ErrBadTopic.Error()
	if msg != TopicRule {
		t.Fatalf("ErrBadTopic %q is not TopicRule %q", msg, TopicRule)
	}
	for _, part := range []string{"1 to " + strconv.Itoa(MaxTopicBytes) + " bytes", "A-Z a-z 0-9 - _", "single . : or /", "none first, last or doubled"} {
		if !strings.Contains(msg, part) {
			t.Errorf("TopicRule %q does not say %q", msg, part)
		}
	}
	if !ValidTopic(strings.Repeat("a", MaxTopicBytes)) || ValidTopic(strings.Repeat("a", MaxTopicBytes+1)) || ValidTopic("") {
		t.Error("ValidTopic's length bound is not 1 to MaxTopicBytes")
	}
}

// ValidTopic agrees with the grammar on every name of up to 4 bytes over
// an alphabet of word bytes, every separator and bytes outside the rule,
// and on the names apps use.
func TestValidTopicIsTheGrammar(t *testing.T) {
	alphabet := []byte{'a', 'Z', '0', '-', '_', '.', ':', '/', ' ', '*', '>', '\\', 0, 0xc3, '='}
	var walk func(prefix []byte)
	walk = func(prefix []byte) {
		if s := string(prefix); ValidTopic(s) != refValidTopic(s) {
			t.Errorf("ValidTopic(%q) = %v, the grammar says %v", s, ValidTopic(s), refValidTopic(s))
		}
		if len(prefix) == 4 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)
	long := strings.Repeat("ab.", 42) // 126 bytes
	for name, want := range map[string]bool{
		"chat": true, "user:42": true, "orders/eu-west/7": true, "room.lobby": true, "a.b:c/d": true,
		long + "ab": true, long + "abc": false, // 128 and 129 bytes
		"a..b": false, ".a": false, "a.": false, "a:/b": false, "/": false, "a b": false, "é": false, "a.b>": false,
	} {
		if got := ValidTopic(name); got != want {
			t.Errorf("ValidTopic(%q) = %v, want %v", name, got, want)
		}
	}
}
