//go:build !js

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Squaring a JetStream stream with its high-water mark: raising the mark,
// loading a topic, and what a loss, a damaged mark or a vanished stream
// turn into (a new stream id, said at ERROR).

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
	if m.set(r, rev) {
		h.tellWatchers(m.topic)
	}
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
	if m.set(r, n) {
		h.tellWatchers(m.topic)
	}
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
	case r.Stream == "" && !mayLackMark(h.store, last):
		// A stream with updates and no mark in a store that had marks
		// before: its mark was lost (deleted with the stream's index, a
		// store restored from an older copy), so what clients were given
		// cannot be known; the stream may have rewound. As for a damaged
		// mark, no loss can be ruled out.
		log.Error("JetStream high-water mark missing for a stream with updates: no loss can be ruled out, so the stream gets a new id and resuming clients a reset",
			"stream_was", id, "last", last)
		if id, err = h.renameLocked(ctx, m, info, log); err != nil {
			return nil, "", err
		}
	case r.Stream == "" || info.Config.Metadata[streamIDMetadataKey] != "":
		// No mark yet; or a stream another node gave a new id, between
		// its metadata and its mark.
		if r.Stream != "" {
			log.Debug("JetStream stream was given a new id by another node", "stream_was", r.Stream, "stream", id)
		} else {
			log.Debug("JetStream stream adopted: its high-water mark starts now", "stream", id, "last", last)
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
	h.missingLocked(ctx, info, log)
	m.setChecked(true)
	return info, id, nil
}

// mayLackMark reports whether a stream whose last seq is last may go
// without a mark: the store is new (made by this process: streams from
// before marks were kept are adopted), or the stream has no update yet.
func mayLackMark(store markStore, last int64) bool { return store.fresh() || last == 0 }

// jsMaxRanges bounds the missing ranges one ERROR line lists.
const jsMaxRanges = 8

// missingLocked says at ERROR, with their ranges, the seqs a stream has
// handed out but no longer stores between its first and last (a message
// block truncated while its index was kept): not a rewind (its next seq
// is still past them, so its id stays), but updates lost. JetStream
// retention only ever drops the oldest, so any seq missing inside is
// damage. The hub answers a client resuming into them with a subscribed
// whose from is past its since (its ContinuityLost, with the range).
// Said at each check: at each start while they are retained.
func (h *jsHistory) missingLocked(ctx context.Context, info *jetstream.StreamInfo, log *slog.Logger) {
	if info.State.NumDeleted == 0 {
		return
	}
	var ranges []string
	if st, err := h.js.Stream(ctx, info.Config.Name); err == nil {
		if full, err := st.Info(ctx, jetstream.WithDeletedDetails(true)); err == nil {
			ranges = seqRanges(full.State.Deleted, jsMaxRanges)
		}
	}
	log.Error("JetStream stream is missing updates it acknowledged (a damaged store): clients resuming into them are told continuity was lost",
		"stream", streamID(info), "missing", info.State.NumDeleted, "ranges", strings.Join(ranges, ","),
		"first", info.State.FirstSeq, "last", info.State.LastSeq)
}

// seqRanges writes seqs (ascending) as at most n ranges "a-b", then
// "..." when there are more.
func seqRanges(seqs []uint64, n int) []string {
	var out []string
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if len(out) == n {
			return append(out, "...")
		}
		if i == j {
			out = append(out, strconv.FormatUint(seqs[i], 10))
		} else {
			out = append(out, strconv.FormatUint(seqs[i], 10)+"-"+strconv.FormatUint(seqs[j], 10))
		}
		i = j + 1
	}
	return out
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
	cfg.Metadata[streamIDMetadataKey] = id
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
	l := h.js.StreamNames(ctx, jetstream.WithStreamListSubject(subjectPrefix+">"))
	var topics []string
	for name := range l.Name() {
		if topic, ok := topicOfStream(name); ok {
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
