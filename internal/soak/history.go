// Package soak is the chaos soak's history, schedule and checker: the
// runner (cmd/wsready's TestSoak) writes every client's, publisher's and
// the nemesis's observations as JSON lines; Check reads the whole history
// afterwards against the system's promises; Schedule draws the nemesis's
// faults from a seed, so a seed replays its schedule. Nothing here does
// I/O beyond the history file; the checker is tested on histories written
// by hand.
package soak

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event kinds in a history.
const (
	KindSub     = "sub"     // a client subscribed Topic from Seq (its since); N=Unacked: nobody acknowledges Topic's publishes
	KindUpdate  = "upd"     // a client was handed Topic's Seq with Data
	KindLost    = "lost"    // a client was told Topic's Seq..To cannot be delivered
	KindAck     = "ack"     // a publisher's publish of Data was acknowledged as Topic's Seq
	KindPubFail = "pubfail" // a publisher's publish of Data failed (it may be stored all the same)
	KindReq     = "req"     // a client sent request ID
	KindSettle  = "settle"  // request ID settled; Err names the class when it failed
	KindFleet   = "fleet"   // N clients of the fleet were not READY (written on change)
	KindFault   = "fault"   // the nemesis started Fault on Who
	KindHeal    = "heal"    // the nemesis healed Fault on Who
	KindSample  = "sample"  // process Who had RSS bytes and Gor goroutines (0: unknown)
	KindCrash   = "crash"   // process Who printed a panic or a race report, or exited unasked
	KindFinal   = "final"   // at the end, client Who was READY (N=1) or not (N=0; Err: its state then)
	KindSkip    = "skip"    // a fault kind the machine cannot make, Err says why
)

// Unacked is a sub event's N for a topic no publisher in the history
// acknowledges (the demo's feed, which a Chromium page follows): its
// updates are held to no duplicate, increasing seqs, no gap between its
// first and last seq not reported lost, and the final READY; not to the
// acknowledged data (there is none to hold them to).
const Unacked = 1

// Event is one line of a history. T is milliseconds since the run
// started. Data is the publish's own payload (the soak's, never a user's).
type Event struct {
	T     int64  `json:"t"`
	Kind  string `json:"k"`
	Who   string `json:"who,omitempty"`
	Topic string `json:"topic,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	To    int64  `json:"to,omitempty"`
	Data  string `json:"data,omitempty"`
	ID    int64  `json:"id,omitempty"`
	N     int64  `json:"n,omitempty"`
	Fault string `json:"fault,omitempty"`
	Err   string `json:"err,omitempty"`
	RSS   int64  `json:"rss,omitempty"`
	Gor   int64  `json:"gor,omitempty"`
}

// MaxEvents bounds a history (a 30-minute run of 1,000 clients writes
// about 3 million lines): Writer refuses more with ErrHistoryFull, and the
// run fails saying so rather than checking a history cut short.
const MaxEvents = 20_000_000

// ErrHistoryFull is Writer's error past MaxEvents.
var ErrHistoryFull = errors.New("soak: the history is full (MaxEvents)")

// Writer appends events to a JSON-lines file; safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	start time.Time
	f     *os.File
	w     *bufio.Writer
	n     int
	err   error
}

// Create starts a history at path; times are counted from start.
func Create(path string, start time.Time) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("failed to create the history: %w", err)
	}
	return &Writer{start: start, f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// Since is the history's time of now.
func (w *Writer) Since(now time.Time) int64 { return now.Sub(w.start).Milliseconds() }

// Add writes e, stamping it with now when e.T is 0. The first error
// sticks and is returned by Close.
func (w *Writer) Add(e Event) {
	if e.T == 0 {
		e.T = w.Since(time.Now())
	}
	b, err := json.Marshal(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if err != nil {
		w.err = fmt.Errorf("failed to encode a history event: %w", err)
		return
	}
	if w.n >= MaxEvents {
		w.err = ErrHistoryFull
		return
	}
	w.n++
	w.w.Write(b)
	if err := w.w.WriteByte('\n'); err != nil {
		w.err = fmt.Errorf("failed to write the history: %w", err)
	}
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = fmt.Errorf("failed to write the history: %w", err)
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("failed to close the history: %w", err)
	}
	return w.err
}

// maxLine bounds one history line (an event is under 200 bytes).
const maxLine = 64 << 10

// Read parses a history. A line that is not an event is an error naming
// its number: a damaged history is said, never checked in part.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	err := eachLine(r, func(_ int, e Event) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachLine decodes r line by line and hands each event to f.
func eachLine(r io.Reader, f func(line int, e Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	line := 0
	for sc.Scan() {
		line++
		if line > MaxEvents {
			return fmt.Errorf("failed to read the history: %w", ErrHistoryFull)
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("failed to read the history: line %d: %w", line, err)
		}
		if e.Kind == "" {
			return fmt.Errorf("failed to read the history: line %d has no kind", line)
		}
		if err := f(line, e); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("failed to read the history: %w", err)
	}
	return nil
}

// ReadFile is Read of the file at path.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open the history: %w", err)
	}
	defer f.Close()
	return Read(f)
}
