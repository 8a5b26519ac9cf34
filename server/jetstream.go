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
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/protocol"
)

// The JetStream mapping. Each topic is a stream of its own, named
// StreamPrefix+topic, holding one subject, SubjectPrefix+topic, so a
// stream's sequence numbers are the topic's seqs: +1 per update, from 1, no
// gaps (JetStream assigns them atomically, whichever node publishes). The
// stream keeps the newest HistoryMsgs updates, none older than HistoryAge
// (limits retention, discard old), on file storage. Each node loads a topic
// when first used with an ordered consumer from the stream's first retained
// seq and keeps it running for live updates (topics.go). Topic names are
// already limited to characters valid in both a subject token and a stream
// name.
//
// The stream id (TopicInfo.Stream) names an incarnation of the topic's
// history: clients hold it with their cursor and are told continuity was
// lost when it changes. It is the id in the stream's metadata
// (StreamIDMetadataKey) when there is one, else the stream's creation time:
// a stream deleted and made again starts a new id by itself.
//
// A store can also come back with less than it had (a truncated message
// block, a store restored from an older copy, writes JetStream acknowledged
// but had not synced when the power went) while keeping its creation time.
// Its seqs would then be handed out again under an id clients already hold,
// and a client resuming past the new end would get nothing, silently. So the
// server keeps, outside the stream, each topic's high-water mark: the
// stream id it handed out and the highest seq a client may hold under it
// (a publish is acknowledged, and an update delivered, only after the mark
// covers it). When a topic is loaded, a stream that ends below its mark lost
// acknowledged updates: the server logs it at ERROR and gives the stream a
// new id (written into its metadata), so resuming clients get
// continuity_lost with a reset instead of silence, and later seqs never
// share an id with seqs clients may hold from before. A stream that
// vanished (a damaged metadata file makes JetStream drop it) is logged the
// same way, and its next history starts under a new id. A damaged mark
// (checksum) is logged and, since no loss can be ruled out, also ends in a
// new id. Where the marks live: see JetStreamOptions.MarksDir.
const (
	StreamPrefix  = "WSREADY_"
	SubjectPrefix = "wsready.topic."
	// StreamIDMetadataKey is the stream metadata key holding the stream id
	// given after a loss; a stream without it is named by its creation
	// time.
	StreamIDMetadataKey = "wsready_stream_id"
	// MarksBucket is the JetStream key-value bucket holding the marks when
	// JetStreamOptions.MarksDir is empty.
	MarksBucket = "WSREADY_MARKS"
)

// JetStreamOptions configure a History over JetStream.
type JetStreamOptions struct {
	// Retention bounds each topic's stream.
	Retention Retention
	// MaxTopics is the most topics (streams); 0 allows none.
	MaxTopics int
	// MarksDir is the directory for the high-water marks, one small file
	// per topic, each write synced to disk (wsready serve -data DIR uses
	// DIR/wsready/marks): kept apart from the JetStream store, they survive
	// its damage, a restore of it from an older copy and the writes
	// JetStream had not synced. Empty: the marks are kept in the JetStream
	// key-value bucket MarksBucket, shared by every node on that NATS
	// (wsready serve -nats): that catches a stream's own damage, not a
	// whole store restored from an older copy.
	MarksDir string
	// CloseConn makes Close close the NATS connection.
	CloseConn bool
	// Logger receives the damage reports; default slog.Default().
	Logger *slog.Logger
}

// jsCheckTimeout bounds the check of every stream when a History starts.
const jsCheckTimeout = 30 * time.Second

type jsHistory struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	o     JetStreamOptions
	log   *slog.Logger
	store markStore

	mu    sync.Mutex
	marks map[string]*mark // topics whose stream or mark exists

	failing atomic.Bool // writing marks fails (logged once, and once when it recovers)
}

// NewJetStreamHistory keeps topics in JetStream over nc. It opens the marks
// (MarksDir, or the key-value bucket) and checks every wsready stream
// against its mark before it returns, logging what was lost; within ctx.
func NewJetStreamHistory(ctx context.Context, nc *nats.Conn, o JetStreamOptions) (History, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("failed to open JetStream: %w", err)
	}
	h := &jsHistory{nc: nc, js: js, o: o, log: o.Logger, marks: map[string]*mark{}}
	if o.MarksDir != "" {
		h.store, err = openFileMarks(o.MarksDir)
	} else {
		h.store, err = openKVMarks(ctx, js)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, jsCheckTimeout)
	defer cancel()
	if err := h.checkAll(ctx); err != nil {
		// The topics are checked again when they are loaded.
		h.log.Warn("failed to check every JetStream stream against its high-water mark at start", "cause", errKind(err))
	}
	return h, nil
}

func streamName(topic string) string { return StreamPrefix + topic }

// streamRef names topic's stream in logs and in the marks: the topic is a
// name a peer may have chosen, which logs never carry (no peer text). The
// mark it names holds the topic, so an operator can look it up:
// printf WSREADY_<topic> | sha256sum | cut -c1-16 gives it too.
func streamRef(topic string) string {
	sum := sha256.Sum256([]byte(streamName(topic)))
	return hex.EncodeToString(sum[:8])
}

// streamID is the id clients are given for the stream described by info.
func streamID(info *jetstream.StreamInfo) string {
	if id := info.Config.Metadata[StreamIDMetadataKey]; id != "" {
		return id
	}
	return strconv.FormatInt(info.Created.UnixNano(), 36)
}

// stream fetches topic's stream info (jetstream.ErrStreamNotFound when
// there is none).
func (h *jsHistory) stream(ctx context.Context, topic string) (*jetstream.StreamInfo, error) {
	st, err := h.js.Stream(ctx, streamName(topic))
	if err != nil {
		return nil, err
	}
	return st.CachedInfo(), nil
}

// ensure makes topic's stream if it does not exist yet, and loads it.
func (h *jsHistory) ensure(ctx context.Context, topic string) error {
	if m := h.existing(topic); m != nil && m.isChecked() {
		return nil
	}
	_, _, err := h.load(ctx, topic)
	if !errors.Is(err, ErrNoTopic) {
		return err
	}
	if n, err := h.count(ctx); err != nil {
		return err
	} else if n >= h.o.MaxTopics {
		return ErrTooManyTopics
	}
	_, err = h.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       streamName(topic),
		Subjects:   []string{SubjectPrefix + topic},
		Retention:  jetstream.LimitsPolicy,
		Discard:    jetstream.DiscardOld,
		MaxMsgs:    int64(h.o.Retention.MaxMsgs),
		MaxAge:     h.o.Retention.MaxAge,
		MaxMsgSize: 64 << 10,
		Storage:    jetstream.FileStorage,
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // in use: another node made it first
		return err
	}
	_, _, err = h.load(ctx, topic)
	return err
}

// count is the number of wsready streams.
func (h *jsHistory) count(ctx context.Context) (int, error) {
	l := h.js.StreamNames(ctx, jetstream.WithStreamListSubject(SubjectPrefix+">"))
	n := 0
	for range l.Name() {
		n++
	}
	return n, l.Err()
}

func (h *jsHistory) Create(ctx context.Context, topic string) error { return h.ensure(ctx, topic) }

func (h *jsHistory) Append(ctx context.Context, topic string, data []byte, create bool) (int64, error) {
	if create {
		if err := h.ensure(ctx, topic); err != nil {
			return 0, err
		}
	} else if _, _, err := h.load(ctx, topic); err != nil {
		return 0, err
	}
	m := h.markFor(topic)
	before, _ := m.snapshot() // durable before the publish: the stream had reached it
	ack, err := h.js.Publish(ctx, SubjectPrefix+topic, data, jetstream.WithExpectStream(streamName(topic)))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			m.setChecked(false) // deleted behind our back: looked at again next time
		}
		return 0, err
	}
	seq := int64(ack.Sequence)
	if before.Stream != "" && seq <= before.High {
		// A seq at or below one the stream had already reached: it lost
		// updates while this process ran (its NATS server came back from a
		// damaged store).
		if err := h.rewound(ctx, m, before, seq); err != nil {
			return 0, err
		}
	}
	// The publisher is told its seq only once the mark covers it.
	if err := h.raise(ctx, m, seq); err != nil {
		return 0, err
	}
	return seq, nil
}

// rewound gives m's stream a new id after an append got seq although the
// mark before it, r, was at or past it; unless the mark moved to another
// id meanwhile.
func (h *jsHistory) rewound(ctx context.Context, m *mark, r markRecord, seq int64) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	if now, _ := m.snapshot(); now.Stream != r.Stream {
		return nil // renamed by a check meanwhile
	}
	info, err := h.stream(ctx, m.topic)
	if err != nil {
		return err
	}
	log := h.log.With("stream_ref", m.ref, "mark", h.store.where(m.ref))
	log.Error("JetStream stream handed out a seq again: it lost acknowledged updates while this server ran, so it gets a new id and resuming clients a reset",
		"stream_was", r.Stream, "seq", seq, "high_water", r.High)
	_, err = h.renameLocked(ctx, m, info, log)
	return err
}

func (h *jsHistory) Info(ctx context.Context, topic string) (TopicInfo, error) {
	info, id, err := h.load(ctx, topic)
	if err != nil {
		return TopicInfo{}, err
	}
	last := int64(info.State.LastSeq)
	first := int64(info.State.FirstSeq)
	if info.State.Msgs == 0 {
		first = last + 1
	}
	return TopicInfo{Stream: id, First: first, Last: last}, nil
}

func (h *jsHistory) Watch(ctx context.Context, topic string, from int64, fn func(Entry)) (func(), error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(from)}
	}
	cons, err := h.js.OrderedConsumer(ctx, streamName(topic), cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, ErrNoTopic
	}
	if err != nil {
		return nil, err
	}
	m := h.markFor(topic)
	// wctx ends with stop: an update waiting for its mark is then dropped.
	wctx, cancel := context.WithCancel(context.Background())
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		md, err := msg.Metadata()
		if err != nil {
			return
		}
		seq := int64(md.Sequence.Stream)
		// An update reaches a client only once the mark covers it. The
		// mark is raised to the stream's end as this consumer sees it, so
		// a burst costs one write, not one per update.
		if !h.raiseWatched(wctx, m, seq, seq+int64(md.NumPending)) {
			return
		}
		fn(Entry{Seq: seq, Data: msg.Data(), Time: md.Timestamp})
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		cancel()
		cc.Stop()
	}, nil
}

// jsMarkRetry is how long a watcher waits before trying again to record a
// mark that failed.
const jsMarkRetry = 500 * time.Millisecond

// raiseWatched raises m to at least seq (to, if it can), retrying until it
// succeeds; false when ctx ended first.
func (h *jsHistory) raiseWatched(ctx context.Context, m *mark, seq, to int64) bool {
	for {
		if err := h.raise(ctx, m, max(seq, to)); err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(jsMarkRetry):
		}
	}
}

func (h *jsHistory) Close() error {
	if h.o.CloseConn {
		h.nc.Close()
	}
	return nil
}

// natsConnectTimeout bounds the first connection to NATS.
const natsConnectTimeout = 5 * time.Second

// ConnectJetStream connects to the NATS server at url (one or several,
// comma-separated) and returns a History over its JetStream, its marks in
// o.MarksDir or, empty, in the bucket MarksBucket there. The connection
// reconnects forever; Close ends it (o.CloseConn is implied).
func ConnectJetStream(ctx context.Context, url string, o JetStreamOptions) (History, error) {
	// No reconnect buffer: a publish while NATS is away fails at once
	// (unavailable) instead of being held and stored later, after the
	// publisher was told it failed.
	nc, err := nats.Connect(url, nats.Name("wsready"), nats.Timeout(natsConnectTimeout),
		nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false), nats.ReconnectBufSize(-1))
	if err != nil {
		return nil, fmt.Errorf("failed to connect to NATS: %w", err)
	}
	o.CloseConn = true
	h, err := NewJetStreamHistory(ctx, nc, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return h, nil
}

// ---- high-water marks ----

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
	// 200 bytes (a topic is at most 64), padded with NULs, so an update
	// overwrites the whole file in place.
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

// kvMarks keeps the marks in the JetStream key-value bucket MarksBucket,
// key = ref, written with compare-and-set so nodes sharing it never move
// a mark down.
type kvMarks struct {
	kv    jetstream.KeyValue
	isNew bool
}

func openKVMarks(ctx context.Context, js jetstream.JetStream) (*kvMarks, error) {
	kv, err := js.KeyValue(ctx, MarksBucket)
	isNew := false
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: MarksBucket, History: 1, Storage: jetstream.FileStorage,
			Description: "wsready: each topic's stream id and highest seq handed out"})
		isNew = err == nil
		if errors.Is(err, jetstream.ErrBucketExists) { // another node made it first
			kv, err = js.KeyValue(ctx, MarksBucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open the high-water mark bucket: %w", err)
	}
	return &kvMarks{kv: kv, isNew: isNew}, nil
}

func (k *kvMarks) where(ref string) string { return MarksBucket + "/" + ref }
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

func (m *mark) set(r markRecord, rev uint64) {
	m.mu.Lock()
	if r.Stream != m.rec.Stream {
		// Seqs asked for under another id (before a loss: far past the
		// stream's new end) must not be written as this id's mark.
		m.want = r.High
	}
	m.rec, m.rev, m.loaded = r, rev, true
	m.mu.Unlock()
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

// loadLocked reads m from the store if this process has not yet; it
// returns errMarkDamaged (m then holds no record) or a store error. Called
// with m's lock held.
func (h *jsHistory) loadLocked(ctx context.Context, m *mark) error {
	if _, loaded := m.snapshot(); loaded {
		return nil
	}
	r, rev, err := h.store.get(ctx, m.ref)
	switch {
	case err == nil && r.Topic != m.topic:
		err = fmt.Errorf("%w: it names another topic", errMarkDamaged)
		r = markRecord{}
	case errors.Is(err, errNoMark):
		r, err = markRecord{}, nil
	case errors.Is(err, errMarkDamaged):
		r = markRecord{}
	case err != nil:
		return err
	}
	m.set(r, rev)
	return err
}

// writeLocked stores r as m's mark. On errMarkConflict m is unloaded, to
// be read again. Called with m's lock held.
func (h *jsHistory) writeLocked(ctx context.Context, m *mark, r markRecord) error {
	m.mu.Lock()
	rev := m.rev
	m.mu.Unlock()
	r.V, r.Topic = markVersion, m.topic
	n, err := h.store.put(ctx, m.ref, r, rev)
	if errors.Is(err, errMarkConflict) {
		m.mu.Lock()
		m.loaded = false
		m.mu.Unlock()
		return err
	}
	h.noteWrite(err)
	if err != nil {
		return err
	}
	m.set(r, n)
	return nil
}

// noteWrite logs when writing marks starts failing and when it works again.
func (h *jsHistory) noteWrite(err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		if !h.failing.Swap(true) {
			h.log.Error("failed to record JetStream high-water marks: publishes are refused and updates held back until it works", "err", err.Error())
		}
	} else if err == nil && h.failing.Swap(false) {
		h.log.Info("recording JetStream high-water marks again")
	}
}

// raise makes m cover seq, durably, before it returns.
func (h *jsHistory) raise(ctx context.Context, m *mark, seq int64) error {
	m.mu.Lock()
	if m.loaded && m.rec.Stream != "" && m.rec.High >= seq {
		m.mu.Unlock()
		return nil
	}
	m.want = max(m.want, seq)
	m.mu.Unlock()
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	for range 8 { // conflicts: other nodes raising the same mark
		if err := h.loadLocked(ctx, m); err != nil {
			return err // a damaged mark waits for the topic's check
		}
		m.mu.Lock()
		r, want := m.rec, m.want
		m.mu.Unlock()
		if r.Stream != "" && r.High >= seq {
			return nil // covered by a write while we waited for the lock
		}
		if r.Stream == "" {
			return errors.New("failed to raise a high-water mark: the topic was not checked") // the next load writes it
		}
		// Whatever stream id the mark holds now is the latest word on the
		// stream's identity; a mark only goes up.
		r.High, r.Lost = max(r.High, want, seq), false
		if err := h.writeLocked(ctx, m, r); !errors.Is(err, errMarkConflict) {
			return err
		}
	}
	return errMarkConflict
}

// load returns topic's stream info and the id to give clients, after
// squaring the stream with its mark: the mark then covers the stream's
// last seq. ErrNoTopic when there is no stream.
func (h *jsHistory) load(ctx context.Context, topic string) (*jetstream.StreamInfo, string, error) {
	m := h.existing(topic)
	if m != nil {
		// The common case: the mark is read before the stream, so a stream
		// still at or past it has lost nothing (appends only raise both).
		if r, loaded := m.snapshot(); loaded && r.Stream != "" && !r.Lost {
			info, err := h.stream(ctx, topic)
			if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, "", err
			}
			if err == nil && streamID(info) == r.Stream && int64(info.State.LastSeq) >= r.High {
				if err := h.raise(ctx, m, int64(info.State.LastSeq)); err != nil {
					return nil, "", err
				}
				return info, r.Stream, nil
			}
		}
	} else {
		_, err := h.stream(ctx, topic)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			if _, _, err := h.store.get(ctx, streamRef(topic)); errors.Is(err, errNoMark) {
				return nil, "", ErrNoTopic // never heard of: nothing to remember
			} else if err != nil && !errors.Is(err, errMarkDamaged) {
				return nil, "", err
			}
		} else if err != nil {
			return nil, "", err
		}
		m = h.markFor(topic)
	}
	for range 4 {
		info, id, err := h.check(ctx, m)
		if !errors.Is(err, errMarkConflict) {
			return info, id, err
		}
	}
	return nil, "", errMarkConflict
}

// check squares m's stream with m (see load), logging a loss and giving the
// stream a new id when it ends below its mark or the mark is damaged.
func (h *jsHistory) check(ctx context.Context, m *mark) (*jetstream.StreamInfo, string, error) {
	if err := m.lock(ctx); err != nil {
		return nil, "", err
	}
	defer m.unlock()
	damaged := h.loadLocked(ctx, m)
	if damaged != nil && !errors.Is(damaged, errMarkDamaged) {
		return nil, "", damaged
	}
	r, _ := m.snapshot()
	info, err := h.stream(ctx, m.topic)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, "", h.goneLocked(ctx, m, damaged)
	}
	if err != nil {
		return nil, "", err
	}
	id, last := streamID(info), int64(info.State.LastSeq)
	log := h.log.With("stream_ref", m.ref, "mark", h.store.where(m.ref))
	switch {
	case damaged != nil:
		log.Error("JetStream high-water mark damaged: no loss can be ruled out, so the stream gets a new id and resuming clients a reset",
			"cause", damaged.Error())
		if id, err = h.renameLocked(ctx, m, info, log); err != nil {
			return nil, "", err
		}
	case r.Stream == id && last < r.High:
		// The stream lost updates clients may hold: under the same id its
		// next seqs would repeat theirs, and a client resuming past its
		// new end would get nothing.
		log.Error("JetStream stream lost acknowledged updates: it ends below the highest seq handed out, so it gets a new id and resuming clients a reset",
			"stream_was", id, "last", last, "high_water", r.High)
		if id, err = h.renameLocked(ctx, m, info, log); err != nil {
			return nil, "", err
		}
	case r.Stream == id:
		if r.Lost {
			log.Info("JetStream stream is back under its id, with nothing lost", "stream", id, "last", last)
		}
		if last > r.High || r.Lost {
			if err := h.writeLocked(ctx, m, markRecord{Stream: id, High: max(last, r.High)}); err != nil {
				return nil, "", err
			}
		}
	case r.Stream == "" || info.Config.Metadata[StreamIDMetadataKey] != "":
		// No mark yet; or a stream another node gave a new id, between
		// its metadata and its mark.
		switch {
		case r.Stream != "":
			log.Debug("JetStream stream was given a new id by another node", "stream_was", r.Stream, "stream", id)
		case h.store.fresh() || last == 0:
			log.Debug("JetStream stream adopted: its high-water mark starts now", "stream", id, "last", last)
		default:
			log.Warn("JetStream stream had no high-water mark: adopted at its last seq (a loss before now cannot be told)", "stream", id, "last", last)
		}
		if err := h.writeLocked(ctx, m, markRecord{Stream: id, High: last}); err != nil {
			return nil, "", err
		}
	default:
		// The stream was made again since its mark was written: after its
		// loss (said then), or behind this server's back. Its creation time
		// is a new id already, but it gets an explicit one: the update
		// also writes the stream's metadata file again, which NATS does
		// not when it makes a stream over a damaged one (v2.15: only a
		// missing or empty file is written), so it would be dropped again
		// at the next start.
		if r.Lost {
			log.Info("JetStream stream made again after its loss: a new history under a new id", "stream_was", r.Stream, "last", last)
		} else {
			log.Warn("JetStream stream was replaced (deleted and made again) since its high-water mark was written: resuming clients get a reset",
				"stream_was", r.Stream, "last", last)
		}
		if id, err = h.renameLocked(ctx, m, info, log); err != nil {
			return nil, "", err
		}
	}
	m.setChecked(true)
	return info, id, nil
}

// renameLocked gives m's stream a new id, in its metadata, and a mark at
// its last seq under that id.
func (h *jsHistory) renameLocked(ctx context.Context, m *mark, info *jetstream.StreamInfo, log *slog.Logger) (string, error) {
	id := newStreamID()
	cfg := info.Config
	cfg.Metadata = maps.Clone(cfg.Metadata)
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[StreamIDMetadataKey] = id
	if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
		log.Error("failed to give a JetStream stream a new id: the topic is unavailable until it succeeds", "cause", errKind(err))
		return "", fmt.Errorf("failed to give the stream a new id: %w", err)
	}
	// From here on the stream carries the new id: if the mark is not
	// written now, the next check finds a mark for another id and adopts.
	if err := h.writeLocked(ctx, m, markRecord{Stream: id, High: int64(info.State.LastSeq)}); err != nil {
		return "", err
	}
	log.Info("JetStream stream has a new id", "stream", id, "last", info.State.LastSeq)
	return id, nil
}

// goneLocked handles a topic whose mark exists but whose stream does not:
// the store lost it (JetStream drops a stream whose metadata file is
// damaged). Logged once; the next publish makes the stream again, which
// starts a new id. It returns ErrNoTopic.
func (h *jsHistory) goneLocked(ctx context.Context, m *mark, damaged error) error {
	m.setChecked(false)
	r, _ := m.snapshot()
	if r.Lost {
		return ErrNoTopic // said already
	}
	log := h.log.With("stream_ref", m.ref, "mark", h.store.where(m.ref))
	if damaged != nil {
		log.Error("JetStream high-water mark damaged, and its stream is gone", "cause", damaged.Error())
	} else if r.Stream == "" {
		return ErrNoTopic
	} else {
		log.Error("JetStream stream is gone: its store lost it (a damaged metadata file?) with the updates it held; the next publish starts a new history under a new id",
			"stream_was", r.Stream, "high_water", r.High)
	}
	r.Lost = true
	if err := h.writeLocked(ctx, m, r); err != nil && !errors.Is(err, errMarkConflict) {
		return err
	}
	return ErrNoTopic
}

// checkAll squares every wsready stream, and every mark whose stream is
// gone, as a History starts: losses are logged before any client comes.
func (h *jsHistory) checkAll(ctx context.Context) error {
	refs, err := h.store.refs(ctx)
	if err != nil {
		return err
	}
	l := h.js.StreamNames(ctx, jetstream.WithStreamListSubject(SubjectPrefix+">"))
	var topics []string
	for name := range l.Name() {
		if topic, ok := strings.CutPrefix(name, StreamPrefix); ok && protocol.ValidTopic(topic) {
			topics = append(topics, topic)
		}
	}
	if err := l.Err(); err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for _, topic := range topics {
		seen[streamRef(topic)] = true
		if _, _, err := h.load(ctx, topic); err != nil && !errors.Is(err, ErrNoTopic) {
			errs = append(errs, err)
		}
	}
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		r, _, err := h.store.get(ctx, ref)
		switch {
		case errors.Is(err, errMarkDamaged):
			// No topic to tie it to: the stream it was for is not here
			// either. Said at every start until an operator removes it.
			h.log.Error("JetStream high-water mark damaged, for a stream that is not in the store", "stream_ref", ref,
				"mark", h.store.where(ref), "cause", err.Error())
		case err != nil:
			errs = append(errs, err)
		case streamRef(r.Topic) != ref:
			h.log.Error("JetStream high-water mark damaged, for a stream that is not in the store", "stream_ref", ref,
				"mark", h.store.where(ref), "cause", "it names another topic")
		default:
			if _, _, err := h.load(ctx, r.Topic); err != nil && !errors.Is(err, ErrNoTopic) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
