package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const goodReport = `{"type":"report","report":{"kind":"recovery","notReadyMs":1840,"attempts":3,"cause":"network","transport":"ws","refusedBusy":1,"refusedSlot":0,"lost":2,"role":"alone"}}`

// reportSeeds are report frames, valid and not, for both fuzz targets.
func reportSeeds() []string {
	bad := func(field, value string) string {
		return strings.Replace(goodReport, `"`+field+`":`, `"`+field+`":`+value+`,"x`+field+`":`, 1)
	}
	return []string{
		goodReport,
		`{"type":"report","report":{"kind":"connect","notReadyMs":0,"attempts":1,"cause":"none","transport":"http","refusedBusy":0,"refusedSlot":0,"lost":0,"role":"leader"}}`,
		`{"type":"report"}`, `{"type":"report","report":null}`, `{"type":"report","report":[]}`, `{"type":"report","report":{}}`,
		bad("kind", `"wave"`), bad("notReadyMs", `-1`), bad("notReadyMs", `86400001`), bad("attempts", `1.5`),
		bad("cause", `"peer text"`), bad("transport", `"sse"`), bad("refusedBusy", `"1"`), bad("lost", `100001`),
		bad("role", `7`), `{"type":"report","report":{"kind":"recovery","kind":"transport"}}`,
		`{"type":"report","report":{"k\u0069nd":"transport","notReadyMs":0,"attempts":0,"cause":"none","transport":"ws","refusedBusy":0,"refusedSlot":0,"lost":0,"role":"follower","extra":{"a":[1]}}}`,
	}
}

func TestReportDecodesAndRoundTrips(t *testing.T) {
	m, err := Decode([]byte(goodReport))
	if err != nil {
		t.Fatal(err)
	}
	want := &Report{Kind: ReportRecovery, NotReadyMs: 1840, Attempts: 3, Cause: "network", Transport: "ws", RefusedBusy: 1, Lost: 2, Role: RoleAlone}
	if m.Type != TypeReport || !reflect.DeepEqual(m.Report, want) {
		t.Fatalf("decoded %+v, report %+v; want %+v", m, m.Report, want)
	}
	again, err := Decode(Encode(m))
	if err != nil || !reflect.DeepEqual(again, m) {
		t.Fatalf("round trip: %+v, %v", again, err)
	}
	if string(Encode(m)) != goodReport {
		t.Fatalf("Encode wrote %s, want %s", Encode(m), goodReport)
	}
}

// Every field is checked: a bad one is a DecodeError naming it, and the
// error's text does not quote the value.
func TestReportRefusesEachBadField(t *testing.T) {
	cases := []struct{ field, value, code string }{
		{"kind", `"wave"`, ErrWrongType}, {"notReadyMs", `-1`, ErrWrongType}, {"notReadyMs", `86400001`, ErrWrongType},
		{"attempts", `1.5`, ErrWrongType}, {"attempts", `100001`, ErrWrongType}, {"cause", `"secret-peer-text"`, ErrWrongType},
		{"transport", `"sse"`, ErrWrongType}, {"refusedBusy", `"1"`, ErrWrongType}, {"refusedSlot", `-3`, ErrWrongType},
		{"lost", `null`, ErrWrongType}, {"role", `"secret-peer-text"`, ErrWrongType},
	}
	for _, c := range cases {
		in := strings.Replace(goodReport, `"`+c.field+`":`, `"`+c.field+`":`+c.value+`,"ignored":`, 1)
		_, err := Decode([]byte(in))
		var de *DecodeError
		if !errors.As(err, &de) || de.Code != c.code || de.Field != "report."+c.field {
			t.Errorf("%s=%s: got %v, want %s on report.%s", c.field, c.value, err, c.code, c.field)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error quotes the value: %v", c.field, err)
		}
	}
	for _, f := range reportFieldNames {
		in := strings.Replace(goodReport, `"`+f+`":`, `"un`+f+`":`, 1)
		var de *DecodeError
		if _, err := Decode([]byte(in)); !errors.As(err, &de) || de.Code != ErrMissingField || de.Field != "report."+f {
			t.Errorf("without %s: got %v, want missing_field report.%s", f, err, f)
		}
	}
	for _, in := range []string{`{"type":"report"}`, `{"type":"report","report":1}`} {
		var de *DecodeError
		if _, err := Decode([]byte(in)); !errors.As(err, &de) || de.Field != "report" {
			t.Errorf("%s: got %v, want an error on report", in, err)
		}
	}
}

// reportReadsAsEncodingJSON checks a decoded report against encoding/json's
// reading of its body (the fuzz targets' check).
func reportReadsAsEncodingJSON(t *testing.T, frame, body []byte, got *Report) {
	t.Helper()
	var want struct {
		Kind        string `json:"kind"`
		NotReadyMs  int64  `json:"notReadyMs"`
		Attempts    int64  `json:"attempts"`
		Cause       string `json:"cause"`
		Transport   string `json:"transport"`
		RefusedBusy int64  `json:"refusedBusy"`
		RefusedSlot int64  `json:"refusedSlot"`
		Lost        int64  `json:"lost"`
		Role        string `json:"role"`
	}
	// encoding/json matches keys case-insensitively; the protocol does
	// not: read the exact keys only.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		t.Fatalf("%q: report: %v", frame, err)
	}
	exact := map[string]json.RawMessage{}
	for _, k := range reportFieldNames {
		if v, ok := members[k]; ok {
			exact[k] = v
		}
	}
	b, _ := json.Marshal(exact)
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%q: report: %v", frame, err)
	}
	if got == nil || *got != (Report{Kind: want.Kind, NotReadyMs: want.NotReadyMs, Attempts: want.Attempts, Cause: want.Cause, Transport: want.Transport,
		RefusedBusy: want.RefusedBusy, RefusedSlot: want.RefusedSlot, Lost: want.Lost, Role: want.Role}) {
		t.Fatalf("%q: report read as %+v, encoding/json %+v", frame, got, want)
	}
}
