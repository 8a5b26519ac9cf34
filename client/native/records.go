//go:build !js

package native

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wsready/wsready/client"
)

// Decision records as JSON lines, for an operator to keep and replay
// (client/records.go says what a record holds). One line per record:
//
//	{"at":"2026-01-01T00:00:12.2Z","session":"888888888888","epoch":4,"attempt":2,"class":"backoff","by":"network","code":1006,"admission":"unreached","capMs":4000,"delayMs":1730,"retryAfterMs":0,"budgetLeft":-1,"windowLeftMs":11800,"acked":[{"topic":"chat","seq":41}],"outcome":"reconnect"}
//
// Durations are milliseconds, exact to the nanosecond (up to six decimals);
// -1 is unbounded (budgetLeft, windowLeftMs). A READY that ends a run has
// outcome "ready" and recoveredMs. No token, payload or peer text is in a
// line: only times, numbers, bounded enums, the random session ref and
// the app's own topic names.

// RecordLog writes records as JSON lines to a writer: pass its Record
// method as Options.OnRecord. Clients may share one log: each line is
// written whole, one at a time. After a write fails it writes nothing
// more, and Err says why.
type RecordLog struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewRecordLog returns a log writing to w (a file, os.Stdout).
func NewRecordLog(w io.Writer) *RecordLog { return &RecordLog{w: w} }

// Record writes r as one line.
func (l *RecordLog) Record(r Record) {
	b, err := MarshalRecord(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	if err != nil {
		l.err = fmt.Errorf("failed to write a record: %w", err)
	}
}

// Err is the first write's error, or nil.
func (l *RecordLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// maxRecordLine bounds a line ReadRecords reads: 1 MiB, far above a
// record of a thousand topics.
const maxRecordLine = 1 << 20

// ReadRecords reads JSON lines a RecordLog wrote (blank lines skipped).
// A line it cannot read is an error naming its number; a line over 1 MiB
// is one too.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxRecordLine)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rec, err := UnmarshalRecord(line)
		if err != nil {
			return out, fmt.Errorf("failed to read record line %d: %w", n, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("failed to read records: %w", err)
	}
	return out, nil
}

// recordJSON is a Record's line.
type recordJSON struct {
	At         time.Time   `json:"at"`
	Session    string      `json:"session"`
	Epoch      uint64      `json:"epoch"`
	Attempt    int         `json:"attempt"`
	Class      string      `json:"class,omitempty"`
	By         string      `json:"by,omitempty"`
	Code       int         `json:"code,omitempty"`
	Admission  string      `json:"admission,omitempty"`
	Cap        ms          `json:"capMs"`
	Delay      ms          `json:"delayMs"`
	RetryAfter ms          `json:"retryAfterMs"`
	BudgetLeft int         `json:"budgetLeft"`
	WindowLeft ms          `json:"windowLeftMs"`
	Acked      []ackedJSON `json:"acked,omitempty"`
	Outcome    string      `json:"outcome"`
	Recovered  *ms         `json:"recoveredMs,omitempty"`
}

type ackedJSON struct {
	Topic string `json:"topic"`
	Seq   int64  `json:"seq"`
}

// MarshalRecord is r's line, without its newline.
func MarshalRecord(r Record) ([]byte, error) {
	j := recordJSON{At: r.At.UTC(), Session: r.Session, Epoch: r.Epoch, Attempt: r.Attempt, Code: r.Code,
		Admission: string(r.Admission), Cap: ms(r.Cap), Delay: ms(r.Delay), RetryAfter: ms(r.RetryAfter),
		BudgetLeft: r.BudgetLeft, WindowLeft: ms(r.WindowLeft), Outcome: string(r.Outcome)}
	if r.Class != 0 {
		j.Class = r.Class.String()
	}
	if r.By != 0 {
		j.By = r.By.String()
	}
	for _, a := range r.Acked {
		j.Acked = append(j.Acked, ackedJSON{Topic: a.Topic, Seq: a.Seq})
	}
	if r.Outcome == client.OutcomeReady {
		rec := ms(r.Recovered)
		j.Recovered = &rec
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("failed to encode a record: %w", err)
	}
	return b, nil
}

// UnmarshalRecord reads one line MarshalRecord wrote. Unknown fields are
// refused, as are enums it does not know.
func UnmarshalRecord(b []byte) (Record, error) {
	var j recordJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return Record{}, fmt.Errorf("failed to decode a record: %w", err)
	}
	r := Record{At: j.At, Session: j.Session, Epoch: j.Epoch, Attempt: j.Attempt, Code: j.Code,
		Cap: time.Duration(j.Cap), Delay: time.Duration(j.Delay), RetryAfter: time.Duration(j.RetryAfter),
		BudgetLeft: j.BudgetLeft, WindowLeft: time.Duration(j.WindowLeft), Outcome: Outcome(j.Outcome)}
	var ok bool
	if r.Class, ok = parseClass(j.Class); !ok {
		return Record{}, fmt.Errorf("failed to decode a record: unknown class %q", j.Class)
	}
	if r.By, ok = parseBy(j.By); !ok {
		return Record{}, fmt.Errorf("failed to decode a record: unknown by %q", j.By)
	}
	switch a := Admission(j.Admission); a {
	case client.AdmissionNone, client.Admitted, client.Refused, client.Unreached:
		r.Admission = a
	default:
		return Record{}, fmt.Errorf("failed to decode a record: unknown admission %q", j.Admission)
	}
	switch r.Outcome {
	case client.OutcomeReconnect, client.OutcomeRefresh, client.OutcomeWaitOnline, client.OutcomeWaitVisible,
		client.OutcomeWaitLeader, client.OutcomeReady, Outcome(client.Ended), Outcome(client.Forbidden),
		Outcome(client.RefreshExhausted), Outcome(client.GaveUp), Outcome(client.Stopped):
	default:
		return Record{}, fmt.Errorf("failed to decode a record: unknown outcome %q", j.Outcome)
	}
	for _, a := range j.Acked {
		r.Acked = append(r.Acked, TopicSeq{Topic: a.Topic, Seq: a.Seq})
	}
	if j.Recovered != nil {
		r.Recovered = time.Duration(*j.Recovered)
	}
	return r, nil
}

func parseClass(s string) (Class, bool) {
	if s == "" {
		return 0, true
	}
	for c := client.ClassBackoff; c <= client.ClassEnded; c++ {
		if c.String() == s {
			return c, true
		}
	}
	return 0, false
}

func parseBy(s string) (By, bool) {
	if s == "" {
		return 0, true
	}
	for b := client.ByServer; b <= client.ByClient; b++ {
		if b.String() == s {
			return b, true
		}
	}
	return 0, false
}

// ms is a duration written as milliseconds, exact to the nanosecond: a
// whole number, or up to six decimals. A negative one is written -1 (the
// records' "unbounded") and read back as -1 ns.
type ms time.Duration

func (d ms) MarshalJSON() ([]byte, error) {
	if d < 0 {
		return []byte("-1"), nil
	}
	whole, frac := int64(d)/1e6, int64(d)%1e6
	s := strconv.FormatInt(whole, 10)
	if frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
	}
	return []byte(s), nil
}

var errMs = errors.New("want milliseconds: digits with at most six decimals, or -1")

func (d *ms) UnmarshalJSON(b []byte) error {
	s := string(b)
	if strings.HasPrefix(s, "-") {
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return errMs
		}
		*d = -1
		return nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 {
		return errMs
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/1_000_000 {
		return errMs
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil || f < 0 {
			return errMs
		}
	}
	if f > math.MaxInt64-w*1e6 {
		return errMs
	}
	*d = ms(w*1e6 + f)
	return nil
}
