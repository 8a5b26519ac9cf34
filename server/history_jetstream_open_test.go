//go:build !js

package server

import (
	"context"
	"errors"
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
