//go:build !js

package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wsready/wsready/client"
	"github.com/wsready/wsready/client/native"
	"github.com/wsready/wsready/internal/stages"
	"github.com/wsready/wsready/protocol"
)

// truncateBlocks cuts the stream's message blocks to half, leaving its
// index (and the marks) as they were.
func truncateBlocks(t *testing.T, dir, topic string) {
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
}

// A message block truncated while its index survives: the stream still
// ends at 1328 under the same id, but only about its first half is
// stored. A client resuming from 1320 is answered at once (before, it
// waited until someone published, 75 s in the report), from 1329: its
// loss, with the range, as ContinuityLost; the missing seqs are said at
// ERROR with their range. New seqs go on after 1328 (no seq handed out
// twice), under the same id.
func TestJetStreamTruncatedBlockIsALossSaidAtOnce(t *testing.T) {
	dir := t.TempDir()
	const n = 1328
	s := openDataStore(t, dir)
	s.publish("chat", n)
	old := s.info("chat")
	s.stop()
	truncateBlocks(t, dir, "chat")

	s = openDataStore(t, dir)
	now := s.info("chat")
	if now.Stream != old.Stream || now.Last != n {
		t.Fatalf("after the truncation: %+v; want the same stream %s, last %d", now, old.Stream, n)
	}
	if l := s.log.lines("ERROR", "stream_ref="+streamRef("chat"), "stream="+old.Stream, "last=1328", "ranges="); len(l) != 1 {
		t.Fatalf("want one ERROR line saying the missing updates, got %d; log:\n%s", len(l), s.log)
	}

	f := newFixture(t, &Options{History: s.h, Publish: true, HistoryTimeout: 5 * time.Second}, DemoOptions{NoFeed: true})
	p := f.dial()
	start := time.Now()
	p.send(protocol.Message{Type: protocol.TypeSubscribe, Topic: "chat", HasSince: true, Since: 1320, Stream: old.Stream})
	sub, ok := p.maybe(protocol.TypeSubscribed, 5*time.Second)
	if !ok {
		t.Fatal("a resume from 1320 was not answered within 5 s (HistoryTimeout) with no publish")
	}
	if sub.Stream != old.Stream || sub.From != n+1 || sub.Head != n {
		t.Fatalf("resume from 1320 after %v: %+v; want stream %s from %d head %d (the loss of 1321-1328 said by from)",
			time.Since(start), sub, old.Stream, n+1, n)
	}
	if seq := s.publish("chat", 1); seq != n+1 {
		t.Fatalf("next seq %d, want %d", seq, n+1)
	}
	if got := p.updatesOf("chat", 1, 5*time.Second); got[0] != n+1 {
		t.Fatalf("live after the loss: %v", got)
	}

	// The client library turns it into ContinuityLost with the range.
	lost := make(chan client.ContinuityLost, 4)
	cfg := stages.Must(7)
	cfg.Topic = "chat"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := native.Dial(ctx, f.url, &native.Options{Config: cfg,
		LoadCursors:      func() []client.Cursor { return []client.Cursor{{Topic: "chat", Stream: old.Stream, Seq: 1320}} },
		OnContinuityLost: func(l client.ContinuityLost) { lost <- l }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Subscribe(ctx, "chat", nil, func(client.Update) {}); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lost:
		// The updates published since the hub loaded the topic are
		// replayed from its ring: the loss is 1321-1328.
		if l.Reset || l.From != 1321 || l.To != n {
			t.Fatalf("continuity lost %+v, want 1321-%d", l, n)
		}
	case <-ctx.Done():
		t.Fatal("the client was not told continuity was lost")
	}
}

// A truncated block with its index and the stream's mark deleted: the
// stream rewinds (1328 to about 664) under the same id. With no mark in
// a store that kept marks, no loss can be ruled out: an ERROR line and a
// new stream id, so a client resuming from 668 under the old id is reset
// instead of never getting the new 667 and 668.
func TestJetStreamRewoundStoreWithoutItsMarkGetsANewStreamID(t *testing.T) {
	dir := t.TempDir()
	const n = 1328
	s := openDataStore(t, dir)
	s.publish("chat", n)
	old := s.info("chat")
	s.stop()
	truncateStream(t, dir, "chat")
	marks, err := filepath.Glob(filepath.Join(dir, "wsready", "marks", "*.mark"))
	if err != nil || len(marks) != 1 {
		t.Fatalf("marks %v, %v", marks, err)
	}
	if err := os.Remove(marks[0]); err != nil {
		t.Fatal(err)
	}

	s = openDataStore(t, dir)
	now := s.info("chat")
	if now.Last >= 668 {
		t.Fatalf("the recipe did not rewind the stream: %+v", now)
	}
	if now.Stream == old.Stream {
		t.Fatalf("stream id %q kept although the stream went from %d back to %d with its mark gone", now.Stream, n, now.Last)
	}
	if l := s.log.lines("ERROR", "stream_ref="+streamRef("chat"), "stream_was="+old.Stream, "last="+strconv.FormatInt(now.Last, 10)); len(l) != 1 {
		t.Fatalf("want one ERROR line naming the stream, got %d; log:\n%s", len(l), s.log)
	}
	sub, seqs := resumeOnProtocol(t, s.h, "chat", 668, old.Stream, 1)
	if sub.Stream != now.Stream || sub.From != now.First || seqs[0] != now.First {
		t.Fatalf("resume from 668 of stream %s: %+v, first update %v; want a reset: stream %s from %d", old.Stream, sub, seqs, now.Stream, now.First)
	}
	// A clean restart keeps the new id, its mark written, and says nothing.
	s.stop()
	s = openDataStore(t, dir)
	if again := s.info("chat"); again.Stream != now.Stream {
		t.Fatalf("after a clean restart: %+v, want stream %s", again, now.Stream)
	}
	if l := s.log.lines("ERROR"); len(l) != 0 {
		t.Fatalf("a clean restart logged errors: %v", l)
	}
}
