// Type declarations for wsready.js, the WebAssembly WebSocket client.

/** The state of one readiness layer. "off": not tracked at this stage. */
export type Level = 'down' | 'pending' | 'up' | 'off';

export interface State {
  /** Is the socket open? */
  transport: Level;
  /** Is the peer alive (a server ping within its deadline)? */
  protocol: Level;
  /** Has the server taken every topic this client asked for? "down" while it refuses one (refused). */
  service: Level;
  /** True when every tracked layer is up. Send requests only when ready. */
  ready: boolean;
  /** Increments with every new socket; tags every update. */
  epoch: number;
  /** The network state as the browser reports it. */
  online: boolean;
  /** Reconnect attempts since the backoff last reset. */
  attempt: number;
  /** True after close(); state() and stats() keep their final values. */
  stopped: boolean;
  /**
   * The terminal state the session is in, or null: "ended" (the server
   * closed with 1000), "forbidden" (4003/1008: ask the user to sign in),
   * "refresh_exhausted" (the token kept expiring), "gave_up" (the budget or
   * window ran out), "stopped" (close()). Only reconnect() leaves it.
   */
  ended: Terminal | null;
  /** The close code that ended the session, or 0. */
  endCode: number;
  /** The server's close reason with it ("bad token", "auth required", an app's Disconnect reason; at most 123 bytes), or "". */
  endReason: string;
  /** Why the client last lost its connection or failed to get one; null once READY. */
  lastError: Failure | null;
  /**
   * The transport in use (between sockets: the next dial's). "http" after the
   * stage 8 fallback (Server-Sent Events and POST) when WebSockets do not get through.
   */
  via: Transport | null;
  /** Since when the client has not been READY (ms since the epoch, Date.now() style); null while READY (stage 8). */
  notReadySince: number | null;
  /** Not READY for degradedMs (3 s): draw a "reconnecting" banner (stage 8). */
  degraded: boolean;
  /** Not READY for offlineMs (30 s): draw an "offline" banner (stage 8). Not the same as online, the browser's network. */
  offline: boolean;
  /**
   * Many tabs (stage 8): "on" (the tabs of this origin and URL share one
   * connection), "off" (tabs: false, or before stage 8), "unsupported" (no
   * Web Locks or BroadcastChannel here: this tab has its own connection).
   */
  tabs: 'on' | 'off' | 'unsupported';
  /** With tabs on: this tab holds the connection. */
  leader: boolean;
  /** With tabs on: another tab holds it; transport, protocol, service, ready and via are that tab's. */
  follower: boolean;
  /**
   * A topic the server refused on this connection (forbidden, invalid_topic, too_many_subscriptions,
   * or the server application's own code), the first in the order the topics were named; null for
   * none. It holds the service layer down, so the client is not READY (ready() rejects with
   * TopicRefused) until the topic is given up (subscribe()'s function); the next connection asks again.
   */
  refused: TopicError | null;
  /** How many topics the server refuses on this connection (refused names the first). */
  refusals: number;
}

/** A way to carry the frames: one WebSocket, or (stage 8) an EventSource for the server's frames and POST for the client's. */
export type Transport = 'websocket' | 'http';

export interface Failure {
  /**
   * network: could not reach the server (a browser cannot tell DNS, refused, TLS and a dropped
   * network apart); refused: the server asked to come back later; timeout; heartbeat; silent: the
   * socket opened and the server sent nothing to a client with no token hook (a server that requires
   * a token waits for one); token;
   * token_expired; forbidden; origin: the server does not accept this page's origin; ended;
   * closed: the server closed with another code; send_stalled: the client's own frames stopped draining (stage 8, 4409).
   */
  class: 'network' | 'refused' | 'timeout' | 'heartbeat' | 'silent' | 'token' | 'token_expired' | 'forbidden' | 'origin' | 'ended' | 'closed' | 'send_stalled';
  code: number;
  /** A fixed sentence for the class; never the server's text. */
  message: string;
}

export type Terminal = 'ended' | 'forbidden' | 'refresh_exhausted' | 'gave_up' | 'stopped';

/** One reconnect decision (stage 6 classifies; every stage records). No token, payload or server text. */
export interface ReconnectRecord {
  /** Random, opaque: which client session. */
  session: string;
  epoch: number;
  attempt: number;
  class: 'backoff' | 'retry_after' | 'token_expired' | 'forbidden' | 'ended';
  by: 'server' | 'network' | 'client';
  code: number;
  delayMs: number;
  retryAfterMs: number;
  /** -1: unbounded. */
  budgetLeft: number;
  /** -1: unbounded. */
  windowLeftMs: number;
  /** wait_leader: another tab took the connection (stage 8 tabs); this one waits to lead. */
  outcome: 'reconnect' | 'refresh' | 'wait_online' | 'wait_visible' | 'wait_leader' | Terminal;
}

export interface Update<T = unknown> {
  topic: string;
  /** The topic's sequence number: +1 per update, no gaps on the server. */
  seq: number;
  data: T;
  /** The epoch of the socket the update arrived on. */
  epoch: number;
}

/** The kinds of diagnostic event. */
export type EventName = 'dial' | 'open' | 'close' | 'ping' | 'watchdog' | 'connect-timeout' | 'stale' | 'foreign' | 'subscribe'
  | 'subscribed' | 'unsubscribed' | 'subscribe-timeout' | 'reconnect' | 'reconnect-wait' | 'reconnect-cancelled' | 'backoff-reset'
  | 'offline' | 'online' | 'request-timeout' | 'response-dropped' | 'bad-frame' | 'server-error' | 'authenticated'
  | 'token-failed' | 'ended' | 'stop' | 'error' | 'send-failed' | 'close-failed' | 'continuity-lost' | 'topic-error'
  | 'welcome' | 'probe' | 'clock-jump' | 'degraded' | 'offline-banner' | 'queued' | 'resend' | 'transport' | 'reprobe'
  | 'reprobe-failed' | 'send-stall' | 'leader' | 'follower' | 'tabs';

/**
 * Updates of a topic the client will never deliver (stage 7): the server no
 * longer had from..to. to is null when the end is unknown (reset: the
 * server's history for the topic was reset; the client goes on from the new
 * stream's start).
 */
export interface ContinuityLost {
  topic: string;
  from: number;
  to: number | null;
  reset: boolean;
}

/**
 * A subscribe the server refused. A transient error (unknown_topic, too_many_topics, unavailable,
 * internal, timeout, rate_limited) is asked for again at the subscribe timeout, and READY waits for
 * it; any other code (forbidden, invalid_topic, too_many_subscriptions, the server application's own)
 * is final for this connection: the topic is not asked for again on it, it holds READY (state().refused)
 * until the page gives it up, and the next connection asks again.
 */
export interface TopicError {
  topic: string;
  /** The server's code: forbidden, unavailable, ..., or the server application's own. */
  code: string;
  /** The server's words for it (e.g. an Authorize hook's message), at most 256 bytes; may be empty. */
  message: string;
}

/** One topic's accounting since connect. */
export interface TopicStats {
  topic: string;
  /** The last seq delivered (0: none yet). */
  cursor: number;
  /** The server's stream the cursor belongs to. */
  stream: string;
  subscribed: boolean;
  delivered: number;
  /** Of them, sent as a replay after a reconnect. */
  replayed: number;
  /** Updates at or below the cursor: dropped at stage 7, delivered (twice) before. */
  duplicates: number;
  gaps: number;
  /** Updates skipped and never delivered (known ranges). */
  lost: number;
}

/** A diagnostic event for logs (never the server's text). */
export interface ClientEvent {
  kind: EventName;
  detail: string;
  socket: number;
  /** For kind "reconnect": the delay chosen, in milliseconds. */
  delayMs: number;
}

export interface Stats {
  dials: number; opens: number; closes: number; pings: number;
  watchdogFired: number; staleEvents: number; foreignEvents: number;
  subscribesSent: number; updates: number; lastSeq: number;
  /** Skips in any topic's seq (on one socket, across a reconnect, or a continuity loss), and the updates they lost for good. */
  seqGaps: number; missedUpdates: number;
  /** Updates at or below their topic's cursor: delivered anyway (before stage 7) or dropped (stage 7). */
  duplicates: number; duplicatesDropped: number;
  /** Updates delivered from a replay, and ContinuityLost events. */
  replayed: number; continuityLost: number;
  droppedResponses: number; badFrames: number; serverErrors: number;
  authenticated: number; tokensRequested: number; tokenRefreshes: number; tokenFailures: number; records: number;
  /** In-band refreshes the server took, and those that failed (the 4001 at expiry follows the last). */
  refreshes: number; refreshFailures: number;
  /** Times READY was reached, and reached again after losing it. */
  readyCount: number; recoveries: number;
  /** Time without READY between two READYs, over the last 256 recoveries. */
  recoveryP50Ms: number; recoveryP99Ms: number;
  /** Reconnects that waited out a server's retry-after (a reconnect slot). */
  retryAftersHonoured: number;
  /** Welcome frames (connections the server said it serves); probes sent and answered (stage 6+). */
  welcomes: number; probes: number; probesAnswered: number;
  /** Stage 8: timers that fired far late, sockets closed for send stalls, HTTP probes, moves back to WebSocket. */
  clockJumps: number; sendStalls: number; httpProbes: number; moves: number;
  /** Requests this (follower) tab forwarded to the leader; queued requests sent again with their keys. */
  forwarded: number; resent: number;
}

/** A user's first connection joined a topic (cluster-wide), or its last left it. */
export interface PresenceEvent {
  topic: string;
  event: 'join' | 'leave';
  user: string;
}

/** Who is subscribed to a topic (presence()): users sorted by id, at most the server's bound (truncated then). */
export interface PresenceResult {
  topic: string;
  users: { user: string; conns: number }[];
  total: number;
  truncated: boolean;
}

export interface ConnectOptions {
  /** ws:// or wss:// URL. Default: /ws on the page's host. */
  url?: string;
  /** Several servers (instead of url): the first, then the next one on every reconnect, in turn. At most 16. */
  urls?: string[];
  /** Demo stage 0..8; each adds one fix. Default 8 (all fixes, the library's defaults). */
  stage?: number;
  /** A topic to subscribe to from the start: READY waits for its "subscribed". Default none: the client subscribes to nothing until subscribe() asks, and READY waits for the server's welcome. */
  topic?: string;
  /** "session": keep each topic's cursor in sessionStorage so a reload resumes too (stage 7). */
  resume?: 'session' | false;
  /** Stage 7: updates the server could no longer replay. */
  onContinuityLost?: (l: ContinuityLost) => void;
  /** A subscribe the server refused. */
  onTopicError?: (e: TopicError) => void;
  /** Stage 6: reconnect attempts in one run of failures before "gave_up". Default 0: unbounded. */
  budget?: number;
  /** Stage 6: how long one run of failures may last before "gave_up", in ms. Default 0: unbounded. */
  windowMs?: number;
  /** A request's timeout (stage 1+). Default 5000. */
  requestTimeoutMs?: number;
  /** How long after open the first server ping may take (stage 2+); later, two server-announced intervals. Default 3000. */
  firstPingTimeoutMs?: number;
  /** How long to wait for "subscribed" before subscribing again (stage 4+). Default 2000. */
  subscribeTimeoutMs?: number;
  /** A socket not open by then is a failed attempt. Default 10000. */
  connectTimeoutMs?: number;
  /** Full jitter backoff (stage 5+): uniform in [0, min(cap, base * 2^attempt)). Defaults 1000 and 30000. */
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** READY this long resets the backoff (stage 5+). Default 5000. */
  cooldownMs?: number;
  /**
   * Called before every dial for the ticket sent in the first frame (never
   * in the URL), and (stage 6+) late in each ticket's life for the in-band
   * refresh sent on the live connection. force: the server said the last
   * one expired, or it is about to; return a fresh one, not a cached one.
   * A throw or a rejection is a failed attempt (a failed refresh: the
   * connection ends 4001 at expiry and the client dials again).
   */
  token?: (opts: { force: boolean }) => string | Promise<string>;
  /** One record per reconnect decision. */
  onRecord?: (r: ReconnectRecord) => void;
  /**
   * Stage 8: the transports to use, the preferred first. Default ['websocket', 'http']
   * at stage 8 (after 3 WebSocket attempts that never see a first ping, and a plain
   * GET <base>/probe that answers, the client goes on over HTTP), ['websocket'] before.
   */
  transports?: Transport[];
  /** Stage 8: how often a client on HTTP tries WebSocket again (and moves back with no gap), in ms. Default 600000. */
  reprobeMs?: number;
  /** Stage 8: no reconnect while the page is hidden (stage 6's rule). Default false: hidden tabs keep their connection. */
  pauseWhenHidden?: boolean;
  /** Stage 8: bytes queued on the socket that do not drain for this long make the client probe, then reconnect (4409). Default 5000. */
  sendStallMs?: number;
  /** Stage 8: state.degraded after this long without READY, in ms. Default 3000. */
  degradedMs?: number;
  /** Stage 8: state.offline after this long without READY, in ms. Default 30000. */
  offlineMs?: number;
  /** Every request and publish made while not READY waits for READY (up to its timeout) with an idempotency key. Default false (per call: { queue }). */
  queue?: boolean;
  /**
   * Tell the server, at each READY, how long getting it took, in how many attempts, why it was
   * lost and over which transport (fixed names and numbers: no token, topic or payload), for the
   * operators' metrics. Default true.
   */
  reports?: boolean;
  /**
   * With a token hook (stage 6+): late in each token's life, ask the hook for a fresh one and send
   * it on the live connection (no reconnect). Default true; false: the connection ends with the
   * server's 4001 at each token's expiry and the client dials again with a fresh token.
   */
  inBandRefresh?: boolean;
  /**
   * Share one connection between the tabs of this origin that use this URL (Web Locks elect
   * a leader, a BroadcastChannel carries the rest). Default true at stage 8, false before.
   */
  tabs?: boolean;
  /**
   * Open the first socket while the wasm loads (see preconnect()), so its
   * handshake is off the way to READY. Default true; false: connect()
   * opens none itself (one the page opened with preconnect() is still
   * taken).
   */
  preconnect?: boolean;
  /** Presence events of the topics subscribed with { presence: true }. */
  onPresence?: (p: PresenceEvent) => void;
  /** Where wsready.wasm and wasm_exec.js live. Default: beside wsready.js (bundlers emit them there). */
  base?: URL | string;
  /** The wasm's URL, for a CDN. Default: new URL('./wsready.wasm', import.meta.url). */
  wasmURL?: URL | string;
  /** Go's wasm_exec.js, for a CDN. Default: new URL('./wasm_exec.js', import.meta.url). */
  wasmExecURL?: URL | string;
  onState?: (s: State) => void;
  /** Every update of every subscribed topic (u.topic says which), as the Go client's OnUpdate; subscribe() also calls its own onUpdate for its topic. */
  onUpdate?: (u: Update) => void;
  onEvent?: (e: ClientEvent) => void;
}

export type ErrorName = 'NotReady' | 'RequestTimeout' | 'ConnectionClosed' | 'ServerError' | 'InvalidRequest' | 'Aborted' | 'Timeout' | 'SessionEnded' | 'TopicRefused';

/** What on(kind, fn) listens to. */
export interface EventMap {
  state: State;
  update: Update;
  event: ClientEvent;
  record: ReconnectRecord;
  continuityLost: ContinuityLost;
  topicError: TopicError;
  presence: PresenceEvent;
}
export type EventKind = keyof EventMap;

export interface RequestOptions {
  /** This request's timeout; default the client's (5 s). RequestTimeout when it passes. */
  timeoutMs?: number;
  /** Aborting settles the request as Aborted (never sent if it was not yet; a late response is dropped). */
  signal?: AbortSignal;
  /**
   * Made while not READY, wait for READY (up to timeoutMs) instead of rejecting with NotReady,
   * and go out with an idempotency key; lost with its connection, it is sent again with the same key.
   * Default: the connect option queue (false).
   */
  queue?: boolean;
  /** The idempotency key (1 to 64 of A-Z a-z 0-9 - _); default with queue: one drawn at random. */
  key?: string;
}

export interface SubscribeOptions {
  /** Ask for a replay of what followed this seq. */
  since?: number;
  /** Receive the topic's join/leave events (onPresence, on('presence')). */
  presence?: boolean;
}

/**
 * A rejected request.
 * - NotReady: never sent; always safe to retry.
 * - RequestTimeout: outcome unknown; retry only if idempotent.
 * - ConnectionClosed: outcome unknown; retry only if idempotent.
 * - ServerError: the server refused it; `code` says why.
 * - InvalidRequest: never sent: its frame would exceed the 64 KiB the server takes (which would close the
 *   connection, failing every request on it).
 * - Aborted: its AbortSignal fired; never sent if it had not been yet.
 * - Timeout, SessionEnded: from ready() and subscribed().
 * - TopicRefused: from subscribed() and ready(): the server refused the subscribe to `topic`; `code`
 *   says why, `serverMessage` in the server's words.
 */
export declare class WsreadyError extends Error {
  name: ErrorName;
  /** With SessionEnded: the terminal state. */
  ended?: Terminal;
  code?: string;
  /** With TopicRefused: the refused topic. */
  topic?: string;
  /** With TopicRefused: the server's message for the refusal (may be empty). */
  serverMessage?: string;
  readonly safeToRetry: boolean;
}

export interface Client {
  /** The version the loaded wasm reports. */
  readonly version: string;
  /**
   * Sends a request; params are JSON-encoded. Never throws: it rejects with
   * a TypeError for an empty method or params JSON cannot encode (BigInt,
   * a cycle, a function), and with a WsreadyError otherwise (NotReady after
   * close()).
   */
  request<T = unknown>(method: string, params?: unknown, options?: RequestOptions): Promise<T>;
  /**
   * Calls onUpdate with every update of topic from now on, across
   * reconnects (stage 7: without gaps or duplicates). since asks for a
   * replay of what followed that seq. Throws a TypeError for an invalid
   * topic name (the wasm checks it; the message states the rule). Returns a
   * function that unsubscribes.
   */
  subscribe<T = unknown>(topic: string, onUpdate: (u: Update<T>) => void, options?: SubscribeOptions): () => void;
  /**
   * Resolves once the server has taken topic's subscribe, so what is
   * published after it is delivered (at once if it already has). Rejects
   * with TopicRefused (err.code: forbidden, too_many_subscriptions, ...;
   * the subscription stands and is asked for again on the next connection
   * until subscribe()'s function is called), SessionEnded, Aborted when
   * that function is called first, Timeout after timeoutMs, and a TypeError
   * for a topic subscribe() has not asked for.
   */
  subscribed(topic: string, options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Appends data (JSON-encoded) to topic; resolves with its seq. Rejects
   * like request(), and with a TypeError for an invalid topic name (the
   * wasm checks it; the message states the rule); ServerError codes:
   * forbidden (publishing is off, or the topic is the server's),
   * too_many_topics, unavailable.
   */
  publish(topic: string, data: unknown, options?: RequestOptions): Promise<number>;
  /** Who is subscribed to topic (the reserved request wsready.presence); rejects like request(). */
  presence(topic: string, options?: RequestOptions): Promise<PresenceResult>;
  /** Each topic's cursor and counts, the service topic first. */
  topics(): TopicStats[];
  /**
   * Resolves at READY; rejects with Timeout after timeoutMs, SessionEnded (err.ended) on a terminal
   * state, or at once with TopicRefused (err.topic, err.code) while the server refuses a topic this
   * client asked for: READY waits until subscribe()'s function gives it up.
   */
  ready(options?: { timeoutMs?: number }): Promise<void>;
  /** Adds a listener beside the constructor's callbacks; returns a function that removes it. */
  on<K extends EventKind>(kind: K, fn: (v: EventMap[K]) => void): () => void;
  off<K extends EventKind>(kind: K, fn: (v: EventMap[K]) => void): void;
  state(): State;
  stats(): Stats;
  /** Starts a fresh session (fresh budget and window), also after a terminal state; not after close(). */
  reconnect(): void;
  /**
   * Closes every socket with 1000 and rejects pending requests with
   * ConnectionClosed. Resolves once everything is closed; calling it again
   * returns the same promise.
   */
  close(): Promise<void>;
}

export interface LoadOptions {
  base?: URL | string; wasmURL?: URL | string; wasmExecURL?: URL | string;
  /** The wasm already compiling (e.g. WebAssembly.compileStreaming(fetch(...)) in an inline script in the page's head): used instead of a fetch; if it rejects, the wasm is fetched as usual. */
  module?: WebAssembly.Module | Promise<WebAssembly.Module>;
}
/** Loads the wasm once (connect calls it). Rejects with "unsupported environment" in Node.js, or without WebAssembly and a global WebSocket. */
export declare function load(opts?: LoadOptions | URL | string): Promise<unknown>;
/** This package's version. */
export declare const version: string;
export declare function defaultURL(): string;
export declare function connect(opts?: ConnectOptions): Promise<Client>;
/**
 * Opens the WebSocket the page's first connect() will dial first (url,
 * default defaultURL()), now, while the wasm loads: its handshake is off
 * the way to READY. connect() takes it and replays its events (a close
 * too: the first attempt's outcome, its retry-after counted from when it
 * came; a close over 1 s old without one is not replayed, the client
 * dials afresh). It is closed (1000) if not taken within PRECONNECT_MS, if
 * connect() dials another URL or over HTTP first, or once the tab this one
 * follows is READY. opts.tabs: connect() will share its connection with
 * the other tabs (stage 8): then it opens nothing while another tab holds
 * the connection, and holds the tabs' lock until connect() asks for it
 * (another tab's client asking first gets it; this socket is dropped).
 * Returns whether it set out to open one (false: one already is,
 * connect() was called already, no WebSocket here, or Node.js; with tabs
 * the lock decides later). Throws a TypeError for a URL that is not ws://
 * or wss://, or a tabs that is not a boolean.
 */
export declare function preconnect(url?: string, opts?: { tabs?: boolean }): boolean;
/** How long a preconnected socket waits for connect(): 5000 ms. */
export declare const PRECONNECT_MS: number;
