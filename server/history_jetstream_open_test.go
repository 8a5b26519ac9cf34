//go:build !js

package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// lateJS answers the marks bucket's creation late: the bucket is made, the
// answer times out (a cluster just formed, or busy). Only the two methods
// openKVMarks calls are implemented; the embedded interface is nil.
type lateJS struct {
	jetstream.JetStream
	made             bool
	always           bool // every request times out
	creates, lookups int
}

func (f *lateJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	f.lookups++
	if f.always {
		return nil, context.DeadlineExceeded
	}
	if !f.made {
		return nil, jetstream.ErrBucketNotFound
	}
	return nil, nil
}

func (f *lateJS) CreateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	f.creates++
	f.made = true
	return nil, context.DeadlineExceeded
}

// A creation of the marks bucket whose answer timed out is asked again,
// finds the bucket it made, and takes it as new. (A 3-node process cluster
// under load failed to start a node on the API's 5 s timeout.)
func TestTheMarksBucketIsOpenedAfterALateCreation(t *testing.T) {
	f := &lateJS{}
	m, err := openKVMarks(context.Background(), f, 3)
	if err != nil || !m.fresh() || f.creates != 1 || f.lookups != 2 {
		t.Fatalf("err %v, creates %d, lookups %d, fresh %v: want the bucket found on the second attempt, new", err, f.creates, f.lookups, m != nil && m.fresh())
	}
}

// lagJS: the bucket's creation is made but its answer times out, the next
// lookup still misses it (an answer that lags), and the next creation says
// it exists.
type lagJS struct {
	jetstream.JetStream
	creates, lookups int
}

func (f *lagJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	f.lookups++
	if f.lookups <= 2 {
		return nil, jetstream.ErrBucketNotFound
	}
	return nil, nil
}

func (f *lagJS) CreateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	f.creates++
	if f.creates == 1 {
		return nil, context.DeadlineExceeded
	}
	return nil, jetstream.ErrBucketExists
}

// A bucket that "already exists" after our own creation timed out is the
// one we made: new, as when the retry's lookup finds it.
func TestTheMarksBucketMadeByATimedOutAttemptIsNew(t *testing.T) {
	f := &lagJS{}
	m, err := openKVMarks(context.Background(), f, 3)
	if err != nil || !m.fresh() || f.creates != 2 || f.lookups != 3 {
		t.Fatalf("err %v, creates %d, lookups %d, fresh %v: want it found after the second creation, new", err, f.creates, f.lookups, m != nil && m.fresh())
	}
}

// Timeouts that go on are given up within the caller's context, with the
// cause.
func TestTheMarksBucketGivesUpWithItsContext(t *testing.T) {
	f := &lateJS{always: true}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := openKVMarks(ctx, f, 3)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second || f.lookups < 2 || f.lookups > 10 {
		t.Fatalf("err %v after %v and %d lookups: want the timeout, asked again a few times, within the context", err, time.Since(start), f.lookups)
	}
}

// lateStreamsJS does not answer the first listing of the streams nor the
// first lookup of each (they wait for their context: an answer after the
// timeout); after that the stream has one replica, and its change to more
// is answered. Only the three methods scaleAll calls are implemented.
type lateStreamsJS struct {
	jetstream.JetStream
	listings int
	lookups  map[string]int
	updated  []int // the replicas each UpdateStream asked for
}

type nameList struct {
	ch  chan string
	err error
}

func (l *nameList) Name() <-chan string { return l.ch }
func (l *nameList) Err() error          { return l.err }

func (f *lateStreamsJS) StreamNames(ctx context.Context, opts ...jetstream.StreamListOpt) jetstream.StreamNameLister {
	f.listings++
	ch := make(chan string, 2)
	if f.listings == 1 {
		<-ctx.Done()
		close(ch)
		return &nameList{ch, ctx.Err()}
	}
	ch <- "wsready_a"
	ch <- "wsready_b"
	close(ch)
	return &nameList{ch, nil}
}

// oneReplica is a stream of one replica (only CachedInfo is implemented).
type oneReplica struct {
	jetstream.Stream
	name string
}

func (s oneReplica) CachedInfo() *jetstream.StreamInfo {
	return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: s.name, Replicas: 1}}
}

func (f *lateStreamsJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	f.lookups[name]++
	if f.lookups[name] == 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return oneReplica{name: name}, nil
}

func (f *lateStreamsJS) UpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	f.updated = append(f.updated, cfg.Replicas)
	return nil, nil
}

// Scaling the streams as a History starts asks again after a request
// timed out: the listing, and each stream's lookup. It runs under the
// start's own deadline, as NewJetStreamHistory runs it: the JetStream API
// adds no timeout of its own to a context that has one, so each attempt
// must (jsAttemptTimeout, shortened here).
func TestScalingTheStreamsAsksAgainAfterATimeout(t *testing.T) {
	defer func(d time.Duration) { jsAttemptTimeout = d }(jsAttemptTimeout)
	jsAttemptTimeout = 100 * time.Millisecond
	f := &lateStreamsJS{lookups: map[string]int{}}
	h := &jsHistory{js: f, o: JetStreamOptions{Replicas: 3}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), jsCheckTimeout)
	defer cancel()
	if err := h.scaleAll(ctx); err != nil {
		t.Fatalf("scaleAll: %v; want the timeouts asked again", err)
	}
	if f.listings != 2 || f.lookups["wsready_a"] != 2 || f.lookups["wsready_b"] != 2 || len(f.updated) != 2 || f.updated[0] != 3 || f.updated[1] != 3 {
		t.Fatalf("listings %d, lookups %v, updates %v: want each asked twice and both streams given 3 replicas", f.listings, f.lookups, f.updated)
	}
}
