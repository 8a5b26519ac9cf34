package protocol

import "strconv"

// The readiness report: what a client tells the server, on the live
// connection, when it became READY (its first time, or again after
// losing it) or moved to another transport. The server validates it and
// counts it into its metrics, which Prometheus sums across nodes
// (docs/operations.md). A report is fixed numbers and names from closed
// lists: it carries no peer text, token, topic or payload, so nothing in
// it can identify a user or leak what they read.
//
//	{"type":"report","report":{"kind":"recovery","notReadyMs":1840,"attempts":3,
//	 "cause":"network","transport":"ws","refusedBusy":1,"refusedSlot":0,"lost":0,"role":"alone"}}
//
// Every field is required; Decode refuses a value outside its range or
// list with ErrWrongType and the field's name (report.kind, ...), so a
// server can count a bad report by field without quoting it.

// TypeReport is the client's readiness report (client to server; no
// answer).
const TypeReport Type = "report"

// Report kinds.
const (
	ReportConnect   = "connect"   // the client's first READY: NotReadyMs since it started
	ReportRecovery  = "recovery"  // READY again after losing it: NotReadyMs without READY
	ReportTransport = "transport" // READY moved to another transport without losing READY; NotReadyMs 0
)

// Tab roles (a report's role).
const (
	RoleAlone    = "alone"    // a client with no tab leadership (a native client, a page without it)
	RoleLeader   = "leader"   // the tab that holds the connection for others
	RoleFollower = "follower" // a tab that relays the leader's connection
)

// CauseNone is a report's cause when READY was lost with the connection
// still up (a topic refused, the service's unsubscribe) or, for a connect
// or transport report, when nothing failed.
const CauseNone = "none"

// ReportCauses are a report's causes: CauseNone and the client's failure
// classes (client.FailureClass, which a test holds to this list).
var ReportCauses = []string{CauseNone, "network", "refused", "timeout", "heartbeat", "silent", "token",
	"token_expired", "forbidden", "origin", "ended", "closed", "send_stalled"}

// Bounds of a report's numbers.
const (
	// MaxReportMs bounds notReadyMs: a day. A client without READY for
	// longer reports a day.
	MaxReportMs = 86_400_000
	// MaxReportCount bounds attempts, refusedBusy, refusedSlot and lost.
	MaxReportCount = 100_000
)

// Report is a report frame's body.
type Report struct {
	Kind       string // ReportConnect, ReportRecovery or ReportTransport
	NotReadyMs int64  // how long the client was not READY, 0..MaxReportMs
	Attempts   int64  // sockets dialled to get READY back, 0..MaxReportCount
	Cause      string // one of ReportCauses: why READY was lost (the first failure of the outage)
	Transport  string // "ws" or "http": the transport READY came back on
	// RefusedBusy counts the server's refusals met in the outage that said
	// it was busy (1013; HTTP 429 and 503 as a driver reports them);
	// RefusedSlot the other closes that carried a retry-after (a
	// restart's or a drain's reconnect slot).
	RefusedBusy int64
	RefusedSlot int64
	Lost        int64  // continuity losses met (updates the server could no longer replay)
	Role        string // RoleAlone, RoleLeader or RoleFollower
}

// decodeReport reads a report frame's body, every field checked, in the
// order of reportFieldNames: one loop over a table, not a function per
// field (the browser client carries this decoder too).
func decodeReport(m *Message, f *fields) *DecodeError {
	v := f.raw[fReport]
	if v == nil {
		return missing("report", m.Type)
	}
	if v[0] != '{' {
		return &DecodeError{Code: ErrWrongType, Field: "report", Detail: "must be an object"}
	}
	var raw [nReportFields][]byte
	s := scanner{b: v}
	if err := s.members(1, func(key, val []byte) {
		if k := reportFieldOf(f.unquote(key)); k >= 0 {
			raw[k] = val
		}
	}); err != nil {
		return err
	}
	var strs [nReportFields]string
	var nums [nReportFields]int64
	for k := range nReportFields {
		name := "report." + reportFieldNames[k]
		if raw[k] == nil {
			return &DecodeError{Code: ErrMissingField, Field: name, Detail: "report needs " + reportFieldNames[k]}
		}
		allowed := reportEnums[k]
		if allowed == nil {
			n, err := asInt(name, raw[k])
			if err != nil {
				return err
			}
			most := int64(MaxReportCount)
			if k == rNotReadyMs {
				most = MaxReportMs
			}
			if n < 0 || n > most {
				return &DecodeError{Code: ErrWrongType, Field: name, Detail: "must be between 0 and " + strconv.FormatInt(most, 10)}
			}
			nums[k] = n
			continue
		}
		got, err := f.asString(name, raw[k])
		if err != nil {
			return err
		}
		known := false
		for _, a := range allowed {
			known = known || got == a
		}
		if !known {
			return &DecodeError{Code: ErrWrongType, Field: name, Detail: "not a known value"}
		}
		strs[k] = got
	}
	m.Report = &Report{Kind: strs[rKind], NotReadyMs: nums[rNotReadyMs], Attempts: nums[rAttempts], Cause: strs[rCause],
		Transport: strs[rTransport], RefusedBusy: nums[rRefusedBusy], RefusedSlot: nums[rRefusedSlot], Lost: nums[rLost], Role: strs[rRole]}
	return nil
}

// A report body's keys, in the order the encoder writes them.
const (
	rKind = iota
	rNotReadyMs
	rAttempts
	rCause
	rTransport
	rRefusedBusy
	rRefusedSlot
	rLost
	rRole
	nReportFields
)

var reportFieldNames = [nReportFields]string{"kind", "notReadyMs", "attempts", "cause", "transport", "refusedBusy", "refusedSlot", "lost", "role"}

// reportEnums are the values each string field may take; nil for a
// number.
var reportEnums = [nReportFields][]string{
	rKind:      {ReportConnect, ReportRecovery, ReportTransport},
	rCause:     ReportCauses,
	rTransport: {"ws", "http"},
	rRole:      {RoleAlone, RoleLeader, RoleFollower},
}

func reportFieldOf(key string) int {
	for i, n := range reportFieldNames {
		if n == key {
			return i
		}
	}
	return -1
}

// appendReport appends a report frame's body (,"report":{...}); a nil
// report is written empty, which Decode refuses.
func appendReport(b []byte, r *Report) []byte {
	b = appendKey(b, "report")
	if r == nil {
		return append(b, "{}"...)
	}
	strs := [nReportFields]string{rKind: r.Kind, rCause: r.Cause, rTransport: r.Transport, rRole: r.Role}
	nums := [nReportFields]int64{rNotReadyMs: r.NotReadyMs, rAttempts: r.Attempts, rRefusedBusy: r.RefusedBusy, rRefusedSlot: r.RefusedSlot, rLost: r.Lost}
	b = append(b, '{')
	for k := range nReportFields {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendString(b, reportFieldNames[k])
		b = append(b, ':')
		if reportEnums[k] != nil {
			b = appendString(b, strs[k])
		} else {
			b = strconv.AppendInt(b, nums[k], 10)
		}
	}
	return append(b, '}')
}
