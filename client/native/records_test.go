//go:build !js

package native

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
)

var updateStorm = flag.Bool("update-storm", false, "rewrite testdata/storm.jsonl from the storm")

// storm drives a client core through the guide's storm on a fake clock,
// as the native loop would (the socket events it would post, the timer it
// would arm), and returns the records it took, in order. The draws of
// the decisions are scripted: r is the next decision's.
//
//	0 s    socket 1 READY on topic chat; update 41 delivered
//	1 s    socket 1 lost (1006): backoff, r 0.2     run A
//	       socket 2 fails before it opens: r 0.3
//	       socket 3 READY, for the 5 s cooldown: run A ends
//	T      socket 3 lost (1006): r 0.7               run B, the storm
//	T+0.7  socket 4 dialled; the server's host takes the TCP connection
//	       and drops it 2.5 s later (1006, never opened): r 0.865
//	       socket 5 READY: run B ends
func storm(t *testing.T) []Record {
	t.Helper()
	r := 0.5
	core, err := client.New(client.Config{
		Rand: func() float64 { return r }, Topic: "chat", RecordRecoveries: true,
		Policy: client.FullJitter{Base: time.Second, Cap: 4 * time.Second}, Window: 15 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []Record
	var timer time.Time
	var dialled client.SocketID
	drain := func() {
		for _, e := range core.Effects() {
			switch e.Kind {
			case client.EffRecord:
				recs = append(recs, e.Record)
			case client.EffTimer:
				timer = e.At
			case client.EffDial:
				dialled = e.Socket
			}
		}
	}
	// until moves the clock to at, firing the timer on the way.
	until := func(at time.Time) {
		for !timer.IsZero() && !timer.After(at) {
			now, timer = timer, time.Time{}
			core.Tick(now)
			drain()
		}
		now = at
	}
	ready := func(s client.SocketID) {
		core.Opened(s, now)
		core.Received(s, []byte(`{"type":"ping","intervalMs":1000}`), now)
		core.Received(s, []byte(`{"type":"subscribed","topic":"chat"}`), now)
		drain()
		if !core.State().Ready {
			t.Fatalf("socket %d not READY: %+v", s, core.State())
		}
	}
	alive := func(s client.SocketID, d time.Duration) { // the server pings every second
		for end := now.Add(d); now.Before(end); {
			until(now.Add(time.Second))
			core.Received(s, []byte(`{"type":"ping","intervalMs":1000}`), now)
			drain()
		}
	}
	lose := func(s client.SocketID, draw float64) {
		r = draw
		core.Closed(s, 1006, "", now)
		drain()
		r = 0.5
	}
	nextDial := func() client.SocketID {
		before := dialled
		for i := 0; dialled == before; i++ {
			if i > 100 || timer.IsZero() {
				t.Fatal("no dial")
			}
			until(timer)
		}
		return dialled
	}

	core.Start(now)
	drain()
	ready(1)
	core.Received(1, []byte(`{"type":"update","topic":"chat","seq":41,"data":{}}`), now)
	drain()
	alive(1, time.Second)
	lose(1, 0.2)
	lose(nextDial(), 0.3)
	s := nextDial()
	ready(s)
	alive(s, 6*time.Second)
	lose(s, 0.7) // the storm
	s = nextDial()
	until(now.Add(2500 * time.Millisecond))
	lose(s, 0.865)
	ready(nextDial())
	return recs
}

// The guide's example, read back from a storm's JSON lines: a record
// round-trips through JSON exactly, and the storm's records say, in the
// guide's words, "epoch 4, attempt 2, 1006, cap 4000 ms, delay 1730 ms,
// remaining 11800 ms". The lines are testdata/storm.jsonl, shown in
// docs/client.md.
func TestAStormsRecordsReadBackAsTheGuidesExample(t *testing.T) {
	recs := storm(t)
	var buf bytes.Buffer
	log := NewRecordLog(&buf)
	for _, r := range recs {
		log.Record(r)
	}
	if err := log.Err(); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecords(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(recs) {
		t.Fatalf("%d records read back, %d written", len(back), len(recs))
	}
	for i := range recs {
		if !back[i].At.Equal(recs[i].At) {
			t.Fatalf("record %d: at %v, read back %v", i, recs[i].At, back[i].At)
		}
		back[i].At = recs[i].At
		if !reflect.DeepEqual(back[i], recs[i]) {
			t.Fatalf("record %d:\nwrote %+v\nread  %+v", i, recs[i], back[i])
		}
	}
	guide := func(r Record) string {
		return fmt.Sprintf("epoch %d, attempt %d, %d, cap %d ms, delay %d ms, remaining %d ms",
			r.Epoch, r.Attempt, r.Code, r.Cap.Milliseconds(), r.Delay.Milliseconds(), r.WindowLeft.Milliseconds())
	}
	var found bool
	for _, r := range back {
		if r.Epoch == 4 && r.Outcome == client.OutcomeReconnect {
			found = true
			if got, want := guide(r), "epoch 4, attempt 2, 1006, cap 4000 ms, delay 1730 ms, remaining 11800 ms"; got != want {
				t.Fatalf("the storm's epoch 4 reads %q, want %q", got, want)
			}
			if r.Admission != client.Unreached || r.By != client.ByNetwork || len(r.Acked) != 1 || r.Acked[0] != (TopicSeq{Topic: "chat", Seq: 41}) {
				t.Fatalf("epoch 4: %+v", r)
			}
		}
	}
	if !found {
		t.Fatalf("no decision at epoch 4 in %d records", len(back))
	}
	last := back[len(back)-1]
	if last.Outcome != client.OutcomeReady || last.Recovered <= 0 {
		t.Fatalf("the storm's last record %+v: want its end, READY again", last)
	}

	golden := "testdata/storm.jsonl"
	if *updateStorm {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("the storm's lines changed (go test -run %s -update-storm rewrites %s; then update docs/client.md):\n%s", t.Name(), golden, buf.Bytes())
	}
	doc, err := os.ReadFile("../../docs/client.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		if !strings.Contains(string(doc), line) {
			t.Errorf("docs/client.md lacks the storm's line %s", line)
		}
	}
}

// A line it cannot read is an error naming it; so is an unknown enum or
// field, or a duration that is not milliseconds.
func TestReadRecordsRefusesWhatItCannotRead(t *testing.T) {
	good := `{"at":"2026-01-01T00:00:00Z","session":"s","epoch":1,"attempt":1,"class":"backoff","by":"network","code":1006,"capMs":4000,"delayMs":1.5,"retryAfterMs":0,"budgetLeft":-1,"windowLeftMs":-1,"outcome":"reconnect"}`
	recs, err := ReadRecords(strings.NewReader(good + "\n\n" + good + "\n"))
	if err != nil || len(recs) != 2 || recs[0].Delay != 1500*time.Microsecond || recs[0].WindowLeft != -1 {
		t.Fatalf("%+v, %v", recs, err)
	}
	for _, bad := range []string{
		`{"outcome":"reconnect","class":"nonsense"}`,
		`{"outcome":"reconnect","by":"nobody"}`,
		`{"outcome":"reconnect","admission":"maybe"}`,
		`{"outcome":"exploded"}`,
		`{"outcome":"reconnect","token":"secret"}`,
		`{"outcome":"reconnect","delayMs":1.0000001}`,
		`{"outcome":"reconnect","delayMs":"1"}`,
		`{"outcome":"reconnect","delayMs":9223372036854.9}`,
		`not json`,
	} {
		_, err := ReadRecords(strings.NewReader(good + "\n" + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := ReadRecords(strings.NewReader(strings.Repeat("x", maxRecordLine+1))); err == nil {
		t.Error("a line over 1 MiB was read")
	}
	// A failed write stops the log, and says so.
	log := NewRecordLog(failingWriter{})
	log.Record(recs[0])
	log.Record(recs[0])
	if err := log.Err(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Err %v", err)
	}
}

var errDiskFull = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }
