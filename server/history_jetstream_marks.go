//go:build !js

package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/protocol"
)

// The JetStream History's high-water marks (see history_jetstream.go): the
// record, its two stores (files, or a JetStream key-value bucket) and a
// topic's mark as this process holds it.

// markRecord is what the server knows of a topic's stream apart from the
// stream's own store.
type markRecord struct {
	V      int    `json:"v"`      // markVersion
	Topic  string `json:"topic"`  // the topic (the mark's ref is a hash of its stream name)
	Stream string `json:"stream"` // the stream id clients were given; "" when none is known
	High   int64  `json:"high"`   // the highest seq a client may hold under Stream
	Lost   bool   `json:"lost,omitempty"`
}

const (
	markVersion = 1
	// markSize is the fixed size of a mark file: a record is at most about
	// 270 bytes (a topic is at most 128, none of its bytes escaped in
	// JSON), padded with NULs, so an update overwrites the whole file in
	// place.
	markSize = 512
)

var (
	errNoMark = errors.New("no high-water mark")
	// errMarkDamaged is a mark that fails its checksum or does not parse.
	errMarkDamaged = errors.New("high-water mark damaged")
	// errMarkConflict is a write that lost a race with another node's
	// (key-value marks only).
	errMarkConflict = errors.New("high-water mark changed by another node")
)

// encodeMark is the record's bytes: its JSON, then its SHA-256.
func encodeMark(r markRecord) []byte {
	body, _ := json.Marshal(r) // plain fields: cannot fail
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(body)+80)
	out = append(out, body...)
	out = append(out, "\nsha256:"...)
	out = hex.AppendEncode(out, sum[:])
	return append(out, '\n')
}

// decodeMark parses a mark; anything but an intact record (trailing NUL
// padding aside) is errMarkDamaged.
func decodeMark(b []byte) (markRecord, error) {
	b = bytes.TrimRight(b, "\x00")
	body, tail, ok := bytes.Cut(b, []byte("\nsha256:"))
	if !ok || len(tail) != 2*sha256.Size+1 || tail[len(tail)-1] != '\n' {
		return markRecord{}, fmt.Errorf("%w: no checksum", errMarkDamaged)
	}
	sum := sha256.Sum256(body)
	if string(tail[:len(tail)-1]) != hex.EncodeToString(sum[:]) { // exactly as written: lowercase
		return markRecord{}, fmt.Errorf("%w: checksum mismatch", errMarkDamaged)
	}
	var r markRecord
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return markRecord{}, fmt.Errorf("%w: %w", errMarkDamaged, err)
	}
	if r.V != markVersion || !protocol.ValidTopic(r.Topic) || r.High < 0 || (r.Stream == "" && !r.Lost) {
		return markRecord{}, fmt.Errorf("%w: invalid record", errMarkDamaged)
	}
	return r, nil
}

// markStore keeps the marks, by ref.
type markStore interface {
	// get returns the mark and its revision; errNoMark, or errMarkDamaged
	// (with the revision, so it can be replaced).
	get(ctx context.Context, ref string) (markRecord, uint64, error)
	// put stores r if the stored revision is still rev (0: none) and
	// returns the new one; errMarkConflict if not. It returns once r is
	// durable.
	put(ctx context.Context, ref string, r markRecord, rev uint64) (uint64, error)
	// refs lists the stored marks.
	refs(ctx context.Context) ([]string, error)
	// where names a mark for logs.
	where(ref string) string
	// fresh reports that the store was made by this process: streams
	// without a mark are then not a surprise.
	fresh() bool
}

// fileMarks keeps each mark in a file of its own, <dir>/<ref>.mark, fixed
// size. A new file is written aside, synced and renamed into place (then
// the directory is synced); an update overwrites the file in place and
// syncs it: one sync per write instead of two and a rename (measured on
// the VM this was written on: 0.6-0.8 ms against 4-6 ms), and the checksum
// turns a write torn by a power cut into a damaged mark, which ends in a new
// stream id rather than a silent one. One process owns the directory (the
// embedded NATS server owns the store next to it), so there is no race
// between writers to settle.
type fileMarks struct {
	dir   string
	isNew bool
}

func openFileMarks(dir string) (*fileMarks, error) {
	_, err := os.Stat(dir)
	isNew := errors.Is(err, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to make the high-water mark directory: %w", err)
	}
	return &fileMarks{dir: dir, isNew: isNew}, nil
}

func (f *fileMarks) path(ref string) string  { return filepath.Join(f.dir, ref+".mark") }
func (f *fileMarks) where(ref string) string { return f.path(ref) }
func (f *fileMarks) fresh() bool             { return f.isNew }

func (f *fileMarks) get(_ context.Context, ref string) (markRecord, uint64, error) {
	b, err := os.ReadFile(f.path(ref))
	if errors.Is(err, os.ErrNotExist) {
		return markRecord{}, 0, errNoMark
	}
	if err != nil {
		return markRecord{}, 0, fmt.Errorf("failed to read a high-water mark: %w", err)
	}
	if len(b) != markSize {
		return markRecord{}, 0, fmt.Errorf("%w: %d bytes, not %d", errMarkDamaged, len(b), markSize)
	}
	r, err := decodeMark(b)
	return r, 0, err
}

func (f *fileMarks) put(_ context.Context, ref string, r markRecord, _ uint64) (uint64, error) {
	buf := make([]byte, markSize)
	copy(buf, encodeMark(r))
	p := f.path(ref)
	if fd, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
		if fi, err := fd.Stat(); err == nil && fi.Size() == markSize {
			_, werr := fd.WriteAt(buf, 0)
			if werr == nil {
				werr = fd.Sync()
			}
			if cerr := fd.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return 0, fmt.Errorf("failed to write a high-water mark: %w", werr)
			}
			return 0, nil
		}
		fd.Close() // not a mark's size: replaced whole below
	}
	tmp, err := os.CreateTemp(f.dir, ref+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("failed to write a high-water mark: %w", err)
	}
	_, err = tmp.Write(buf)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, fmt.Errorf("failed to write a high-water mark: %w", err)
	}
	if d, err := os.Open(f.dir); err == nil {
		err = d.Sync() // the rename itself
		d.Close()
		if err != nil {
			return 0, fmt.Errorf("failed to sync the high-water mark directory: %w", err)
		}
	}
	return 0, nil
}

func (f *fileMarks) refs(context.Context) ([]string, error) {
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("failed to list the high-water marks: %w", err)
	}
	var refs []string
	for _, e := range ents {
		if ref, ok := strings.CutSuffix(e.Name(), ".mark"); ok && !e.IsDir() {
			refs = append(refs, ref)
		}
	}
	return refs, nil
}

// kvMarks keeps the marks in the JetStream key-value bucket marksBucket,
// key = ref, written with compare-and-set so nodes sharing it never move
// a mark down.
type kvMarks struct {
	kv    jetstream.KeyValue
	isNew bool
}

// kvStreamPrefix names the stream behind a key-value bucket (JetStream's
// convention): the marks bucket's replicas are changed on it.
const kvStreamPrefix = "KV_"

// openKVMarks opens the marks bucket, making it with replicas copies if it
// does not exist (an existing one is given them by the caller), asking
// again after a timeout (retryTimeouts): the creation may have been done
// meanwhile, and then the bucket is found, as new.
func openKVMarks(ctx context.Context, js jetstream.JetStream, replicas int) (*kvMarks, error) {
	created := false // an attempt asked to make the bucket
	var m *kvMarks
	err := retryTimeouts(ctx, func(ctx context.Context) (err error) {
		m, err = openKVMarksOnce(ctx, js, replicas, &created)
		return err
	})
	return m, err
}

// jsAttemptTimeout bounds each attempt retryTimeouts makes: the JetStream
// API's own default, which it applies only to a context without a
// deadline (a History's start runs under one).
var jsAttemptTimeout = 5 * time.Second

// retryTimeouts runs op, each time with a context of its own that ends
// after jsAttemptTimeout, and again while op fails on that timeout (ctx
// still live), 250 ms apart, within ctx and jsReadyTimeout. A cluster that
// has just formed, or is busy, can answer a request that places replicas
// or elects a leader (a bucket's or a stream's creation, a change of its
// replicas) late. op must be safe to ask again: it looks before it
// changes.
func retryTimeouts(ctx context.Context, op func(context.Context) error) error {
	until := time.Now().Add(jsReadyTimeout)
	for {
		actx, cancel := context.WithTimeout(ctx, jsAttemptTimeout)
		err := op(actx)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || time.Now().After(until) {
			return err
		}
		t := time.NewTimer(250 * time.Millisecond) // between attempts: never a busy loop
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func openKVMarksOnce(ctx context.Context, js jetstream.JetStream, replicas int, created *bool) (*kvMarks, error) {
	kv, err := js.KeyValue(ctx, marksBucket)
	isNew := err == nil && *created // made by an attempt that timed out
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		asked := *created
		*created = true
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: marksBucket, History: 1, Storage: jetstream.FileStorage,
			Replicas: replicas, Description: "wsready: each topic's stream id and highest seq handed out"})
		isNew = err == nil
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another node made it first, or an earlier attempt of ours
			// whose answer timed out did (then it is new, as above).
			kv, err = js.KeyValue(ctx, marksBucket)
			isNew = err == nil && asked
		}
		err = replicasError(err, replicas)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open the high-water mark bucket: %w", err)
	}
	return &kvMarks{kv: kv, isNew: isNew}, nil
}

func (k *kvMarks) where(ref string) string { return marksBucket + "/" + ref }
func (k *kvMarks) fresh() bool             { return k.isNew }

func (k *kvMarks) get(ctx context.Context, ref string) (markRecord, uint64, error) {
	e, err := k.kv.Get(ctx, ref)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return markRecord{}, 0, errNoMark
	}
	if err != nil {
		return markRecord{}, 0, fmt.Errorf("failed to read a high-water mark: %w", err)
	}
	r, err := decodeMark(e.Value())
	return r, e.Revision(), err
}

func (k *kvMarks) put(ctx context.Context, ref string, r markRecord, rev uint64) (uint64, error) {
	var err error
	var n uint64
	if rev == 0 {
		n, err = k.kv.Create(ctx, ref, encodeMark(r))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, errMarkConflict
		}
	} else {
		n, err = k.kv.Update(ctx, ref, encodeMark(r), rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, errMarkConflict
		}
	}
	if err != nil {
		return 0, fmt.Errorf("failed to write a high-water mark: %w", err)
	}
	return n, nil
}

func (k *kvMarks) refs(ctx context.Context) ([]string, error) {
	l, err := k.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to list the high-water marks: %w", err)
	}
	defer l.Stop()
	var refs []string
	for ref := range l.Keys() {
		refs = append(refs, ref)
	}
	return refs, ctx.Err()
}

// mark is one topic's mark as this process knows it.
type mark struct {
	topic, ref string
	// sem is held (one slot) while the mark is written or checked, so
	// writes are one at a time and each writes the highest seq asked for
	// so far: concurrent raises share one write.
	sem chan struct{}

	mu      sync.Mutex
	loaded  bool       // rec and rev are what the store had, or what this process wrote since
	rec     markRecord // the durable mark
	rev     uint64
	want    int64 // the highest seq asked to be covered under rec.Stream
	checked bool  // the stream was squared with the mark by this process
}

func (m *mark) lock(ctx context.Context) error {
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *mark) unlock() { <-m.sem }

func (m *mark) isChecked() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checked
}

func (m *mark) setChecked(v bool) {
	m.mu.Lock()
	m.checked = v
	m.mu.Unlock()
}

func (m *mark) snapshot() (markRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec, m.loaded
}

// set records r, at revision rev, as m's mark. It reports whether r names
// another stream id than the mark held (the watchers are then told).
func (m *mark) set(r markRecord, rev uint64) (newStream bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.Stream != m.rec.Stream {
		// Seqs asked for under another id (before a loss: far past the
		// stream's new end) must not be written as this id's mark.
		m.want = r.High
		newStream = r.Stream != ""
	}
	m.rec, m.rev, m.loaded = r, rev, true
	return newStream
}

func (h *jsHistory) existing(topic string) *mark {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.marks[topic]
}

// markFor returns topic's mark, making it: only for a topic whose stream
// or mark exists, so the map is bounded by those.
func (h *jsHistory) markFor(topic string) *mark {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.marks[topic]
	if m == nil {
		m = &mark{topic: topic, ref: streamRef(topic), sem: make(chan struct{}, 1)}
		h.marks[topic] = m
	}
	return m
}
