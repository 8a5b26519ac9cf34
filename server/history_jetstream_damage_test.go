//go:build !js

package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/natsembed"
	"github.com/wsready/wsready/internal/poll"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

// A JetStream store that comes back with less than it had must
// not hand out seqs again under a stream id clients hold. These tests run
// the real embedded NATS server on a real store directory, stop it
// cleanly, damage its files as a disk or an operator would, and start
// again.

// dataStore is what wsready serve -data DIR runs: an embedded NATS server
// with no listener storing in DIR, its marks in DIR/wsready/marks.
type dataStore struct {
	t   *testing.T
	dir string
	ns  *server.Server
	h   History
	log *logBuf
}

func openDataStore(t *testing.T, dir string) *dataStore {
	t.Helper()
	ns, err := natsembed.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := natsembed.Connect(ns)
	if err != nil {
		ns.Shutdown()
		t.Fatal(err)
	}
	lb := &logBuf{}
	h, err := NewJetStreamHistory(context.Background(), nc, JetStreamOptions{
		Retention: Retention{MaxMsgs: 10000, MaxBytes: 1 << 20, MaxAge: time.Hour}, MaxTopics: 16,
		MarksDir: filepath.Join(dir, "wsready", "marks"), CloseConn: true, Logger: lb.logger(),
	})
	if err != nil {
		nc.Close()
		ns.Shutdown()
		t.Fatal(err)
	}
	s := &dataStore{t: t, dir: dir, ns: ns, h: h, log: lb}
	t.Cleanup(s.stop)
	return s
}

// stop closes the History and shuts the NATS server down cleanly; again
// is a no-op.
func (s *dataStore) stop() {
	if s.ns == nil {
		return
	}
	s.h.Close()
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.ns = nil
}

func (s *dataStore) publish(topic string, n int) int64 {
	s.t.Helper()
	var seq int64
	for i := range n {
		var err error
		if seq, err = s.h.Append(context.Background(), topic, []byte(fmt.Sprintf(`{"n":%d}`, i)), true); err != nil {
			s.t.Fatal(err)
		}
	}
	return seq
}

func (s *dataStore) info(topic string) TopicInfo {
	s.t.Helper()
	ti, err := s.h.Info(context.Background(), topic)
	if err != nil {
		s.t.Fatalf("info of %s: %v", topic, err)
	}
	return ti
}

// streamDir is where the embedded NATS server keeps topic's stream.
func streamDir(dir, topic string) string {
	return filepath.Join(dir, "jetstream", "$G", "streams", streamName(topic))
}

// truncateStream is the recipe: the stream's message block cut to half,
// its index deleted.
func truncateStream(t *testing.T, dir, topic string) {
	t.Helper()
	blks, err := filepath.Glob(filepath.Join(streamDir(dir, topic), "msgs", "*.blk"))
	if err != nil || len(blks) == 0 {
		t.Fatalf("no message block for %s: %v", topic, err)
	}
	for _, b := range blks {
		fi, err := os.Stat(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(b, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(streamDir(dir, topic), "msgs", "index.db")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

// resumeOnProtocol subscribes to topic on a server over h, with since and
// stream as a resuming client does, and returns the subscribed frame and
// the seqs of the first n updates.
func resumeOnProtocol(t *testing.T, h History, topic string, since int64, stream string, n int) (protocol.Message, []int64) {
	t.Helper()
	return resumeThen(t, h, topic, since, stream, n, nil)
}

// resumeThen is resumeOnProtocol running then (when not nil) once the
// subscription is live, before it waits for the n updates.
func resumeThen(t *testing.T, h History, topic string, since int64, stream string, n int, then func()) (protocol.Message, []int64) {
	t.Helper()
	f := newFixture(t, &Options{History: h, Publish: true, HistoryTimeout: 5 * time.Second}, DemoOptions{NoFeed: true})
	p := f.dial()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: topic, HasSince: true, Since: since, Stream: stream})
	sub := p.next(protocol.TypeSubscribed, 10*time.Second)
	if then != nil {
		then()
	}
	var seqs []int64
	if n > 0 {
		seqs = p.updatesOf(topic, n, 10*time.Second)
	}
	return sub, seqs
}

// The recipe a damage probe used: 1,243 updates, a clean stop, the block cut to
// half and its index deleted, a restart. The stream must come back under
// a new id, said by an ERROR line naming it, so a client resuming from
// 1243 under the old id is told continuity was lost (a reset) instead of
// waiting in silence; new seqs never share the old id. Before the fix the
// id was the same and the client got nothing.
func TestJetStreamTruncatedStoreGetsANewStreamID(t *testing.T) {
	dir := t.TempDir()
	const n = 1243
	s := openDataStore(t, dir)
	if last := s.publish("chat", n); last != n {
		t.Fatalf("last seq %d, want %d", last, n)
	}
	old := s.info("chat")
	s.stop()
	truncateStream(t, dir, "chat")

	s = openDataStore(t, dir)
	now := s.info("chat")
	if now.Last >= n {
		t.Fatalf("the recipe did not cut the stream: last %d", now.Last)
	}
	if now.Stream == old.Stream {
		t.Fatalf("stream id %q unchanged although the stream went from %d back to %d", now.Stream, n, now.Last)
	}
	ref := streamRef("chat")
	if l := s.log.lines("ERROR", "stream_ref="+ref, "stream_was="+old.Stream, "high_water=1243"); len(l) != 1 {
		t.Fatalf("want one ERROR line naming the stream (stream_ref=%s), got %d; log:\n%s", ref, len(l), s.log)
	}
	if strings.Contains(s.log.String(), "chat") {
		t.Fatalf("the log carries the topic name (peer text):\n%s", s.log)
	}

	// A resuming client on the protocol: the subscribed names the new
	// stream, and the replay starts at the first retained seq (a reset).
	sub, seqs := resumeOnProtocol(t, s.h, "chat", n, old.Stream, 1)
	if sub.Stream != now.Stream || sub.From != now.First || sub.Head != now.Last || seqs[0] != now.First {
		t.Fatalf("resume from %d of stream %s: subscribed %+v, first update %v; want stream %s from %d head %d",
			n, old.Stream, sub, seqs, now.Stream, now.First, now.Last)
	}
	// New seqs continue the stream under the new id only.
	seq := s.publish("chat", 1)
	if seq != now.Last+1 || s.info("chat").Stream != now.Stream {
		t.Fatalf("publish after the loss: seq %d under %s, want %d under %s", seq, s.info("chat").Stream, now.Last+1, now.Stream)
	}

	// A clean restart now keeps the new id and says nothing more.
	s.stop()
	s = openDataStore(t, dir)
	if again := s.info("chat"); again.Stream != now.Stream || again.Last != seq {
		t.Fatalf("after a clean restart: %+v, want stream %s last %d", again, now.Stream, seq)
	}
	if l := s.log.lines("ERROR"); len(l) != 0 {
		t.Fatalf("a clean restart logged errors: %v", l)
	}
}

// The same recipe with the real client library: a client holding a cursor
// of 1243 under the old stream id is told ContinuityLost with Reset, then
// receives the retained updates and the new ones.
func TestJetStreamTruncatedStoreTellsANativeClientContinuityLost(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	s := openDataStore(t, dir)
	s.publish("chat", n)
	old := s.info("chat")
	s.stop()
	truncateStream(t, dir, "chat")
	s = openDataStore(t, dir)
	now := s.info("chat")

	f := newFixture(t, &Options{History: s.h, Publish: true, HistoryTimeout: 5 * time.Second}, DemoOptions{NoFeed: true})
	lost := make(chan client.ContinuityLost, 4)
	got := make(chan int64, 2*n)
	cfg := stages.Must(7)
	cfg.Topic = "chat"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, f.url, &native.Options{Config: cfg,
		LoadCursors:      func() []client.Cursor { return []client.Cursor{{Topic: "chat", Stream: old.Stream, Seq: n}} },
		OnContinuityLost: func(l client.ContinuityLost) { lost <- l }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(ctx, "chat", nil, func(u client.Update) { got <- u.Seq }); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lost:
		if !l.Reset || l.Topic != "chat" || l.From != n+1 {
			t.Fatalf("continuity lost %+v, want a reset of chat from %d", l, n+1)
		}
	case <-ctx.Done():
		t.Fatal("the client was not told continuity was lost")
	}
	for want := now.First; want <= now.Last; want++ {
		select {
		case seq := <-got:
			if seq != want {
				t.Fatalf("update %d, want %d", seq, want)
			}
		case <-ctx.Done():
			t.Fatalf("update %d not delivered", want)
		}
	}
	if _, err := f.srv.Publish(ctx, "chat", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case seq := <-got:
		if seq != now.Last+1 {
			t.Fatalf("live update %d, want %d", seq, now.Last+1)
		}
	case <-ctx.Done():
		t.Fatal("live update not delivered")
	}
}

// A clean restart keeps the stream id, and a cursor resumes with no gap
// and no repeat: what held before the fix still holds.
func TestJetStreamCleanRestartKeepsTheStreamAndTheCursor(t *testing.T) {
	dir := t.TempDir()
	s := openDataStore(t, dir)
	last := s.publish("chat", 40)
	old := s.info("chat")
	s.stop()
	s = openDataStore(t, dir)
	if now := s.info("chat"); now.Stream != old.Stream || now.Last != last {
		t.Fatalf("after a clean restart: %+v, want %+v", now, old)
	}
	// The append comes once the subscription is live: while it waits on NATS.
	sub, seqs := resumeThen(t, s.h, "chat", last, old.Stream, 1, func() {
		if _, err := s.h.Append(context.Background(), "chat", []byte(`{}`), true); err != nil {
			t.Fatal(err)
		}
	})
	if sub.Stream != old.Stream || sub.From != last+1 || seqs[0] != last+1 {
		t.Fatalf("resume from %d: subscribed %+v, update %v", last, sub, seqs)
	}
	if l := s.log.lines("ERROR"); len(l) != 0 {
		t.Fatalf("errors logged: %v", l)
	}
	if l := s.log.lines("WARN"); len(l) != 0 {
		t.Fatalf("warnings logged: %v", l)
	}
}

// A damaged stream metadata file makes the NATS server drop the stream at
// recovery. The mark says the topic existed: an ERROR line names it, and
// the next history starts under a new stream id, so a resuming client gets
// a reset. Before the fix nothing was logged.
func TestJetStreamDamagedStreamMetadataIsSaid(t *testing.T) {
	for _, file := range []string{"meta.inf", "meta.sum"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			s := openDataStore(t, dir)
			const n = 50
			s.publish("chat", n)
			old := s.info("chat")
			s.stop()
			p := filepath.Join(streamDir(dir, "chat"), file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x55
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}

			s = openDataStore(t, dir)
			ref := streamRef("chat")
			if l := s.log.lines("ERROR", "stream_ref="+ref, "stream_was="+old.Stream, "high_water=50"); len(l) != 1 {
				t.Fatalf("want one ERROR line naming the lost stream, got %d; log:\n%s", len(l), s.log)
			}
			if _, err := s.h.Info(context.Background(), "chat"); !errors.Is(err, ErrNoTopic) {
				t.Fatalf("info of the lost topic: %v, want ErrNoTopic", err)
			}
			// Said once, not at every look.
			s.h.Info(context.Background(), "chat")
			if l := s.log.lines("ERROR"); len(l) != 1 {
				t.Fatalf("the loss was said %d times:\n%s", len(l), s.log)
			}
			// The next publish starts a new history, under a new id.
			s.publish("chat", 1)
			now := s.info("chat")
			if now.Stream == old.Stream {
				t.Fatalf("the history after the loss kept stream id %s", old.Stream)
			}
			sub, _ := resumeOnProtocol(t, s.h, "chat", n, old.Stream, 0)
			if sub.Stream != now.Stream {
				t.Fatalf("resume under the lost stream: subscribed %+v, want stream %s", sub, now.Stream)
			}
			// A later restart says nothing more.
			s.stop()
			s = openDataStore(t, dir)
			if again := s.info("chat"); again.Stream != now.Stream {
				t.Fatalf("after a restart: stream %s, want %s", again.Stream, now.Stream)
			}
			if l := s.log.lines("ERROR"); len(l) != 0 {
				t.Fatalf("errors after a clean restart: %v", l)
			}
		})
	}
}

// The mark's own damage: a flipped byte, a cut file, zeros, a mark moved
// to another topic's name. Each is said at ERROR and, since a loss cannot
// be ruled out, the stream gets a new id; never read as a valid mark.
func TestJetStreamDamagedMarkIsSaidAndNotReused(t *testing.T) {
	damage := map[string]func(b []byte) []byte{
		"flipped byte": func(b []byte) []byte { b[10] ^= 1; return b },
		"cut":          func(b []byte) []byte { return b[:40] },
		"zeros":        func(b []byte) []byte { return make([]byte, len(b)) },
		"empty":        func([]byte) []byte { return nil },
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDataStore(t, dir)
			s.publish("chat", 20)
			old := s.info("chat")
			s.stop()
			p := filepath.Join(dir, "wsready", "marks", streamRef("chat")+".mark")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, fn(b), 0o600); err != nil {
				t.Fatal(err)
			}
			s = openDataStore(t, dir)
			now := s.info("chat")
			if now.Stream == old.Stream {
				t.Fatalf("a damaged mark was trusted: stream id %s kept", old.Stream)
			}
			if l := s.log.lines("ERROR", "stream_ref="+streamRef("chat"), "mark="+p, "damaged"); len(l) != 1 {
				t.Fatalf("want one ERROR line naming the damaged mark, got:\n%s", s.log)
			}
			if now.Last != 20 {
				t.Fatalf("the stream itself was intact: last %d, want 20", now.Last)
			}
			s.stop()
			s = openDataStore(t, dir)
			if again := s.info("chat"); again.Stream != now.Stream || len(s.log.lines("ERROR")) != 0 {
				t.Fatalf("after the mark was rewritten and a clean restart: %+v, log:\n%s", again, s.log)
			}
		})
	}
	t.Run("another topic's mark", func(t *testing.T) {
		dir := t.TempDir()
		s := openDataStore(t, dir)
		s.publish("chat", 5)
		s.publish("news", 9)
		old := s.info("chat")
		s.stop()
		marks := filepath.Join(dir, "wsready", "marks")
		b, err := os.ReadFile(filepath.Join(marks, streamRef("news")+".mark"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(marks, streamRef("chat")+".mark"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		s = openDataStore(t, dir)
		if now := s.info("chat"); now.Stream == old.Stream {
			t.Fatal("a mark naming another topic was trusted")
		}
		if l := s.log.lines("ERROR", "stream_ref="+streamRef("chat"), "damaged"); len(l) != 1 {
			t.Fatalf("want one ERROR line, log:\n%s", s.log)
		}
	})
}

func TestMarkEncodingRejectsEveryDamage(t *testing.T) {
	r := markRecord{V: markVersion, Topic: "chat", Stream: "abc", High: 1243}
	b := encodeMark(r)
	if got, err := decodeMark(append(b, make([]byte, 100)...)); err != nil || got != r {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x20
		if got, err := decodeMark(c); !errors.Is(err, errMarkDamaged) {
			t.Fatalf("byte %d flipped: %+v, %v", i, got, err)
		}
	}
	for i := range len(b) - 1 {
		if _, err := decodeMark(b[:i]); !errors.Is(err, errMarkDamaged) {
			t.Fatalf("cut at %d: %v", i, err)
		}
	}
	for _, bad := range []markRecord{
		{V: 2, Topic: "chat", Stream: "a", High: 1},
		{V: markVersion, Topic: "", Stream: "a", High: 1},
		{V: markVersion, Topic: "a b", Stream: "a", High: 1},
		{V: markVersion, Topic: "chat", Stream: "", High: 1},
		{V: markVersion, Topic: "chat", Stream: "a", High: -1},
	} {
		if _, err := decodeMark(encodeMark(bad)); !errors.Is(err, errMarkDamaged) {
			t.Fatalf("%+v accepted", bad)
		}
	}
}

// A mark that cannot be written refuses the publish: a seq is never
// acknowledged without its mark. Said once at ERROR, and once at INFO when
// marks are written again.
func TestJetStreamUnwritableMarkRefusesThePublish(t *testing.T) {
	dir := t.TempDir()
	s := openDataStore(t, dir)
	s.publish("chat", 1)
	// A directory where the mark should be: no write can replace it, root
	// or not.
	p := filepath.Join(dir, "wsready", "marks", streamRef("chat")+".mark")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if seq, err := s.h.Append(context.Background(), "chat", []byte(`{}`), true); err == nil {
			t.Fatalf("a publish whose mark cannot be written was acknowledged: seq %d", seq)
		}
	}
	if l := s.log.lines("ERROR", "failed to record"); len(l) != 1 {
		t.Fatalf("want one ERROR line, log:\n%s", s.log)
	}
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if seq := s.publish("chat", 1); seq != 5 {
		t.Fatalf("seq %d once the mark could be written, want 5 (the 3 refused ones were stored)", seq)
	}
	if l := s.log.lines("INFO", "again"); len(l) != 1 {
		t.Fatalf("want one INFO line on recovery, log:\n%s", s.log)
	}
}

// natsStore is what wsready serve -nats URL runs against: a NATS server
// with a listener, the marks in its key-value bucket.
type natsStore struct {
	t   *testing.T
	dir string
	ns  *server.Server
	url string
}

func startNATS(t *testing.T, dir, listen string) *natsStore {
	t.Helper()
	ns, err := natsembed.Start(dir, listen)
	if err != nil {
		t.Fatal(err)
	}
	n := &natsStore{t: t, dir: dir, ns: ns, url: ns.ClientURL()}
	t.Cleanup(n.stop)
	return n
}

func (n *natsStore) stop() {
	if n.ns != nil {
		n.ns.Shutdown()
		n.ns.WaitForShutdown()
		n.ns = nil
	}
}

// restart stops the NATS server, runs damage on its store, and starts it
// again on the same address.
func (n *natsStore) restart(damage func()) {
	n.stop()
	damage()
	ns, err := natsembed.Start(n.dir, strings.TrimPrefix(n.url, "nats://"))
	if err != nil {
		n.t.Fatal(err)
	}
	n.ns = ns
}

func (n *natsStore) history(lb *logBuf) History {
	n.t.Helper()
	h, err := ConnectJetStream(context.Background(), n.url, JetStreamOptions{
		Retention: Retention{MaxMsgs: 10000, MaxBytes: 1 << 20, MaxAge: time.Hour}, MaxTopics: 16, Logger: lb.logger()})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { h.Close() })
	return h
}

// appendN appends n updates to topic, each retried while NATS comes back,
// and returns the last seq.
func appendN(t *testing.T, h History, topic string, n int) int64 {
	t.Helper()
	var seq int64
	for range n {
		seq = untilStored(t, func() (int64, error) { return h.Append(context.Background(), topic, []byte(`{}`), true) })
	}
	return seq
}

// untilStored calls publish until it succeeds or 10 s pass (NATS coming
// back) and returns its seq; the last error fails t.
func untilStored(t *testing.T, publish func() (int64, error)) int64 {
	t.Helper()
	var seq int64
	var err error
	if !poll.UntilEvery(10*time.Second, 50*time.Millisecond, func() bool { // retries until the restarted NATS takes it
		seq, err = publish()
		return err == nil
	}) {
		t.Fatal(err)
	}
	return seq
}

// With -nats the marks live in the NATS server's key-value bucket: the
// recipe on the NATS server's store is caught at the next start of a node.
func TestJetStreamKVMarksCatchATruncatedStreamAtStart(t *testing.T) {
	n := startNATS(t, t.TempDir(), "127.0.0.1:0")
	lb := &logBuf{}
	h := n.history(lb)
	appendN(t, h, "chat", 500)
	old, err := h.Info(context.Background(), "chat")
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	n.restart(func() { truncateStream(t, n.dir, "chat") })

	lb = &logBuf{}
	h = n.history(lb)
	now, err := h.Info(context.Background(), "chat")
	if err != nil {
		t.Fatal(err)
	}
	if now.Stream == old.Stream || now.Last >= 500 {
		t.Fatalf("after the truncation: %+v, before %+v", now, old)
	}
	if l := lb.lines("ERROR", "stream_ref="+streamRef("chat"), "mark="+marksBucket+"/"+streamRef("chat"), "high_water=500"); len(l) != 1 {
		t.Fatalf("want one ERROR line, log:\n%s", lb)
	}
	if seq := appendN(t, h, "chat", 1); seq != now.Last+1 {
		t.Fatalf("next seq %d, want %d", seq, now.Last+1)
	}
}

// A node that keeps running while its NATS server comes back from a
// truncated store: the next publish gets a seq the stream had already
// handed out, which is said at ERROR and gives the stream a new id.
func TestJetStreamKVMarksCatchAStoreRewoundUnderARunningNode(t *testing.T) {
	n := startNATS(t, t.TempDir(), "127.0.0.1:0")
	lb := &logBuf{}
	h := n.history(lb)
	appendN(t, h, "chat", 400)
	old, _ := h.Info(context.Background(), "chat")
	n.restart(func() { truncateStream(t, n.dir, "chat") })
	seq := appendN(t, h, "chat", 1)
	if seq > 400 {
		t.Fatalf("the truncation did not rewind the stream: seq %d", seq)
	}
	if l := lb.lines("ERROR", "stream_ref="+streamRef("chat"), "stream_was="+old.Stream); len(l) != 1 {
		t.Fatalf("want one ERROR line, log:\n%s", lb)
	}
	now, err := h.Info(context.Background(), "chat")
	if err != nil || now.Stream == old.Stream {
		t.Fatalf("after the rewind: %+v, %v; the old stream was %s", now, err, old.Stream)
	}
	// Later publishes go on under the new id: the mark under it is the
	// stream's, not the seqs asked for before the loss.
	if next := appendN(t, h, "chat", 5); next != seq+5 {
		t.Fatalf("next seq %d, want %d", next, seq+5)
	}
	if again, err := h.Info(context.Background(), "chat"); err != nil || again.Stream != now.Stream || len(lb.lines("ERROR")) != 1 {
		t.Fatalf("after 5 more publishes: %+v, %v; want stream %s and no other ERROR; log:\n%s", again, err, now.Stream, lb)
	}
	// Another node starting now agrees.
	other, err := n.history(&logBuf{}).Info(context.Background(), "chat")
	if err != nil || other.Stream != now.Stream {
		t.Fatalf("a second node sees %+v, %v; want stream %s", other, err, now.Stream)
	}
}

// A damaged mark in the bucket is said and not trusted, as in a file.
func TestJetStreamKVDamagedMarkIsSaid(t *testing.T) {
	n := startNATS(t, t.TempDir(), "127.0.0.1:0")
	h := n.history(&logBuf{})
	appendN(t, h, "chat", 10)
	old, _ := h.Info(context.Background(), "chat")
	h.Close()

	nc, err := nats.Connect(n.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), marksBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), streamRef("chat"))
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.Replace(e.Value(), []byte(`"high":10`), []byte(`"high":90`), 1) // a changed value, old checksum
	if _, err := kv.Put(context.Background(), streamRef("chat"), b); err != nil {
		t.Fatal(err)
	}
	lb := &logBuf{}
	now, err := n.history(lb).Info(context.Background(), "chat")
	if err != nil || now.Stream == old.Stream {
		t.Fatalf("after the mark's damage: %+v, %v; the old stream was %s", now, err, old.Stream)
	}
	if l := lb.lines("ERROR", "stream_ref="+streamRef("chat"), "checksum mismatch"); len(l) != 1 {
		t.Fatalf("want one ERROR line, log:\n%s", lb)
	}
}

// A node already serving a topic when its NATS server comes back from a
// truncated store: the stream gets a new id (the publish that finds the
// seqs rewound says so), and the node's own subscribers are told at once
// (unsubscribed, stream_reset), so they subscribe again and see the new
// stream: a reset, the retained updates, then the new ones. Before, the
// node's hub kept the stream id it had cached at attach until it
// restarted: its subscribers heard nothing, and a subscribe again got the
// old id.
func TestJetStreamResetReachesTheSubscribersOfARunningNode(t *testing.T) {
	n := startNATS(t, t.TempDir(), "127.0.0.1:0")
	lb := &logBuf{}
	h := n.history(lb)
	appendN(t, h, "chat", 400)
	old, err := h.Info(context.Background(), "chat")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &Options{History: h, Publish: true, HistoryTimeout: 5 * time.Second}, DemoOptions{NoFeed: true})
	resuming, live := f.dial(), f.dial()
	resuming.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat", HasSince: true, Since: 400, Stream: old.Stream})
	if sub := resuming.next(protocol.TypeSubscribed, 10*time.Second); sub.Stream != old.Stream || sub.From != 401 {
		t.Fatalf("subscribed %+v, want stream %s from 401", sub, old.Stream)
	}
	live.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat"})
	live.next(protocol.TypeSubscribed, 10*time.Second)
	// And the real client library, holding a cursor of 400.
	lost := make(chan client.ContinuityLost, 4)
	cfg := stages.Must(7)
	cfg.Topic = "chat"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, f.url, &native.Options{Config: cfg,
		LoadCursors:      func() []client.Cursor { return []client.Cursor{{Topic: "chat", Stream: old.Stream, Seq: 400}} },
		OnContinuityLost: func(l client.ContinuityLost) { lost <- l }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	n.restart(func() { truncateStream(t, n.dir, "chat") })
	seq := untilStored(t, func() (int64, error) {
		return f.srv.Publish(context.Background(), "chat", []byte(`{"after":"the loss"}`))
	})
	if seq > 400 {
		t.Fatalf("publish after the truncation: seq %d; want a rewound seq", seq)
	}
	now, err := h.Info(context.Background(), "chat")
	if err != nil || now.Stream == old.Stream {
		t.Fatalf("after the rewind: %+v, %v", now, err)
	}
	for name, p := range map[string]*peer{"resuming": resuming, "live": live} {
		if m := p.next(protocol.TypeUnsubscribed, 10*time.Second); m.Topic != "chat" || m.Reason != "stream_reset" {
			t.Fatalf("%s subscriber: %+v, want unsubscribed from chat, stream_reset", name, m)
		}
	}
	select {
	case l := <-lost:
		if !l.Reset || l.Topic != "chat" || l.From != 401 {
			t.Fatalf("the native client was told %+v, want a reset of chat from 401", l)
		}
	case <-ctx.Done():
		t.Fatal("the native client was not told continuity was lost")
	}
	// Subscribing again, as a client does on unsubscribed, with its old
	// cursor: the new stream, from its first retained seq (a reset).
	resuming.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat", HasSince: true, Since: 400, Stream: old.Stream})
	sub := resuming.next(protocol.TypeSubscribed, 10*time.Second)
	if sub.Stream != now.Stream || sub.From != now.First || sub.Head != now.Last {
		t.Fatalf("subscribed again: %+v, want stream %s from %d head %d", sub, now.Stream, now.First, now.Last)
	}
	if got := resuming.updatesOf("chat", 1, 10*time.Second); got[0] != now.First {
		t.Fatalf("first update after the reset: %v, want %d", got, now.First)
	}
	live.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat"})
	if sub := live.next(protocol.TypeSubscribed, 10*time.Second); sub.Stream != now.Stream {
		t.Fatalf("live subscriber subscribed again: %+v, want stream %s", sub, now.Stream)
	}
	if _, err := f.srv.Publish(context.Background(), "chat", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := live.updatesOf("chat", 1, 10*time.Second); got[0] != now.Last+1 {
		t.Fatalf("live update under the new stream: %v, want %d", got, now.Last+1)
	}
}
