package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeEveryType(t *testing.T) {
	cases := []struct {
		in   string
		want Message
	}{
		{`{"type":"ping","intervalMs":1000}`, Message{Type: TypePing, IntervalMs: 1000}},
		{`{"type":"subscribe","topic":"feed"}`, Message{Type: TypeSubscribe, Topic: "feed"}},
		{`{"type":"subscribed","topic":"feed"}`, Message{Type: TypeSubscribed, Topic: "feed"}},
		{`{"type":"unsubscribed","topic":"feed","reason":"service_unavailable"}`, Message{Type: TypeUnsubscribed, Topic: "feed", Reason: "service_unavailable"}},
		{`{"type":"update","topic":"feed","seq":42,"data":{"v":[1,2]}}`, Message{Type: TypeUpdate, Topic: "feed", Seq: 42, Data: []byte(`{"v":[1,2]}`)}},
		{`{"type":"request","id":7,"method":"echo","params":{"x":"y"}}`, Message{Type: TypeRequest, ID: 7, Method: "echo", Params: []byte(`{"x":"y"}`)}},
		{`{"type":"request","id":8,"method":"time"}`, Message{Type: TypeRequest, ID: 8, Method: "time"}},
		{`{"type":"response","id":7,"result":{"x":"y"}}`, Message{Type: TypeResponse, ID: 7, Result: []byte(`{"x":"y"}`)}},
		{`{"type":"response","id":7,"error":{"code":"unknown_method","message":"no"}}`, Message{Type: TypeResponse, ID: 7, Error: &ErrorBody{Code: "unknown_method", Message: "no"}}},
		{`{"type":"error","code":"bad_json","message":"at offset 3"}`, Message{Type: TypeError, Error: &ErrorBody{Code: "bad_json", Message: "at offset 3"}}},
		{` { "extra" : [true,false,null] , "type" : "request", "id":1, "method":"a\u00e9\n\"" } `, Message{Type: TypeRequest, ID: 1, Method: "aé\n\""}},
		{`{"type":"subscribe","topic":"chat-1_x","since":0}`, Message{Type: TypeSubscribe, Topic: "chat-1_x", HasSince: true}},
		{`{"type":"subscribe","topic":"feed","since":41,"stream":"s1"}`, Message{Type: TypeSubscribe, Topic: "feed", HasSince: true, Since: 41, Stream: "s1"}},
		{`{"type":"unsubscribe","topic":"feed"}`, Message{Type: TypeUnsubscribe, Topic: "feed"}},
		{`{"type":"probe","id":4}`, Message{Type: TypeProbe, ID: 4}},
		{`{"type":"probe_ack","id":4}`, Message{Type: TypeProbeAck, ID: 4}},
		{`{"type":"subscribed","topic":"feed","from":42,"head":50,"stream":"s1"}`, Message{Type: TypeSubscribed, Topic: "feed", From: 42, Head: 50, Stream: "s1"}},
		{`{"type":"publish","id":3,"topic":"chat","data":{"t":"hi"}}`, Message{Type: TypePublish, ID: 3, Topic: "chat", Data: []byte(`{"t":"hi"}`)}},
		{`{"type":"error","id":3,"code":"unknown_topic","message":"no","topic":"x"}`, Message{Type: TypeError, ID: 3, Topic: "x", Error: &ErrorBody{Code: "unknown_topic", Message: "no"}}},
		{`{"type":"welcome","session":"q1Zb3kPm9tV0xY2zA4cD6e"}`, Message{Type: TypeWelcome, Session: "q1Zb3kPm9tV0xY2zA4cD6e"}},
		{`{"type":"welcome","session":"s","user":"alice","node":"n1"}`, Message{Type: TypeWelcome, Session: "s", User: "alice", Node: "n1"}},
		{`{"type":"presence","topic":"room","event":"join","user":"bob"}`, Message{Type: TypePresence, Topic: "room", Event: PresenceJoin, User: "bob"}},
		{`{"type":"presence","topic":"room","event":"leave","user":"bob"}`, Message{Type: TypePresence, Topic: "room", Event: PresenceLeave, User: "bob"}},
		{`{"type":"request","id":5,"method":"cart.add","timeoutMs":5000,"key":"AbC-_09"}`, Message{Type: TypeRequest, ID: 5, Method: "cart.add", TimeoutMs: 5000, Key: "AbC-_09"}},
		{`{"type":"publish","id":6,"topic":"chat","data":1,"key":"k1"}`, Message{Type: TypePublish, ID: 6, Topic: "chat", Data: []byte(`1`), Key: "k1"}},
		{`{"type":"subscribe","topic":"room","presence":true}`, Message{Type: TypeSubscribe, Topic: "room", Presence: true}},
		{`{"type":"subscribe","topic":"org:7/room.lobby"}`, Message{Type: TypeSubscribe, Topic: "org:7/room.lobby"}},
		{`{"type":"presence","topic":"user:42","event":"join","user":"bob"}`, Message{Type: TypePresence, Topic: "user:42", Event: PresenceJoin, User: "bob"}},
		{`{"type":"subscribe","topic":"room","presence":false}`, Message{Type: TypeSubscribe, Topic: "room"}},
		{`{"type":"error","code":"rate_limited","message":"m","retryAfterMs":250}`, Message{Type: TypeError, Error: &ErrorBody{Code: "rate_limited", Message: "m", RetryAfterMs: 250}}},
		{`{"type":"response","id":7,"error":{"code":"rate_limited","message":"m","retryAfterMs":1000}}`, Message{Type: TypeResponse, ID: 7, Error: &ErrorBody{Code: "rate_limited", Message: "m", RetryAfterMs: 1000}}},
		// Fields of other types are ignored: a ping's presence, key, timeoutMs.
		{`{"type":"ping","intervalMs":1000,"presence":7,"key":"a b","timeoutMs":-1}`, Message{Type: TypePing, IntervalMs: 1000}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%s) = %+v, want %+v", c.in, got, c.want)
		}
		// Encoding and decoding again gives the same message.
		again, err := Decode(Encode(got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("round trip of %s: %+v, %v", c.in, again, err)
		}
	}
}

func TestDecodeRejectsBadInputWithStableCode(t *testing.T) {
	cases := []struct{ in, code, field string }{
		{`not json`, ErrBadJSON, ""},
		{`{"type":"ping"`, ErrBadJSON, ""},
		{`{"type":"ping","intervalMs":1000} x`, ErrBadJSON, ""},
		{`[1,2]`, ErrNotObject, ""},
		{`"ping"`, ErrNotObject, ""},
		{`{}`, ErrMissingField, "type"},
		{`{"type":7}`, ErrWrongType, "type"},
		{`{"type":"nope"}`, ErrUnknownType, "type"},
		{`{"type":"ping"}`, ErrMissingField, "intervalMs"},
		{`{"type":"ping","intervalMs":"1000"}`, ErrWrongType, "intervalMs"},
		{`{"type":"ping","intervalMs":1.5}`, ErrWrongType, "intervalMs"},
		{`{"type":"ping","intervalMs":0}`, ErrWrongType, "intervalMs"},
		{`{"type":"subscribe"}`, ErrMissingField, "topic"},
		{`{"type":"subscribe","topic":""}`, ErrWrongType, "topic"},
		{`{"type":"request","method":"echo"}`, ErrMissingField, "id"},
		{`{"type":"request","id":-1,"method":"echo"}`, ErrWrongType, "id"},
		{`{"type":"request","id":0,"method":"echo"}`, ErrWrongType, "id"},
		{`{"type":"request","id":1}`, ErrMissingField, "method"},
		{`{"type":"request","id":99999999999999999999,"method":"x"}`, ErrWrongType, "id"},
		{`{"type":"response","id":1}`, ErrMissingField, "result"},
		{`{"type":"response","id":1,"result":1,"error":{"code":"x"}}`, ErrMissingField, "result"},
		{`{"type":"response","id":1,"error":"x"}`, ErrWrongType, "error"},
		{`{"type":"update","topic":"feed","seq":1}`, ErrMissingField, "data"},
		{`{"type":"subscribe","topic":"a..b"}`, ErrInvalidTopic, "topic"},
		{`{"type":"subscribe","topic":"a/"}`, ErrInvalidTopic, "topic"},
		{`{"type":"subscribe","topic":"a b"}`, ErrInvalidTopic, "topic"},
		{`{"type":"subscribe","topic":"` + strings.Repeat("x", MaxTopicBytes+1) + `"}`, ErrInvalidTopic, "topic"},
		{`{"type":"subscribe","topic":"feed","since":-1}`, ErrWrongType, "since"},
		{`{"type":"subscribe","topic":"feed","since":"1"}`, ErrWrongType, "since"},
		{`{"type":"subscribe","topic":"feed","stream":1}`, ErrWrongType, "stream"},
		{`{"type":"unsubscribe"}`, ErrMissingField, "topic"},
		{`{"type":"probe","id":-1}`, ErrWrongType, "id"},
		{`{"type":"publish","topic":"feed","data":1}`, ErrMissingField, "id"},
		{`{"type":"publish","id":1,"data":1}`, ErrMissingField, "topic"},
		{`{"type":"publish","id":1,"topic":"x"}`, ErrMissingField, "data"},
		{`{"type":"publish","id":1,"topic":"x>","data":1}`, ErrInvalidTopic, "topic"},
		{`{"type":"subscribed","topic":"feed","from":-2}`, ErrWrongType, "from"},
		{`{"type":"welcome"}`, ErrMissingField, "session"},
		{`{"type":"welcome","session":""}`, ErrWrongType, "session"},
		{`{"type":"welcome","session":"` + strings.Repeat("s", MaxIDBytes+1) + `"}`, ErrWrongType, "session"},
		{`{"type":"welcome","session":"s","user":""}`, ErrWrongType, "user"},
		{`{"type":"welcome","session":"s","node":3}`, ErrWrongType, "node"},
		{`{"type":"presence","topic":"room","event":"wave","user":"u"}`, ErrWrongType, "event"},
		{`{"type":"presence","topic":"room","user":"u"}`, ErrMissingField, "event"},
		{`{"type":"presence","topic":"room","event":"join"}`, ErrMissingField, "user"},
		{`{"type":"presence","event":"join","user":"u"}`, ErrMissingField, "topic"},
		{`{"type":"request","id":5,"method":"m","timeoutMs":0}`, ErrWrongType, "timeoutMs"},
		{`{"type":"request","id":5,"method":"m","timeoutMs":3600001}`, ErrWrongType, "timeoutMs"},
		{`{"type":"request","id":5,"method":"m","timeoutMs":"5"}`, ErrWrongType, "timeoutMs"},
		{`{"type":"request","id":5,"method":"m","key":""}`, ErrWrongType, "key"},
		{`{"type":"request","id":5,"method":"m","key":"a.b"}`, ErrWrongType, "key"},
		{`{"type":"request","id":5,"method":"m","key":"` + strings.Repeat("k", MaxKeyBytes+1) + `"}`, ErrWrongType, "key"},
		{`{"type":"publish","id":6,"topic":"chat","data":1,"key":7}`, ErrWrongType, "key"},
		{`{"type":"subscribe","topic":"room","presence":1}`, ErrWrongType, "presence"},
		{`{"type":"subscribe","topic":"room","presence":"true"}`, ErrWrongType, "presence"},
		{`{"type":"error","code":"rate_limited","retryAfterMs":-1}`, ErrWrongType, "retryAfterMs"},
		{`{"type":"response","id":7,"error":{"code":"rate_limited","retryAfterMs":-5}}`, ErrWrongType, "error.retryAfterMs"},
		{"{\"type\":\"subscribe\",\"topic\":\"\xff\"}", ErrBadJSON, ""},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), ErrNotObject, ""},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), ErrBadJSON, ""},
		{strings.Repeat("[", 100) + strings.Repeat("]", 99), ErrBadJSON, ""},
		{`{"type":"subscribe","topic":"` + strings.Repeat("x", MaxFrameBytes) + `"}`, ErrTooLarge, ""},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Decode(%.60s): error %v is not a *DecodeError", c.in, err)
			continue
		}
		if de.Code != c.code || de.Field != c.field {
			t.Errorf("Decode(%.60s) = code %q field %q, want %q %q (%v)", c.in, de.Code, de.Field, c.code, c.field, err)
		}
	}
}

func TestEncodeEscapesAndStaysValid(t *testing.T) {
	m := Message{Type: TypeUnsubscribed, Topic: "a\"b\\c\x01\u2028<>&\xffz", Reason: "r"}
	b := Encode(m)
	if !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
	var v struct{ Topic string }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if want := "a\"b\\c\x01\u2028<>&\ufffdz"; v.Topic != want {
		t.Fatalf("topic = %q, want %q", v.Topic, want)
	}
	// An invalid raw field becomes null instead of corrupting the frame.
	b = Encode(Message{Type: TypeResponse, ID: 1, Result: []byte(`{"broken"`)})
	if string(b) != `{"type":"response","id":1,"result":null}` {
		t.Fatalf("got %s", b)
	}
}

func TestStringUnescapeMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\/\b\f\r\t"`, `"\u00"`} {
		var want string
		jerr := json.Unmarshal([]byte(s), &want)
		sc := scanner{b: []byte(s)}
		_, err := sc.stringEnd()
		var got string
		if err == nil {
			got = unquote([]byte(s))
		}
		if (jerr == nil) != (err == nil) {
			t.Errorf("%s: encoding/json err %v, ours %v", s, jerr, err)
			continue
		}
		if jerr == nil && got != want {
			t.Errorf("%s: got %q want %q", s, got, want)
		}
	}
}

// FuzzDecode checks the decoder against encoding/json: anything it accepts
// is valid JSON, a decoded message survives a round trip, and it never
// panics.
func FuzzDecode(f *testing.F) {
	for _, s := range append([]string{
		`{"type":"ping","intervalMs":1000}`,
		`{"type":"update","topic":"feed","seq":42,"data":{"a":[1,2.5e3,"x",null,true]}}`,
		`{"type":"request","id":7,"method":"echo","params":{"text":"hi \u00e9"}}`,
		`{"type":"response","id":7,"error":{"code":"x","message":"y"}}`,
		`{"type":"unsubscribed","topic":"feed","reason":"service_unavailable"}`,
		`{"type":"error","code":"bad_json","message":"m"}`,
		`[{"type":1}]`, `{"type":"`, `nul`, `-0.0e+1`, `"\ud800"`,
	}, reportSeeds()...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Valid(b) && !json.Valid(b) {
			t.Fatalf("Valid accepts what encoding/json rejects: %q", b)
		}
		if len(b) < 60 && utf8.Valid(b) && json.Valid(b) && !Valid(b) {
			t.Fatalf("Valid rejects what encoding/json accepts: %q", b)
		}
		m, err := Decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Code == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("decoded invalid JSON %q", b)
		}
		enc := Encode(m)
		if !json.Valid(enc) {
			t.Fatalf("encoded invalid JSON %q from %q", enc, b)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", enc, err)
		}
		if again.Type != m.Type || again.ID != m.ID || again.Topic != m.Topic && utf8.ValidString(m.Topic) || !bytes.Equal(again.Data, m.Data) {
			t.Fatalf("round trip changed %+v into %+v", m, again)
		}
	})
}

func BenchmarkDecodeUpdate(b *testing.B) {
	frame := []byte(`{"type":"update","topic":"feed","seq":42,"data":{"ts":1700000000000,"value":12.5}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// A field is checked only for the types that define it: another type's
// field with any value, like an unknown field, is ignored.
func TestFieldsOfOtherTypesAreIgnored(t *testing.T) {
	cases := []struct {
		in   string
		want Message
	}{
		{`{"type":"update","topic":"feed","seq":3,"data":1,"id":"x","method":7}`, Message{Type: TypeUpdate, Topic: "feed", Seq: 3, Data: []byte(`1`)}},
		{`{"type":"ping","intervalMs":500,"code":{"a":1},"topic":false}`, Message{Type: TypePing, IntervalMs: 500}},
		{`{"type":"subscribe","topic":"feed","seq":"soon","error":"x"}`, Message{Type: TypeSubscribe, Topic: "feed"}},
		{`{"type":"request","id":2,"method":"echo","intervalMs":"x","reason":1}`, Message{Type: TypeRequest, ID: 2, Method: "echo"}},
		{`{"type":"error","code":"x","message":"m","seq":"no","result":[]}`, Message{Type: TypeError, Error: &ErrorBody{Code: "x", Message: "m"}}},
		{`{"type":"response","id":4,"result":true,"code":5,"message":[]}`, Message{Type: TypeResponse, ID: 4, Result: []byte(`true`)}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%s) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// A ping interval is bounded to 1 ms .. 1 h, so a client's deadline
// arithmetic cannot overflow.
func TestPingIntervalIsBounded(t *testing.T) {
	for _, in := range []string{`{"type":"ping","intervalMs":9000000000000000}`, `{"type":"ping","intervalMs":3600001}`, `{"type":"ping","intervalMs":-5}`} {
		_, err := Decode([]byte(in))
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != "intervalMs" {
			t.Errorf("Decode(%s) = %v, want an intervalMs error", in, err)
		}
	}
	if m, err := Decode([]byte(`{"type":"ping","intervalMs":3600000}`)); err != nil || m.IntervalMs != MaxIntervalMs {
		t.Fatalf("one hour: %+v %v", m, err)
	}
}

// A request that fails validation still yields its id, so the server can
// say which request its error is about.
func TestABadRequestStillYieldsItsID(t *testing.T) {
	for _, in := range []string{`{"type":"request","id":9,"method":""}`, `{"type":"request","id":9}`, `{"type":"request","id":9,"method":4}`} {
		m, err := Decode([]byte(in))
		if err == nil || m.Type != TypeRequest || m.ID != 9 {
			t.Errorf("Decode(%s) = %+v, %v; want type request, id 9 and an error", in, m, err)
		}
	}
	if m, err := Decode([]byte(`{"type":"error","id":9,"code":"missing_field","message":"x"}`)); err != nil || m.ID != 9 {
		t.Fatalf("error frame with id: %+v %v", m, err)
	}
}

// A repeated key counts with its last value, at every level: in a
// response's error object too, where the first value used to decide.
func TestDecodeRepeatedKeysKeepTheLast(t *testing.T) {
	cases := []struct {
		in   string
		want Message
	}{
		{`{"type":"probe","id":1,"id":2}`, Message{Type: TypeProbe, ID: 2}},
		{`{"type":"probe","id":"x","id":2}`, Message{Type: TypeProbe, ID: 2}},
		{`{"type":"response","id":1,"error":{"code":1,"code":"x"}}`, Message{Type: TypeResponse, ID: 1, Error: &ErrorBody{Code: "x"}}},
		{`{"type":"response","id":1,"error":{"message":2,"code":"x","message":"m"}}`, Message{Type: TypeResponse, ID: 1, Error: &ErrorBody{Code: "x", Message: "m"}}},
	}
	for _, c := range cases {
		got, err := Decode([]byte(c.in))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if _, err := Decode([]byte(`{"type":"response","id":1,"error":{"code":"x","code":1}}`)); err == nil {
		t.Error("a bad last value was accepted")
	}
}

func TestValidKeyAndErrorCode(t *testing.T) {
	for k, want := range map[string]bool{"a": true, "AbC-_09": true, strings.Repeat("k", MaxKeyBytes): true,
		"": false, "a.b": false, "a b": false, "é": false, strings.Repeat("k", MaxKeyBytes+1): false} {
		if ValidKey(k) != want {
			t.Errorf("ValidKey(%q) = %v", k, !want)
		}
	}
	for c, want := range map[string]bool{"forbidden": true, "cart.full": true, "e-1_x": true, ErrRateLimited: true, ErrTooManySubs: true,
		strings.Repeat("c", MaxErrorCodeBytes): true, "": false, "Cart": false, "a b": false, "a/b": false, strings.Repeat("c", MaxErrorCodeBytes+1): false} {
		if ValidErrorCode(c) != want {
			t.Errorf("ValidErrorCode(%q) = %v", c, !want)
		}
	}
}

// A peer's unknown type reaches the error's detail quoted with every rune
// beyond ASCII escaped: an invisible or reordering rune (U+202E) cannot
// pass into a message or a log raw.
func TestUnknownTypeDetailEscapesRunesBeyondASCII(t *testing.T) {
	_, err := Decode([]byte(`{"type":"x\u202eyz\u00e9"}`))
	var de *DecodeError
	if !errors.As(err, &de) || de.Code != ErrUnknownType {
		t.Fatalf("got %v, want an unknown type error", err)
	}
	if want := `unknown type "x\u202eyz\u00e9"`; de.Detail != want {
		t.Fatalf("detail %s, want %s", de.Detail, want)
	}
}
