//go:build !js

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

// seedFrames is the differential fuzz's seed corpus: every frame the
// protocol's and the server's tests use, the bad-input matrix, and the
// corners where two JSON readers tend to differ (escapes, UTF-8, numbers,
// depth, duplicate keys, case of keys, space).
func seedFrames() []string {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	return []string{
		// Every type.
		`{"type":"ping","intervalMs":1000}`,
		`{"type":"subscribe","topic":"feed"}`,
		`{"type":"subscribe","topic":"feed","since":41,"stream":"s1"}`,
		`{"type":"subscribe","topic":"chat-1_x","since":0}`,
		`{"type":"unsubscribe","topic":"feed"}`,
		`{"type":"subscribed","topic":"feed","from":42,"head":50,"stream":"s1"}`,
		`{"type":"unsubscribed","topic":"feed","reason":"service_unavailable"}`,
		`{"type":"update","topic":"feed","seq":42,"data":{"a":[1,2.5e3,"x",null,true]}}`,
		`{"type":"publish","id":3,"topic":"chat","data":{"t":"hi"}}`,
		`{"type":"request","id":7,"method":"echo","params":{"text":"hi \u00e9"}}`,
		`{"type":"request","id":8,"method":"time"}`,
		`{"type":"response","id":7,"result":{"x":"y"}}`,
		`{"type":"response","id":7,"error":{"code":"unknown_method","message":"no"}}`,
		`{"type":"error","id":3,"code":"unknown_topic","message":"no","topic":"x"}`,
		`{"type":"auth","token":"v1.abc.def"}`,
		`{"type":"authenticated","expiresAt":1764467000000}`,
		`{"type":"probe","id":4}`,
		`{"type":"probe_ack","id":4}`,
		` { "extra" : [true,false,null] , "type" : "request", "id":1, "method":"a\u00e9\n\"" } `,
		// The welcome and presence frames, and the fields added since
		// (request timeoutMs and key, publish key, subscribe presence,
		// an error's retryAfterMs), valid and not.
		`{"type":"welcome","session":"q1Zb3kPm9tV0xY2zA4cD6e"}`,
		`{"type":"welcome","session":"s","user":"alice","node":"n1"}`,
		`{"type":"welcome"}`, `{"type":"welcome","session":""}`, `{"type":"welcome","session":7}`,
		`{"type":"welcome","session":"s","user":""}`, `{"type":"welcome","session":"s","node":null}`,
		`{"type":"welcome","session":"` + strings.Repeat("s", 129) + `"}`,
		`{"type":"presence","topic":"room","event":"join","user":"bob"}`,
		`{"type":"presence","topic":"room","event":"leave","user":"b\u00e9"}`,
		`{"type":"presence","topic":"room","event":"wave","user":"bob"}`, `{"type":"presence","topic":"room","user":"bob"}`,
		`{"type":"presence","topic":"room","event":"join"}`, `{"type":"presence","event":"join","user":"u"}`,
		`{"type":"presence","topic":"room","event":"join","user":""}`, `{"type":"presence","topic":"a b","event":"join","user":"u"}`,
		`{"type":"request","id":5,"method":"cart.add","params":{},"timeoutMs":5000,"key":"AbC-_09xyzABCDEF"}`,
		`{"type":"request","id":5,"method":"m","timeoutMs":3600000}`, `{"type":"request","id":5,"method":"m","timeoutMs":3600001}`,
		`{"type":"request","id":5,"method":"m","timeoutMs":0}`, `{"type":"request","id":5,"method":"m","timeoutMs":-1}`,
		`{"type":"request","id":5,"method":"m","timeoutMs":"5"}`, `{"type":"request","id":5,"method":"m","timeoutMs":1.5}`,
		`{"type":"request","id":5,"method":"m","key":""}`, `{"type":"request","id":5,"method":"m","key":"a.b"}`,
		`{"type":"request","id":5,"method":"m","key":"` + strings.Repeat("k", 65) + `"}`, `{"type":"request","id":5,"method":"m","key":5}`,
		`{"type":"publish","id":6,"topic":"chat","data":1,"key":"k1"}`, `{"type":"publish","id":6,"topic":"chat","data":1,"key":"k 1"}`,
		`{"type":"subscribe","topic":"room","presence":true}`, `{"type":"subscribe","topic":"room","presence":false,"since":3}`,
		`{"type":"subscribe","topic":"room","presence":1}`, `{"type":"subscribe","topic":"room","presence":"true"}`,
		`{"type":"subscribe","topic":"room","presence":null}`,
		`{"type":"error","code":"rate_limited","message":"slow down","retryAfterMs":250}`,
		`{"type":"error","code":"rate_limited","retryAfterMs":-1}`, `{"type":"error","code":"rate_limited","retryAfterMs":"1"}`,
		`{"type":"response","id":7,"error":{"code":"rate_limited","message":"m","retryAfterMs":1000}}`,
		`{"type":"response","id":7,"error":{"code":"rate_limited","retryAfterMs":-5}}`,
		`{"type":"response","id":7,"error":{"code":"cart.full","message":"m","retryAfterMs":1.5}}`,
		`{"type":"ping","intervalMs":1000,"presence":7,"key":"a b","timeoutMs":-1,"session":1}`,
		// The bad-input matrix.
		`hello`, `not json`, `[1]`, `[1,2,3]`, `"ping"`, `1`, `-0.0e+1`, `true`, `null`, ``, ` `, `{}`, `[{"type":1}]`,
		`{"type":"ping"`, `{"type":"`, `nul`, `{"type":"ping","intervalMs":1000} x`, `{"type":"ping"}{}`,
		`{"type":7}`, `{"type":null}`, `{"type":"nope"}`, `{"type":"dance"}`, `{"type":"ping"}`,
		`{"type":"ping","intervalMs":"1000"}`, `{"type":"ping","intervalMs":1.5}`, `{"type":"ping","intervalMs":0}`,
		`{"type":"ping","intervalMs":1e3}`, `{"type":"ping","intervalMs":-0}`, `{"type":"ping","intervalMs":null}`,
		`{"type":"ping","intervalMs":3600001}`, `{"type":"ping","intervalMs":9223372036854775808}`,
		`{"type":"subscribe"}`, `{"type":"subscribe","topic":""}`, `{"type":"subscribe","topic":"a.b"}`, `{"type":"subscribe","topic":"a..b"}`,
		`{"type":"subscribe","topic":"org:7/room.lobby","presence":true}`, `{"type":"publish","id":2,"topic":"a/b:","data":1}`,
		`{"type":"subscribe","topic":"feed","since":-1}`, `{"type":"subscribe","topic":"feed","since":"1"}`,
		`{"type":"subscribe","topic":"feed","stream":1}`, `{"type":"unsubscribe"}`,
		`{"type":"request","method":"echo"}`, `{"type":"request","id":"7","method":"echo"}`,
		`{"type":"request","id":-1,"method":"echo"}`, `{"type":"request","id":0,"method":"echo"}`,
		`{"type":"request","id":1}`, `{"type":"request","id":9,"method":""}`, `{"type":"request","id":9,"method":4}`,
		`{"type":"request","id":99999999999999999999,"method":"x"}`,
		`{"type":"response","id":1}`, `{"type":"response","id":1,"result":1,"error":{"code":"x"}}`,
		`{"type":"response","id":1,"error":"x"}`, `{"type":"response","id":1,"error":{"message":"m"}}`,
		`{"type":"update","topic":"feed","seq":1}`, `{"type":"publish","topic":"feed","data":1}`,
		`{"type":"publish","id":1,"data":1}`, `{"type":"publish","id":1,"topic":"x"}`, `{"type":"publish","id":1,"topic":"x>","data":1}`,
		`{"type":"subscribed","topic":"feed","from":-2}`, `{"type":"probe","id":-1}`, `{"type":"auth","token":""}`,
		`{"type":"update","topic":"feed","seq":3,"data":1,"id":"x","method":7}`,
		`{"type":"ping","intervalMs":500,"code":{"a":1},"topic":false}`,
		// Escapes, UTF-8, control characters.
		`{"type":"request","id":1,"method":"\ud83d\ude00"}`, `{"type":"request","id":1,"method":"\ud83d"}`,
		`{"type":"request","id":1,"method":"\ud83dx"}`, `{"type":"request","id":1,"method":"\ud83d\u0041"}`,
		`{"type":"request","id":1,"method":"\ud800\ud800\udc00"}`, `{"type":"request","id":1,"method":"\/\b\f\r\t"}`,
		`{"type":"request","id":1,"method":"\u00"}`, `{"type":"request","id":1,"method":"\x"}`,
		"{\"type\":\"subscribe\",\"topic\":\"\xff\"}", "{\"type\":\"request\",\"id\":1,\"method\":\"\xed\xa0\x80\"}",
		"{\"type\":\"request\",\"id\":1,\"method\":\"a\x01\"}", "{\"type\":\"request\",\"id\":1,\"method\":\"\u2028\x7f\"}",
		"\xef\xbb\xbf{\"type\":\"probe\",\"id\":1}", "{\"type\":\"probe\",\"id\":1}\x00",
		"\t\r\n{\"type\":\"probe\",\"id\":1}\n", "\v{\"type\":\"probe\",\"id\":1}",
		// Keys: escaped, other case, repeated.
		`{"t\u0079pe":"probe","\u0069d":5}`, `{"TYPE":"probe","id":1}`, `{"Type":"probe","type":"probe","ID":2,"id":3}`,
		`{"type":"ping","type":"request","id":1,"method":"a"}`, `{"type":"request","id":1,"id":2,"method":"a"}`,
		`{"type":"request","id":"x","id":2,"method":"a"}`, `{"type":"request","id":2,"id":"x","method":"a"}`,
		`{"type":"response","id":1,"error":{"code":1,"code":"x"}}`, `{"type":"response","id":1,"error":{"code":"x","code":1}}`,
		`{"type":"response","id":1,"error":{"code":"x","message":1,"message":"m"}}`,
		`{"type":"subscribe","topic":"a b","topic":"ok"}`, `{"type":"update","topic":"t","seq":1,"data":1,"data":[2]}`,
		// Depth: any valid non-object is not_object; the bound is 10,000 levels.
		// (Frames at the bound itself are 20 KB: deepFrames, not seeds, as
		// the fuzzer minimizes large inputs slowly.)
		deep("[", "]", 64), deep("[", "]", 65), deep("[", "]", 100), deep("[", "]", 100)[:150],
		strings.Repeat(`[{"a":`, 50) + `1` + strings.Repeat(`}]`, 50), `{"type":"update","topic":"t","seq":1,"data":` + deep("[", "]", 100) + `}`,
		// Numbers.
		`[01]`, `[1.]`, `[.5]`, `[-]`, `[1e]`, `[1E+2]`, `[-0]`, `[1e400]`, `{"type":"probe","id":1.0}`, `{"type":"probe","id":1E2}`,
	}
}

// deepFrames nest up to the decoders' bound and one level past it.
func deepFrames() []string {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	update := func(data string) string { return `{"type":"update","topic":"t","seq":1,"data":` + data + `}` }
	return []string{deep(maxDepth), deep(maxDepth + 1), update(deep(maxDepth - 1)), update(deep(maxDepth)),
		`{"type":"response","id":1,"error":{"code":"x","m":` + deep(maxDepth-2) + `}}`,
		`{"type":"response","id":1,"error":{"code":"x","m":` + deep(maxDepth-1) + `}}`}
}

func seedFuzz(f *testing.F) {
	for _, s := range append(seedFrames(), reportSeeds()...) {
		f.Add([]byte(s))
	}
}

// FuzzBothDecoders is the differential test of the protocol's two JSON
// readers: the small codec (Decode: the browser's) and encoding/json
// (DecodeJSON: the server's). For the same bytes they must give the same
// verdict (accept, or a *DecodeError with the same code and field) and
// the same Message, also the partial one an error comes with (the server
// echoes its id); so must json.Unmarshal into a Frame. Both must find JSON
// exactly where encoding/json does, and an accepted frame must read as
// encoding/json reads it on its own (a map of raw members: the last of a
// repeated key wins).
//
//	go test ./protocol -run '^$' -fuzz FuzzBothDecoders -fuzztime 2m
func FuzzBothDecoders(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		small, serr := Decode(b)
		std, jerr := DecodeJSON(b)
		if code(t, serr) != code(t, jerr) {
			t.Fatalf("%q: Decode %v, DecodeJSON %v", b, serr, jerr)
		}
		if !reflect.DeepEqual(small, std) {
			t.Fatalf("%q: Decode read %+v, DecodeJSON %+v", b, small, std)
		}
		if len(b) <= MaxFrameBytes {
			if want := utf8.Valid(b) && json.Valid(b); Valid(b) != want {
				t.Fatalf("%q: Valid %v, encoding/json and utf8 %v", b, !want, want)
			}
			unmarshalAgrees(t, b, std, jerr)
		}
		if serr == nil {
			readsAsEncodingJSON(t, b, small)
		}
	})
}

// unmarshalAgrees checks json.Unmarshal into a Frame against DecodeJSON's
// verdict and Message on b (at most MaxFrameBytes).
func unmarshalAgrees(t *testing.T, b []byte, m Message, err error) {
	t.Helper()
	var f Frame
	if uerr := json.Unmarshal(b, &f); uerr != nil {
		if code(t, err) != ErrBadJSON+"/" {
			t.Fatalf("%q: json.Unmarshal into a Frame: %v; DecodeJSON %v", b, uerr, err)
		}
		return
	}
	if code(t, f.Err) != code(t, err) || !reflect.DeepEqual(f.Message, m) {
		t.Fatalf("%q: json.Unmarshal into a Frame read %+v, %v; DecodeJSON %+v, %v", b, f.Message, f.Err, m, err)
	}
}

// code is an error's Code and Field ("" for nil).
func code(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var de *DecodeError
	if !errors.As(err, &de) || de.Code == "" {
		t.Fatalf("error %v is not a *DecodeError with a code", err)
	}
	return de.Code + "/" + de.Field
}

// readsAsEncodingJSON checks the fields m's type defines against
// encoding/json's own reading of the frame b.
func readsAsEncodingJSON(t *testing.T, b []byte, m Message) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%q accepted, but encoding/json: %v", b, err)
	}
	str := func(o map[string]json.RawMessage, key, got string) {
		var want string
		if raw, ok := o[key]; ok {
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("%q: %s: %v", b, key, err)
			}
		}
		if got != want {
			t.Fatalf("%q: %s read as %q, encoding/json %q", b, key, got, want)
		}
	}
	num := func(key string, got int64) {
		var want int64
		if raw, ok := obj[key]; ok {
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("%q: %s: %v", b, key, err)
			}
		}
		if got != want {
			t.Fatalf("%q: %s read as %d, encoding/json %d", b, key, got, want)
		}
	}
	raw := func(key string, got []byte) {
		if want := obj[key]; !bytes.Equal(got, want) {
			t.Fatalf("%q: %s read as %s, encoding/json %s", b, key, got, want)
		}
	}
	boolean := func(key string, got bool) {
		var want bool
		if raw, ok := obj[key]; ok {
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("%q: %s: %v", b, key, err)
			}
		}
		if got != want {
			t.Fatalf("%q: %s read as %v, encoding/json %v", b, key, got, want)
		}
	}
	str(obj, "type", string(m.Type))
	switch m.Type {
	case TypePing:
		num("intervalMs", m.IntervalMs)
	case TypeSubscribe:
		str(obj, "topic", m.Topic)
		num("since", m.Since)
		if _, ok := obj["since"]; ok != m.HasSince {
			t.Fatalf("%q: HasSince %v", b, m.HasSince)
		}
		str(obj, "stream", m.Stream)
		boolean("presence", m.Presence)
	case TypeWelcome:
		str(obj, "session", m.Session)
		str(obj, "user", m.User)
		str(obj, "node", m.Node)
	case TypePresence:
		str(obj, "topic", m.Topic)
		str(obj, "event", m.Event)
		str(obj, "user", m.User)
	case TypeUnsubscribe:
		str(obj, "topic", m.Topic)
	case TypeSubscribed:
		str(obj, "topic", m.Topic)
		num("from", m.From)
		num("head", m.Head)
		str(obj, "stream", m.Stream)
	case TypeUnsubscribed:
		str(obj, "topic", m.Topic)
		str(obj, "reason", m.Reason)
	case TypeUpdate:
		str(obj, "topic", m.Topic)
		num("seq", m.Seq)
		raw("data", m.Data)
	case TypePublish:
		num("id", int64(m.ID))
		str(obj, "topic", m.Topic)
		raw("data", m.Data)
		str(obj, "key", m.Key)
	case TypeRequest:
		num("id", int64(m.ID))
		str(obj, "method", m.Method)
		raw("params", m.Params)
		num("timeoutMs", m.TimeoutMs)
		str(obj, "key", m.Key)
	case TypeResponse:
		num("id", int64(m.ID))
		raw("result", m.Result)
		if m.Error != nil {
			var eb map[string]json.RawMessage
			if err := json.Unmarshal(obj["error"], &eb); err != nil {
				t.Fatalf("%q: error: %v", b, err)
			}
			str(eb, "code", m.Error.Code)
			str(eb, "message", m.Error.Message)
			var retry int64
			if r, ok := eb["retryAfterMs"]; ok {
				if err := json.Unmarshal(r, &retry); err != nil {
					t.Fatalf("%q: error.retryAfterMs: %v", b, err)
				}
			}
			if retry != m.Error.RetryAfterMs {
				t.Fatalf("%q: error.retryAfterMs read as %d, encoding/json %d", b, m.Error.RetryAfterMs, retry)
			}
		}
	case TypeAuth, TypeRefresh:
		str(obj, "token", m.Token)
	case TypeAuthenticated:
		num("expiresAt", m.ExpiresAt)
	case TypeProbe, TypeProbeAck:
		num("id", int64(m.ID))
	case TypeError:
		num("id", int64(m.ID))
		str(obj, "code", m.Error.Code)
		str(obj, "message", m.Error.Message)
		str(obj, "topic", m.Topic)
		num("retryAfterMs", m.Error.RetryAfterMs)
	case TypeReport:
		reportReadsAsEncodingJSON(t, b, obj["report"], m.Report)
	default:
		t.Fatalf("%q: accepted type %q", b, m.Type)
	}
}

// The seed corpus passes the differential checks (go test runs it; the
// fuzzer starts from it).
func TestBothDecodersAgreeOnTheSeeds(t *testing.T) {
	accepted := 0
	for _, s := range append(seedFrames(), deepFrames()...) {
		b := []byte(s)
		small, serr := Decode(b)
		std, jerr := DecodeJSON(b)
		if code(t, serr) != code(t, jerr) || !reflect.DeepEqual(small, std) {
			t.Errorf("%.80q: Decode %+v %v; DecodeJSON %+v %v", s, small, serr, std, jerr)
			continue
		}
		unmarshalAgrees(t, b, std, jerr)
		if serr == nil {
			readsAsEncodingJSON(t, b, small)
			accepted++
		}
	}
	if accepted < 20 {
		t.Fatalf("only %d seeds accepted", accepted)
	}
}

// A repeated key keeps its last value, in both decoders and at every
// level (a response's error object too), as encoding/json reads it.
func TestARepeatedKeyKeepsItsLastValue(t *testing.T) {
	cases := []struct {
		in   string
		want Message
	}{
		{`{"type":"ping","type":"request","id":1,"method":"a"}`, Message{Type: TypeRequest, ID: 1, Method: "a"}},
		{`{"type":"request","id":"x","id":2,"method":"a"}`, Message{Type: TypeRequest, ID: 2, Method: "a"}},
		{`{"type":"subscribe","topic":"a b","topic":"ok"}`, Message{Type: TypeSubscribe, Topic: "ok"}},
		{`{"type":"response","id":1,"error":{"code":1,"code":"x"}}`, Message{Type: TypeResponse, ID: 1, Error: &ErrorBody{Code: "x"}}},
		{`{"type":"response","id":1,"error":{"code":"x","message":1,"message":"m"}}`, Message{Type: TypeResponse, ID: 1, Error: &ErrorBody{Code: "x", Message: "m"}}},
	}
	for _, c := range cases {
		for name, decode := range map[string]func([]byte) (Message, error){"Decode": Decode, "DecodeJSON": DecodeJSON} {
			got, err := decode([]byte(c.in))
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s(%s) = %+v, %v; want %+v", name, c.in, got, err, c.want)
			}
		}
	}
	// The last value decides also when it is the bad one.
	for _, in := range []string{`{"type":"request","id":2,"id":"x","method":"a"}`, `{"type":"response","id":1,"error":{"code":"x","code":1}}`} {
		_, serr := Decode([]byte(in))
		_, jerr := DecodeJSON([]byte(in))
		if code(t, serr) != code(t, jerr) || !strings.HasPrefix(code(t, serr), ErrWrongType) {
			t.Errorf("%s: Decode %v, DecodeJSON %v; want wrong_type from both", in, serr, jerr)
		}
	}
}

// A frame that is JSON but not an object is not_object whatever its depth,
// up to the bound both decoders share (10,000 levels, encoding/json's);
// past the bound, or unfinished, it is bad_json. An object frame's data
// may nest up to the same bound.
func TestNotAnObjectIsOneRuleAtEveryDepth(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	update := func(data string) string { return `{"type":"update","topic":"t","seq":1,"data":` + data + `}` }
	cases := []struct{ in, code string }{
		{`[1,2,3]`, ErrNotObject},
		{deep(65), ErrNotObject},
		{deep(1000), ErrNotObject},
		{deep(maxDepth), ErrNotObject},
		{strings.Repeat(`[{"a":`, 2000) + `1` + strings.Repeat(`}]`, 2000), ErrNotObject},
		{deep(maxDepth + 1), ErrBadJSON},
		{deep(1000)[:1500], ErrBadJSON},
		{update(deep(maxDepth - 1)), ""},
		{update(deep(maxDepth)), ErrBadJSON},
	}
	for _, c := range cases {
		for name, decode := range map[string]func([]byte) (Message, error){"Decode": Decode, "DecodeJSON": DecodeJSON} {
			_, err := decode([]byte(c.in))
			got := ""
			if err != nil {
				got = err.(*DecodeError).Code
			}
			if got != c.code {
				t.Errorf("%s(%d bytes, %.20s...) = %q, want %q", name, len(c.in), c.in, got, c.code)
			}
		}
	}
}

// Invalid UTF-8 is bad_json through encoding/json too (which on its own
// would read it as U+FFFD).
func TestDecodeJSONRefusesInvalidUTF8(t *testing.T) {
	for _, in := range []string{"{\"type\":\"subscribe\",\"topic\":\"\xff\"}", "{\"type\":\"update\",\"topic\":\"t\",\"seq\":1,\"data\":\"\xc3\"}"} {
		_, err := DecodeJSON([]byte(in))
		if code(t, err) != ErrBadJSON+"/" {
			t.Errorf("DecodeJSON(%q) = %v, want bad_json", in, err)
		}
	}
}

// Through encoding/json, a frame that is JSON but not a valid message
// still yields what was read: a request's id for its error frame.
func TestFrameKeepsTheVerdictAndTheID(t *testing.T) {
	var f Frame
	if err := json.Unmarshal([]byte(`{"type":"request","id":9,"method":""}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.Type != TypeRequest || f.ID != 9 || code(t, f.Err) != ErrWrongType+"/method" {
		t.Fatalf("frame %+v, verdict %v", f.Message, f.Err)
	}
	if err := json.Unmarshal([]byte(`{"type":`), &f); err == nil {
		t.Fatal("malformed JSON did not fail json.Unmarshal")
	}
}

// The reply types write, through encoding/json, what Encode writes for the
// same message, and both decoders read it back.
func TestReplyFramesEncodeAsEncodeDoes(t *testing.T) {
	cases := []struct {
		frame any
		m     Message
	}{
		{ResponseFrame{Type: TypeResponse, ID: 7, Result: json.RawMessage(`{"text":"hi \u00e9","n":[1,2.5]}`)}, Message{Type: TypeResponse, ID: 7, Result: []byte(`{"text":"hi \u00e9","n":[1,2.5]}`)}},
		{ResponseFrame{Type: TypeResponse, ID: 8, Result: json.RawMessage(`null`)}, Message{Type: TypeResponse, ID: 8, Result: []byte(`null`)}},
		{ResponseFrame{Type: TypeResponse, ID: 9, Error: &ErrorBody{Code: ErrUnknownMethod, Message: "methods are echo and time"}}, Message{Type: TypeResponse, ID: 9, Error: &ErrorBody{Code: ErrUnknownMethod, Message: "methods are echo and time"}}},
		{ErrorFrame{Type: TypeError, Code: ErrBadJSON, Message: "failed to decode frame: bad_json: \"quoted\"\n\xff"}, Message{Type: TypeError, Error: &ErrorBody{Code: ErrBadJSON, Message: "failed to decode frame: bad_json: \"quoted\"\n\xff"}}},
		{ErrorFrame{Type: TypeError, ID: 3, Code: ErrUnknownTopic, Message: "no", Topic: "x"}, Message{Type: TypeError, ID: 3, Topic: "x", Error: &ErrorBody{Code: ErrUnknownTopic, Message: "no"}}},
		{ProbeAckFrame{Type: TypeProbeAck, ID: 4}, Message{Type: TypeProbeAck, ID: 4}},
		{SubscribedFrame{Type: TypeSubscribed, Topic: "feed", From: 43, Head: 57, Stream: "9f1c"}, Message{Type: TypeSubscribed, Topic: "feed", From: 43, Head: 57, Stream: "9f1c"}},
		{SubscribedFrame{Type: TypeSubscribed, Topic: "feed"}, Message{Type: TypeSubscribed, Topic: "feed"}},
		{UnsubscribedFrame{Type: TypeUnsubscribed, Topic: "chat", Reason: "requested"}, Message{Type: TypeUnsubscribed, Topic: "chat", Reason: "requested"}},
		{AuthenticatedFrame{Type: TypeAuthenticated, ExpiresAt: 1764467000000}, Message{Type: TypeAuthenticated, ExpiresAt: 1764467000000}},
		{WelcomeFrame{Type: TypeWelcome, Session: "q1Zb3kPm9tV0xY2zA4cD6e"}, Message{Type: TypeWelcome, Session: "q1Zb3kPm9tV0xY2zA4cD6e"}},
		{WelcomeFrame{Type: TypeWelcome, Session: "s", User: "alice", Node: "n-2"}, Message{Type: TypeWelcome, Session: "s", User: "alice", Node: "n-2"}},
		{PresenceFrame{Type: TypePresence, Topic: "room", Event: PresenceLeave, User: "bob"}, Message{Type: TypePresence, Topic: "room", Event: PresenceLeave, User: "bob"}},
		{ErrorFrame{Type: TypeError, Code: ErrRateLimited, Message: "slow down", RetryAfterMs: 250}, Message{Type: TypeError, Error: &ErrorBody{Code: ErrRateLimited, Message: "slow down", RetryAfterMs: 250}}},
		{ResponseFrame{Type: TypeResponse, ID: 10, Error: &ErrorBody{Code: ErrRateLimited, Message: "slow down", RetryAfterMs: 1000}}, Message{Type: TypeResponse, ID: 10, Error: &ErrorBody{Code: ErrRateLimited, Message: "slow down", RetryAfterMs: 1000}}},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.frame)
		if err != nil {
			t.Fatal(err)
		}
		if want := Encode(c.m); !bytes.Equal(got, want) {
			t.Errorf("%T:\nencoding/json %s\nEncode        %s", c.frame, got, want)
		}
		for name, decode := range map[string]func([]byte) (Message, error){"Decode": Decode, "DecodeJSON": DecodeJSON} {
			back, err := decode(got)
			if c.m.Type == TypeError {
				c.m.Error.Message = strings.ToValidUTF8(c.m.Error.Message, "\ufffd")
			}
			if err != nil || !reflect.DeepEqual(back, c.m) {
				t.Errorf("%s(%s) = %+v, %v", name, got, back, err)
			}
		}
	}
}

// A raw field goes out as the same JSON value, but encoding/json compacts
// it and escapes <, > and & in its strings (Encode copies it as it is).
func TestReplyFramesKeepARawFieldsValue(t *testing.T) {
	in := []byte("{ \"text\" : \"<b> & \u2028\" }")
	out, err := json.Marshal(ResponseFrame{Type: TypeResponse, ID: 1, Result: in})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	json.Unmarshal(in, &want)
	json.Unmarshal(m.Result, &got)
	if !reflect.DeepEqual(got, want) || string(m.Result) != `{"text":"\u003cb\u003e \u0026 \u2028"}` {
		t.Fatalf("result %s from %s", m.Result, in)
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	frame := []byte(`{"type":"request","id":7,"method":"echo","params":{"text":"hello, world","n":[1,2,3]}}`)
	b.Run("small", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeJSON(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
}
