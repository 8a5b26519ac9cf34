package bridge

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
)

func TestSubsRoundTrip(t *testing.T) {
	subs := map[string]TabSub{"feed": {}, "room": {Presence: true}, "chat": {Since: 41, HasSince: true}}
	text := FormatSubs(subs)
	if text != "chat 0 41\nfeed 0 -\nroom 1 -\n" {
		t.Fatalf("%q", text)
	}
	got := ParseSubs(text + "bad\nx..y 0 -\nz 2 -\nw 0 -3\nx.y 0 -\n")
	if len(got) != 4 || got["chat"] != subs["chat"] || got["room"] != subs["room"] || got["feed"] != subs["feed"] || got["x.y"] != (TabSub{}) {
		t.Fatalf("%v", got)
	}
	var many strings.Builder
	for i := range MaxTabTopics + 10 {
		many.WriteString("t" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + " 0 -\n")
	}
	if n := len(ParseSubs(many.String())); n != MaxTabTopics {
		t.Fatalf("parsed %d topics, bound %d", n, MaxTabTopics)
	}
}

// The leader subscribes the union of every tab's topics: presence if any
// tab asks, the lowest since; a tab that leaves or goes silent takes what
// only it wanted with it; the table is bounded.
func TestTabTopics(t *testing.T) {
	var tt TabTopics
	now := time.Unix(100, 0)
	local := map[string]TabSub{"feed": {}}
	if isNew, err := tt.Set("b", map[string]TabSub{"feed": {Since: 9, HasSince: true}, "room": {Presence: true}}, now); !isNew || err != nil {
		t.Fatal(isNew, err)
	}
	tt.Set("c", map[string]TabSub{"room": {Since: 5, HasSince: true}, "chat": {}}, now.Add(time.Minute))
	if isNew, _ := tt.Set("b", map[string]TabSub{"feed": {Since: 9, HasSince: true}, "room": {Presence: true}}, now); isNew {
		t.Fatal("b is new twice")
	}
	want := tt.Want(local)
	if len(want) != 3 || want["feed"] != (TabSub{Since: 9, HasSince: true}) || want["room"] != (TabSub{Presence: true, Since: 5, HasSince: true}) || want["chat"] != (TabSub{}) {
		t.Fatalf("%v", want)
	}
	sub, unsub := DiffTopics(map[string]bool{"feed": false, "room": false, "old": true}, want)
	if len(sub) != 2 || sub[0] != (TopicChange{"chat", TabSub{}}) || sub[1] != (TopicChange{"room", TabSub{Presence: true}}) || len(unsub) != 1 || unsub[0] != "old" {
		t.Fatalf("sub %v unsub %v", sub, unsub)
	}
	if !tt.Expire(now.Add(ForgetTab+time.Second), ForgetTab) || tt.Len() != 1 {
		t.Fatalf("b not forgotten: %d tabs", tt.Len())
	}
	if want := tt.Want(local); len(want) != 3 || want["room"].Presence {
		t.Fatalf("after b: %v", want)
	}
	if !tt.Drop("c") || tt.Drop("c") || len(tt.Want(local)) != 1 {
		t.Fatal("drop")
	}
	for i := range MaxTabs {
		if _, err := tt.Set(string(rune('A'+i)), nil, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tt.Set("one too many", nil, now); !errors.Is(err, ErrTooManyTabs) {
		t.Fatalf("past the bound: %v", err)
	}
	if !Outranks(2, "a", 1, "z") || Outranks(1, "z", 2, "a") || !Outranks(1, "b", 1, "a") || Outranks(1, "a", 1, "a") {
		t.Fatal("Outranks")
	}
}

func TestLeaderStateRoundTrip(t *testing.T) {
	st := client.State{Transport: client.Up, Protocol: client.Up, Service: client.Pending, Epoch: 7, Attempt: 2,
		LastError: client.Failure{Class: client.FailHeartbeat, Code: 4408}, Via: client.TransportHTTP,
		NotReadySince: time.UnixMilli(1_700_000_000_000), Degraded: true}
	got := ParseLeaderState(fakeGetter(LeaderStateValue(st)))
	if got != st {
		t.Fatalf("%+v\nwant %+v", got, st)
	}
	st = client.State{Transport: client.Up, Protocol: client.Up, Service: client.Up, Ready: true, Epoch: 3, Via: client.TransportWebSocket}
	if got := ParseLeaderState(fakeGetter(LeaderStateValue(st))); got != st {
		t.Fatalf("%+v\nwant %+v", got, st)
	}
	// A refused topic crosses to the followers: their ready() fails on it too.
	st = client.State{Transport: client.Up, Protocol: client.Up, Service: client.Down, Epoch: 3, Via: client.TransportWebSocket,
		Refused: client.TopicError{Topic: "user.alice", Code: "forbidden", Message: "user.alice is private to alice"}, Refusals: 2}
	if got := ParseLeaderState(fakeGetter(LeaderStateValue(st))); got != st {
		t.Fatalf("%+v\nwant %+v", got, st)
	}
	if v := StateValue(st, TabsOn)["refused"].(map[string]any); v["topic"] != "user.alice" || v["code"] != "forbidden" || v["message"] != st.Refused.Message {
		t.Fatalf("the page's state().refused: %v", v)
	}
	if v := StateValue(client.State{}, TabsOn)["refused"]; v != nil {
		t.Fatalf("refused with none: %v", v)
	}
	junkRef := ParseLeaderState(fakeGetter{"refusals": 1.0, "refTopic": "..", "refCode": "forbidden"})
	if junkRef.Refusals != 0 || junkRef.Refused != (client.TopicError{}) {
		t.Fatalf("a refusal of no valid topic read as %+v", junkRef)
	}
	st = client.State{Ended: client.Forbidden, EndCode: 4003}
	if got := ParseLeaderState(fakeGetter(LeaderStateValue(st))); got != st {
		t.Fatalf("%+v\nwant %+v", got, st)
	}
	// What a page could post is read as not READY, never as a crash.
	junk := ParseLeaderState(fakeGetter{"transport": 3.0, "ready": true, "epoch": -1.0, "ended": "nope", "errClass": "x", "via": 9.0, "notReadySince": "y"})
	if junk != (client.State{}) {
		t.Fatalf("junk read as %+v", junk)
	}
}

func TestReplyRoundTrip(t *testing.T) {
	res, err := ParseReply(fakeGetter(ReplyValue([]byte(`{"seq":4}`), nil)), 9)
	if err != nil || string(res) != `{"seq":4}` {
		t.Fatalf("%q %v", res, err)
	}
	_, err = ParseReply(fakeGetter(ReplyValue(nil, &client.ServerError{ID: 3, Code: "rate_limited", Message: "slow down", RetryAfter: 1500 * time.Millisecond})), 9)
	var se *client.ServerError
	if !errors.As(err, &se) || se.ID != 9 || se.Code != "rate_limited" || se.Message != "slow down" || se.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("%#v", err)
	}
	for _, kind := range []error{client.ErrNotReady, client.ErrRequestTimeout, client.ErrConnectionClosed, client.ErrInvalidRequest, client.ErrAborted} {
		_, err := ParseReply(fakeGetter(ReplyValue(nil, &client.RequestError{Kind: kind, ID: 3, Detail: "connection lost"})), 9)
		var re *client.RequestError
		if !errors.As(err, &re) || !errors.Is(err, kind) || re.ID != 9 || re.Detail != "in the leader tab: connection lost" {
			t.Fatalf("%v: %v", kind, err)
		}
	}
	if _, err := ParseReply(fakeGetter{"ok": true, "result": "{"}, 9); !errors.As(err, &se) || se.Code != "bad_reply" {
		t.Fatalf("a result that is not JSON: %v", err)
	}
	if _, err := ParseReply(fakeGetter{"ok": false, "name": "ServerError", "code": "Not A Code!"}, 9); !errors.As(err, &se) || se.Code != "internal" {
		t.Fatalf("a bad code: %v", err)
	}
}
