//go:build !js

package server

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wsready/wsready/protocol"
)

// The JetStream mapping. Each topic is a stream of its own (streamName)
// holding one subject, subjectPrefix+topic, so a stream's sequence numbers
// are the topic's seqs: +1 per update, from 1, no gaps (JetStream assigns
// them atomically, whichever node publishes). The stream keeps the newest
// HistoryMsgs updates, none older than HistoryAge (limits retention,
// discard old), on file storage. Each node loads a topic when first used
// with an ordered consumer from the stream's first retained seq and keeps
// it running for live updates (topics.go).
//
// A topic name without a separator (protocol.ValidTopic) is valid as it is
// in a stream name and a subject token: its stream is streamPrefix+topic,
// as it always was, so existing streams stay theirs. A stream name may hold
// neither '.' nor '/', so a name with separators is escaped: its stream is
// escapedPrefix + its bytes in lowercase base32hex without padding (0-9 a-v:
// no '_', so it can meet no streamPrefix name, and base32 is one to one).
// Its subject is the topic as it is (subjects take '.', ':' and '/'; a
// literal subject is one to one with its topic and overlaps no other).
//
// The stream id (TopicInfo.Stream) names an incarnation of the topic's
// history: clients hold it with their cursor and are told continuity was
// lost when it changes. It is the id in the stream's metadata
// (streamIDMetadataKey) when there is one, else the stream's creation time:
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
	streamPrefix  = "WSREADY_"
	escapedPrefix = "WSREADYX_" // a topic with separators: base32hex follows
	subjectPrefix = "wsready.topic."
	// streamIDMetadataKey is the stream metadata key holding the stream id
	// given after a loss; a stream without it is named by its creation
	// time.
	streamIDMetadataKey = "wsready_stream_id"
	// marksBucket is the JetStream key-value bucket holding the marks when
	// JetStreamOptions.MarksDir is empty.
	marksBucket = "WSREADY_MARKS"
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
	// key-value bucket WSREADY_MARKS, shared by every node on that NATS
	// (wsready serve -nats): that catches a stream's own damage, not a
	// whole store restored from an older copy.
	MarksDir string
	// Replicas is how many servers of a NATS cluster keep each topic's
	// stream and the marks bucket: 1 to 5 (JetStream's own limit); 0 means
	// 1. With 3 on a cluster of three, any one NATS server may die without
	// losing an acknowledged publish (a publish is acknowledged once a
	// majority stored it) and the others go on. More than the cluster can
	// place is refused when the History starts, with ErrReplicas (a server
	// of its own takes only 1); streams and the bucket made with another
	// count are changed to this one then. A topic's stream is made with
	// these replicas when first used.
	Replicas int
	// CloseConn makes Close close the NATS connection.
	CloseConn bool
	// Logger receives the damage reports; default slog.Default().
	Logger *slog.Logger
}

// jsCheckTimeout bounds the check of every stream when a History starts.
const jsCheckTimeout = 30 * time.Second

// jsMaxReplicas is JetStream's most replicas for a stream.
const jsMaxReplicas = 5

// ErrReplicas is JetStreamOptions.Replicas out of range, or more replicas
// than the NATS server(s) can place: a server of its own keeps only 1, a
// cluster as many as it has servers with JetStream up. JetStream's own
// answer is wrapped with it.
var ErrReplicas = errors.New("replicas refused")

// replicas is the count streams are made with.
func (o *JetStreamOptions) replicas() int { return max(o.Replicas, 1) }

// replicasError says what a JetStream refusal of n replicas means, or
// returns err as it is.
func replicasError(err error, n int) error {
	var api *jetstream.APIError
	if n > 1 && errors.As(err, &api) {
		switch api.ErrorCode {
		case jsErrCodeReplicasNotSupported:
			return fmt.Errorf("%d replicas are more than a NATS server outside a cluster keeps (1) (%w: %w)", n, ErrReplicas, err)
		case jsErrCodeNoPeers, jsErrCodeInsufficientResources:
			return fmt.Errorf("%d replicas are more than the NATS cluster has servers with JetStream up (%w: %w)", n, ErrReplicas, err)
		}
	}
	return err
}

// JetStream's refusals of a placement (nats-server's error codes, which
// the client library does not name).
const (
	jsErrCodeReplicasNotSupported  jetstream.ErrorCode = 10074
	jsErrCodeNoPeers               jetstream.ErrorCode = 10005
	jsErrCodeInsufficientResources jetstream.ErrorCode = 10023
)

// scale gives the stream name n replicas if it has another count.
func (h *jsHistory) scale(ctx context.Context, name, what string) error {
	st, err := h.js.Stream(ctx, name)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	n := h.o.replicas()
	if cfg.Replicas == n || (cfg.Replicas == 0 && n == 1) {
		return nil
	}
	was := cfg.Replicas
	cfg.Replicas = n
	if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("failed to change the replicas of %s from %d to %d: %w", what, was, n, replicasError(err, n))
	}
	h.log.Info("JetStream replicas changed", "stream", what, "from", was, "to", n)
	return nil
}

// scaleAll gives every wsready stream the replicas asked for, as a
// History starts; a request that times out is asked again
// (retryTimeouts), as the marks bucket's open is.
func (h *jsHistory) scaleAll(ctx context.Context) error {
	var names []string
	err := retryTimeouts(ctx, func(ctx context.Context) error {
		names = names[:0]
		l := h.js.StreamNames(ctx, jetstream.WithStreamListSubject(subjectPrefix+">"))
		for name := range l.Name() {
			names = append(names, name)
		}
		return l.Err()
	})
	if err != nil {
		return fmt.Errorf("failed to list the wsready streams: %w", err)
	}
	for _, name := range names {
		// Named in logs as streamRef names it (the hash of its name).
		sum := sha256.Sum256([]byte(name))
		err := retryTimeouts(ctx, func(ctx context.Context) error { return h.scale(ctx, name, "stream "+hex.EncodeToString(sum[:8])) })
		if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
	}
	return nil
}

type jsHistory struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	o     JetStreamOptions
	log   *slog.Logger
	store markStore

	mu       sync.Mutex
	marks    map[string]*mark                   // topics whose stream or mark exists
	watchers map[string]map[*jsWatcher]struct{} // by topic, while they run

	failing atomic.Bool // writing marks fails (logged once, and once when it recovers)
}

// NewJetStreamHistory keeps topics in JetStream over nc. It opens the marks
// (MarksDir, or the key-value bucket) and checks every wsready stream
// against its mark before it returns, logging what was lost; within ctx.
func NewJetStreamHistory(ctx context.Context, nc *nats.Conn, o JetStreamOptions) (History, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Replicas < 0 || o.Replicas > jsMaxReplicas {
		return nil, fmt.Errorf("%w: JetStreamOptions.Replicas must be 1 to %d (0: 1), not %d", ErrReplicas, jsMaxReplicas, o.Replicas)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("failed to open JetStream: %w", err)
	}
	h := &jsHistory{nc: nc, js: js, o: o, log: o.Logger, marks: map[string]*mark{}, watchers: map[string]map[*jsWatcher]struct{}{}}
	if o.MarksDir != "" {
		h.store, err = openFileMarks(o.MarksDir)
	} else {
		h.store, err = openKVMarks(ctx, js, o.replicas())
		if err == nil {
			err = retryTimeouts(ctx, func(ctx context.Context) error {
				return h.scale(ctx, kvStreamPrefix+marksBucket, "the high-water mark bucket")
			})
		}
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, jsCheckTimeout)
	defer cancel()
	if err := h.scaleAll(ctx); err != nil {
		return nil, err
	}
	if err := h.checkAll(ctx); err != nil {
		// The topics are checked again when they are loaded.
		h.log.Warn("failed to check every JetStream stream against its high-water mark at start", "cause", errKind(err))
	}
	return h, nil
}

// topicBase32 escapes a topic with separators in its stream's name.
var topicBase32 = base32.HexEncoding.WithPadding(base32.NoPadding)

// streamName is topic's stream: streamPrefix+topic for a name without a
// separator, escapedPrefix+base32hex (lowercase) for one with them. At most
// 9+205 bytes, under JetStream's 255.
func streamName(topic string) string {
	if !strings.ContainsAny(topic, ".:/") {
		return streamPrefix + topic
	}
	return escapedPrefix + strings.ToLower(topicBase32.EncodeToString([]byte(topic)))
}

// topicOfStream is the topic whose stream is called name: false for a
// stream that is not one of ours (or not one streamName makes).
func topicOfStream(name string) (string, bool) {
	if topic, ok := strings.CutPrefix(name, streamPrefix); ok {
		return topic, protocol.ValidTopic(topic) && streamName(topic) == name
	}
	enc, ok := strings.CutPrefix(name, escapedPrefix)
	if !ok {
		return "", false
	}
	b, err := topicBase32.DecodeString(strings.ToUpper(enc))
	topic := string(b)
	return topic, err == nil && protocol.ValidTopic(topic) && streamName(topic) == name
}

// streamRef names topic's stream in logs and in the marks: the topic is a
// name a peer may have chosen, which logs never carry (no peer text). The
// mark it names holds the topic, so an operator can look it up:
// printf <stream name> | sha256sum | cut -c1-16 gives it too.
func streamRef(topic string) string {
	sum := sha256.Sum256([]byte(streamName(topic)))
	return hex.EncodeToString(sum[:8])
}

// streamID is the id clients are given for the stream described by info.
func streamID(info *jetstream.StreamInfo) string {
	if id := info.Config.Metadata[streamIDMetadataKey]; id != "" {
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
		Subjects:   []string{subjectPrefix + topic},
		Retention:  jetstream.LimitsPolicy,
		Discard:    jetstream.DiscardOld,
		MaxMsgs:    int64(h.o.Retention.MaxMsgs),
		MaxAge:     h.o.Retention.MaxAge,
		MaxMsgSize: 64 << 10,
		Storage:    jetstream.FileStorage,
		Replicas:   h.o.replicas(),
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // in use: another node made it first
		return replicasError(err, h.o.replicas())
	}
	_, _, err = h.load(ctx, topic)
	return err
}

// count is the number of wsready streams.
func (h *jsHistory) count(ctx context.Context) (int, error) {
	l := h.js.StreamNames(ctx, jetstream.WithStreamListSubject(subjectPrefix+">"))
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
	ack, err := h.js.Publish(ctx, subjectPrefix+topic, data, jetstream.WithExpectStream(streamName(topic)))
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

// syncLocked gives fn a stream marker if the mark names another stream id
// than fn was last told. Called with w.mu held.
func (w *jsWatcher) syncLocked() {
	r, loaded := w.m.snapshot()
	if w.stopped || !loaded || r.Stream == "" || r.Stream == w.told {
		return
	}
	w.told = r.Stream
	w.fn(Entry{Stream: r.Stream})
}

func (h *jsHistory) addWatcher(topic string, w *jsWatcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watchers[topic] == nil {
		h.watchers[topic] = map[*jsWatcher]struct{}{}
	}
	h.watchers[topic][w] = struct{}{}
}

func (h *jsHistory) removeWatcher(topic string, w *jsWatcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watchers[topic], w)
	if len(h.watchers[topic]) == 0 {
		delete(h.watchers, topic)
	}
}

// tellWatchers gives topic's watchers the stream id its mark now names.
// Called when the mark's id changed: a rename here, or one read from the
// store (another node's).
func (h *jsHistory) tellWatchers(topic string) {
	h.mu.Lock()
	ws := make([]*jsWatcher, 0, len(h.watchers[topic]))
	for w := range h.watchers[topic] {
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		w.syncLocked()
		w.mu.Unlock()
	}
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

// natsConn is the connection the History runs on: the Server's presence
// and control use it too unless Options.NATS names another.
func (h *jsHistory) natsConn() *nats.Conn { return h.nc }

func (h *jsHistory) Close() error {
	if h.o.CloseConn {
		h.nc.Close()
	}
	return nil
}

// natsConnectTimeout bounds each dial of a NATS server.
const natsConnectTimeout = 5 * time.Second

// natsReconnectWait is the pause before a NATS server that was just tried
// is dialed again. A server of the list not tried recently is dialed at
// once, so a node whose NATS server died moves to another one immediately.
const natsReconnectWait = 250 * time.Millisecond

// jsReadyTimeout bounds how long ConnectJetStream waits for JetStream to
// answer (a cluster that is starting elects its leader first, which needs
// a majority of its servers up); jsReadyRetry is the pause between tries.
const (
	jsReadyTimeout = 30 * time.Second
	jsReadyRetry   = 250 * time.Millisecond
)

// ConnectJetStream connects to the NATS server at url (one or several,
// comma-separated: the servers of a NATS cluster) and returns a History
// over its JetStream, its marks in o.MarksDir or, empty, in the bucket
// WSREADY_MARKS there. It waits up to 30 s for JetStream to answer. The
// connection reconnects forever, to any server of the list (and those the
// cluster tells it of), so a node rides over the death of the NATS server
// it was connected to; Close ends it (o.CloseConn is implied).
func ConnectJetStream(ctx context.Context, url string, o JetStreamOptions) (History, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	log := o.Logger
	// No reconnect buffer: a publish while NATS is away fails at once
	// (unavailable) instead of being held and stored later, after the
	// publisher was told it failed. That holds across a move to another
	// server of a cluster too.
	nc, err := nats.Connect(url, nats.Name("wsready"), nats.Timeout(natsConnectTimeout),
		nats.MaxReconnects(-1), nats.ReconnectWait(natsReconnectWait), nats.RetryOnFailedConnect(false), nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed by Close
				log.Warn("NATS connection lost: reconnecting; publishes fail meanwhile", "cause", err.Error())
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("NATS reconnected", "server", c.ConnectedUrlRedacted())
		}))
	if err != nil {
		return nil, fmt.Errorf("failed to connect to NATS: %w", err)
	}
	if err := waitJetStream(ctx, nc, log); err != nil {
		nc.Close()
		return nil, err
	}
	o.CloseConn = true
	h, err := NewJetStreamHistory(ctx, nc, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return h, nil
}

// waitJetStream waits, within ctx and jsReadyTimeout, until JetStream
// answers a request for the account's information.
func waitJetStream(ctx context.Context, nc *nats.Conn, log *slog.Logger) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("failed to open JetStream: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, jsReadyTimeout)
	defer cancel()
	for try := 0; ; try++ {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		acancel()
		if err == nil {
			if try > 0 {
				log.Info("JetStream answers")
			}
			return nil
		}
		if try == 0 {
			log.Warn("waiting for JetStream (a NATS cluster elects its leader once a majority of its servers is up)", "cause", err.Error(), "within", jsReadyTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("failed to reach JetStream within %v: %w", jsReadyTimeout, err)
		case <-time.After(jsReadyRetry):
		}
	}
}
