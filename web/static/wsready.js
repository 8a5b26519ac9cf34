// wsready: the browser client, Go compiled to WebAssembly, as an ES module.
//
//   import { connect } from './wsready.js';
//   const c = await connect({ stage: 5, onState: s => console.log(s.ready) });
//   const r = await c.request('echo', { hello: 'world' });
//
// See wsready.d.ts for the types and the README for the full API.

let loading;

// Timing marks (User Timing: performance.mark, each named 'wsready:...'),
// so a page or a test sees where the time to READY goes: 'load' (load()
// starts), 'wasm-exec' (wasm_exec.js is in), 'wasm-response' (the wasm's
// response headers), 'instantiated' (compiled and instantiated),
// 'go-started' (the Go program registered its API), then for the page's
// first connect(): 'connect', 'ticket-asked' and 'ticket' (the first token
// hook call and its answer), 'event:<kind>' (the first of each of the
// client's events: dial, open, ping, authenticated, subscribed...) and
// 'ready' (the first READY). Each name at most once and nothing after that
// READY, nor for a later connect(): a page holds a few dozen marks at most.
const mark = (name) => {
  try { globalThis.performance?.mark?.(`wsready:${name}`); } catch { /* no User Timing: no marks */ }
};
let connectMarked = false; // the page's first connect() has taken the marks

// The literal new URL('./file', import.meta.url) form lets bundlers (Vite,
// webpack) find, emit and rewrite these two files.
const defaultWasmURL = () => new URL('./wsready.wasm', import.meta.url);
const defaultWasmExecURL = () => new URL('./wasm_exec.js', import.meta.url);

/**
 * Loads wasm_exec.js and wsready.wasm once; later calls share the promise.
 * opts: { wasmURL, wasmExecURL } to load them from elsewhere (a CDN), or a
 * base URL (the directory holding both); module: the wasm already being
 * compiled (a WebAssembly.Module or a promise of one, e.g. from
 * WebAssembly.compileStreaming in an inline script in the page's head, so
 * the compile starts before any module script runs), used instead of
 * fetching it; if that promise rejects, the wasm is fetched as usual.
 */
export function load(opts = {}) {
  if (opts instanceof URL || typeof opts === 'string') opts = { base: opts };
  if (!loading) {
    loading = (async () => {
      mark('load');
      const node = globalThis.process?.versions?.node;
      if (node && typeof document === 'undefined') {
        throw new Error(`wsready: unsupported environment: Node.js ${node}. This package runs in browsers (and web workers); in Go servers use github.com/wsready/wsready/client/native`);
      }
      if (typeof WebAssembly === 'undefined' || typeof globalThis.WebSocket === 'undefined') {
        throw new Error('wsready: unsupported environment: it needs WebAssembly and a global WebSocket');
      }
      // The first Web Locks call of a page waits for the browser's lock
      // manager (about 50 ms in a fresh headless Chromium, measured): asked
      // now, a query (it takes no lock) pays that while the wasm compiles,
      // and stage 8's election, right after connect(), does not.
      globalThis.navigator?.locks?.query?.().catch(() => {});
      const base = opts.base !== undefined ? new URL(opts.base, globalThis.location?.href) : undefined;
      const execURL = opts.wasmExecURL ?? (base ? new URL('wasm_exec.js', base) : defaultWasmExecURL());
      const url = opts.wasmURL ?? (base ? new URL('wsready.wasm', base) : defaultWasmURL());
      // The wasm is fetched and compiled (streaming: compiled as its bytes
      // arrive) while wasm_exec.js is imported, not after: compiling needs
      // no imports, only instantiating does.
      const fetchAndCompile = async () => {
        const resp = fetch(url).then((r) => { mark('wasm-response'); return r; });
        try {
          return await WebAssembly.compileStreaming(resp);
        } catch {
          // A server without application/wasm: a plain fetch, then compile.
          const r = await fetch(url);
          if (!r.ok) throw new Error(`wsready: cannot load ${url}: HTTP ${r.status}`);
          return WebAssembly.compile(await r.arrayBuffer());
        }
      };
      const given = opts.module;
      const notModule = 'wsready: load: module must be a WebAssembly.Module or a promise of one';
      if (given !== undefined && !(given instanceof WebAssembly.Module) && typeof given?.then !== 'function') throw new TypeError(notModule);
      const compiled = given === undefined ? fetchAndCompile()
        // A rejected promise (the page's early fetch or compile failed) is
        // not the end: the wasm is fetched as usual. A promise of anything
        // but a Module is the page's mistake: said so.
        : Promise.resolve(given).then((m) => m, fetchAndCompile).then((m) => {
          if (!(m instanceof WebAssembly.Module)) throw new TypeError(notModule);
          return m;
        });
      compiled.catch(() => {}); // awaited below; not unhandled while wasm_exec.js loads
      if (!globalThis.Go) await import(/* @vite-ignore */ String(execURL));
      mark('wasm-exec');
      const go = new globalThis.Go();
      const registered = new Promise((resolve) => { globalThis.__wsreadyLoaded = resolve; });
      const instance = await WebAssembly.instantiate(await compiled, go.importObject);
      mark('instantiated');
      go.run(instance); // resolves when the Go program exits; it does not
      await registered;
      goFrameIn(instance.exports);
      mark('go-started');
      return globalThis.__wsready;
    })();
    loading.catch(() => { loading = undefined; });
  }
  return loading;
}

// The socket preconnect() opened, until connect()'s client takes it for its
// first dial or it is dropped: { url, ws, events, timer, unlock, released }.
let warm;
let connectCalled = false; // preconnect() is for the page's first connect() only

/** How long a preconnected socket waits for connect() before it is closed. */
export const PRECONNECT_MS = 5000;

/** At most this many events (its open, the server's frames, its close) are kept for a preconnected socket; one more spoils it. */
const PRECONNECT_EVENTS = 32;

// dropWarm closes the preconnected socket w (if it is still the one) with
// 1000, lets its tabs' lock go and forgets it.
const dropWarm = (w, reason) => {
  if (warm === w) warm = undefined;
  clearTimeout(w.timer);
  releaseWarmLock(w);
  if (w.ws) {
    w.ws.onopen = w.ws.onmessage = w.ws.onclose = null;
    try { w.ws.close(1000, reason); } catch { /* already closed */ }
  }
};

// releaseWarmLock lets the tabs' lock preconnect() took go (or, still
// asked for, go as soon as it comes): the client's own request, made next,
// takes it.
const releaseWarmLock = (w) => {
  w.released = true;
  clearTimeout(w.watch);
  w.unlock?.();
  w.unlock = undefined;
};

// takeWarmLock is the client's first request for the tabs' lock, with
// navigator.locks.request's signature and answers (a promise that settles
// once the lock is let go, or rejects if another tab steals it): the lock
// preconnect() holds, or has asked for, is handed to cb, and held until
// the promise cb returns resolves. No second request: no IPC round trip,
// and no moment between this lock's release and the client's request for
// another tab to take it. If another tab holds it, or preconnect() asked
// for none, the client's request is made as usual.
const takeWarmLock = (name, opts, cb) => {
  const locks = globalThis.navigator.locks;
  const w = warm;
  if (!w || w.released || !w.lock || `wsready:${w.url}` !== name) {
    if (w) releaseWarmLock(w);
    return locks.request(name, opts, cb);
  }
  const held = w.unlock;
  w.unlock = undefined; // the client's now: dropping the socket does not let it go
  releaseWarmLock(w);
  if (held) {
    held(cb(w.granted));
    return w.lock;
  }
  w.handed = (lock) => (lock ? cb(lock) : (w.queued = locks.request(name, opts, cb), undefined));
  return w.lock.then(() => w.queued);
};

/** A close a preconnected socket heard longer ago than this, with no retry-after, is not replayed: the client dials afresh. */
const STALE_CLOSE_MS = 1000;

/**
 * Opens the WebSocket the page's first connect() will use, now, while the
 * wasm downloads and compiles: the socket's handshake (and the server's
 * first ping) are off the way to READY; on a 40 ms link that is one round
 * trip. url: the one connect() will dial first (default defaultURL()).
 * Nothing is sent on it: the client sends its auth and hello once it takes
 * it, and replays what came meanwhile (its open, the server's frames) in
 * order; if it closed meanwhile, that close is the first attempt's (a
 * retry-after counted from when it came), unless it came over
 * STALE_CLOSE_MS before with no retry-after: then the client dials
 * afresh. It is closed (1000) and forgotten if connect() has not taken it
 * within PRECONNECT_MS, if connect() dials another URL or over HTTP first,
 * if more than a few frames came before it was taken, or once the tab
 * this one follows is READY; connect() then dials as it would have.
 *
 * opts.tabs: true when connect() will share its connection with the other
 * tabs (tabs, stage 8). Then it opens nothing if another tab of this
 * browser holds the connection for url, and holds the tabs' lock itself
 * until connect() asks for it, so a tab opened meanwhile does not open one
 * too; another tab's client asking for the lock meanwhile gets it (this
 * socket is dropped).
 *
 * Returns whether it set out to open one: false when one already is,
 * connect() was called already, there is no WebSocket, or this is Node.js
 * (where connect() fails). With tabs, whether the lock lets it is known
 * only later.
 */
export function preconnect(url, opts = {}) {
  if (typeof globalThis.WebSocket !== 'function' || typeof document === 'undefined' && globalThis.process?.versions?.node) return false;
  if (url === undefined) url = defaultURL();
  if (typeof url !== 'string' || !/^wss?:\/\//.test(url)) throw new TypeError('wsready.preconnect: url must be a ws:// or wss:// URL');
  if (opts.tabs !== undefined && typeof opts.tabs !== 'boolean') throw new TypeError('wsready.preconnect: tabs must be true or false');
  if (warm !== undefined || connectCalled) return false;
  const w = { url, events: [] };
  warm = w;
  w.timer = setTimeout(() => dropWarm(w, 'preconnect unused'), PRECONNECT_MS);
  const dial = () => {
    if (warm !== w) return;
    try { w.ws = new globalThis.WebSocket(url); } catch { dropWarm(w); return; }
    mark('preconnect');
    w.keep = (e) => {
      if (!w.taken && w.events.length >= PRECONNECT_EVENTS) { dropWarm(w, 'preconnect unused'); return; }
      if (e.type === 'open') mark('preconnect-open');
      w.events.push(e);
    };
    w.ws.onopen = w.ws.onmessage = w.ws.onclose = w.keep;
  };
  const locks = globalThis.navigator?.locks;
  if (!opts.tabs || typeof locks?.request !== 'function') {
    dial();
    return true;
  }
  // The tabs' lock, as wasm/tabs.go names it. Not to be had: another tab
  // leads, and this one will follow it without a socket of its own. Held
  // until connect() asks for it; meanwhile another tab's client asking
  // for it (a tab opened at the same time, whose wasm was quicker) gets it
  // within WATCH_MS: that tab leads, and this one drops its socket and
  // will follow it (the other tabs cannot hear a leader in this one
  // before its client runs).
  const name = `wsready:${url}`;
  const WATCH_MS = 100;
  w.lock = locks.request(name, { ifAvailable: true }, (lock) => {
    if (!lock) dropWarm(w, 'preconnect unused');
    w.granted = lock;
    if (w.handed) { // the client's (takeWarmLock)
      if (lock) dial();
      return w.handed(lock);
    }
    if (!lock || warm !== w) return undefined;
    dial();
    if (w.released) return undefined; // connect() has asked for it already
    return new Promise((resolve) => {
      w.unlock = resolve;
      const watch = () => {
        w.watch = undefined;
        locks.query().then((q) => {
          if (w.unlock !== resolve) return; // let go meanwhile
          if (q.pending?.some((l) => l.name === name)) dropWarm(w, 'preconnect unused');
          else w.watch = setTimeout(watch, WATCH_MS);
        }, () => {});
      };
      w.watch = setTimeout(watch, WATCH_MS);
    });
  });
  w.lock.catch(() => {
    // The lock was stolen (another tab found none leading): drop the
    // socket, that tab leads. Or no Web Locks to be had here: dial without
    // (a client it was handed to hears the same rejection).
    if (warm !== w) return;
    if (w.granted) dropWarm(w, 'preconnect unused');
    else dial();
  });
  return true;
}

// dataDecoder decodes an update's data (onUpdate): one decoder for the module.
const dataDecoder = new TextDecoder();

// frameOnly wraps a socket's message handler (the client's, once per
// socket), so Go reads no event object: a text frame is written into the
// wrapper's bytes as UTF-8 and the handler is handed its byte count (Go
// copies it out during the call, so every socket shares one buffer); a
// frame that does not fit (over 64 KiB, the most the server sends: the
// client then refuses it, as before) goes as its string, a binary frame
// as undefined.
//
// Faster still, the wasm's export (wasm/export.go): Go sets the handler's
// sink (its socket's number) and resume, and the frame is written into
// Go's own memory (wsreadyFrameBuffer's 64 KiB) and handed over by a plain
// call of wsreadyFrame, no callback; it answers 0 (not taken: the callback
// carries it), 1 (taken) or 2 (taken, and Go's goroutines have work: the
// no-op callback resume lets them run).
const frameBytes = new Uint8Array(64 * 1024);
const frameEncoder = new TextEncoder();
let goFrame; // the instance's wsreadyFrame, once loaded
let goMem; // its memory
let goFrameAt = 0; // wsreadyFrameBuffer's address
let goFrameView; // a view of those 64 KiB, made again when the memory grows (its buffer is replaced)
// The frame Go is stepping when it is ASCII: an update's data in it comes to
// onUpdate as its offset (at), and is a substring of it.
let frameText;
const goFrameIn = (exports) => {
  if (typeof exports?.wsreadyFrame !== 'function' || typeof exports.wsreadyFrameBuffer !== 'function' || !(exports.mem instanceof WebAssembly.Memory)) return;
  goMem = exports.mem;
  goFrameAt = exports.wsreadyFrameBuffer();
  goFrame = exports.wsreadyFrame;
};
const frameOnly = (onmessage) => {
  const h = (e) => {
    const d = e.data;
    if (typeof d !== 'string') return onmessage(undefined);
    if (h.sink > 0 && goFrame) {
      if (goFrameView?.buffer !== goMem.buffer) goFrameView = new Uint8Array(goMem.buffer, goFrameAt, frameBytes.length);
      const r = frameEncoder.encodeInto(d, goFrameView);
      if (r.read === d.length) {
        const text = r.written === d.length; // ASCII: an offset in bytes is one in characters
        if (text) frameText = d;
        const k = goFrame(h.sink, r.written, text ? 1 : 0);
        frameText = undefined;
        if (k === 2) h.resume();
        if (k !== 0) return undefined;
      }
    }
    const r = frameEncoder.encodeInto(d, frameBytes);
    return onmessage(r.read === d.length ? r.written : d);
  };
  h.bytes = frameBytes;
  return h;
};

// takeWarm is the client's first dial: over WebSocket to url, the
// preconnected socket, or undefined when nothing fits (the client then
// opens its own). A first dial over HTTP calls it with no url: the socket
// is dropped. The events so far (and any until then) are replayed to the
// client's handlers in order in a task of their own, which then take
// over: after connect() has resolved to the page, whose callbacks should
// not hear of READY before it holds its client (the socket's own events
// always came in later tasks). Not if the client let the socket go first
// (its release() unset the handlers). A socket that closed meanwhile is
// taken too: its close (a refused handshake, the server's 1013 and its
// retry-after) is the first attempt's outcome, as if the client had
// dialled it.
const takeWarm = (url, onopen, onmessage, onclose) => {
  const w = warm;
  if (!w) return undefined;
  if (w.url !== url || !w.ws) { // another URL, over HTTP, or not dialled yet (the tabs' lock still asked for)
    dropWarm(w, 'preconnect unused');
    return undefined;
  }
  // A close heard a while ago: a retry-after in it counts from then (the
  // client waits only what is left of it); without one it is old news,
  // and the client dials afresh rather than back off from it.
  const closed = w.events.find((e) => e.type === 'close');
  if (closed) {
    const ago = performance.now() - closed.timeStamp;
    const m = /(^|[ ;,])retry-after-ms=(\d+)/.exec(closed.reason);
    if (!m && ago > STALE_CLOSE_MS) {
      dropWarm(w, 'preconnect unused');
      return undefined;
    }
    if (m) {
      const at = m.index + m[1].length;
      const left = `retry-after-ms=${Math.max(1, Number(m[2]) - Math.round(ago))}`;
      const reason = closed.reason.slice(0, at) + left + closed.reason.slice(m.index + m[0].length);
      w.events[w.events.indexOf(closed)] = { type: 'close', code: closed.code, reason };
    }
  }
  warm = undefined;
  w.taken = true; // w.keep keeps every event now: the client owns the socket
  clearTimeout(w.timer);
  releaseWarmLock(w);
  setTimeout(() => {
    if (w.ws.onopen !== w.keep) return;
    w.ws.onopen = onopen;
    w.ws.onmessage = onmessage;
    w.ws.onclose = onclose;
    const on = { open: onopen, message: onmessage, close: onclose };
    for (const e of w.events) {
      if (w.ws.onopen !== onopen) return; // the client let it go (its release() unset them) while this replayed
      on[e.type](e);
    }
  }, 0);
  return w.ws;
};

/**
 * A rejected request (NotReady, RequestTimeout, ConnectionClosed, ServerError,
 * InvalidRequest, Aborted) or ready() (Timeout, SessionEnded).
 */
export class WsreadyError extends Error {
  constructor(name, message, code) {
    super(message);
    this.name = name;
    if (code !== undefined) this.code = code;
  }
  /** NotReady requests were never sent: always safe to retry. */
  get safeToRetry() { return this.name === 'NotReady'; }
}

/**
 * The TopicRefused error for a refusal {topic, code, message}: err.code is
 * the server's code, err.topic the topic, err.serverMessage the server's
 * words; others counts the other refused topics (ready()).
 */
function topicRefused(r, refusals = 1) {
  const more = refusals > 1 ? ` (and ${refusals - 1} more topics)` : '';
  const words = r.message ? `: ${r.message}` : '';
  return Object.assign(new WsreadyError('TopicRefused', `wsready: the server refused the subscribe to ${r.topic} (${r.code}${words})${more}`, r.code),
    { topic: r.topic, serverMessage: r.message ?? '' });
}

/** The default endpoint: /ws on the page's own host. */
export function defaultURL() {
  if (typeof location === 'undefined') throw new TypeError('wsready.connect: url is required outside a page');
  return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
}

// The largest frame the server takes (protocol.MaxFrameBytes): it closes a
// connection that sends a larger one (1009), failing every request on it,
// so a request or publish whose frame would be larger is refused before
// it reaches the wasm, never sent (the Go client measures its frames
// itself). frameTooLarge counts the frame as the wasm would encode it,
// with the longest id, timeoutMs and key: a few bytes over, never under.
const MAX_FRAME_BYTES = 65536;
let utf8;
const frameTooLarge = (what, name, json = '', key) => {
  const fixed = 96 + (key?.length ?? 16); // {"type":...,"id":...,"timeoutMs":...,"key":"..."} and the two field names
  if ((json.length + name.length * 2) * 3 + fixed <= MAX_FRAME_BYTES) return undefined;
  utf8 ??= new TextEncoder();
  // The wasm's encoder escapes < > & U+2028 U+2029 and control characters
  // in a string as \u00XX (six bytes; JSON.stringify writes \n in two, so
  // counting five more for each overcounts those by four).
  const n = fixed + utf8.encode(json).length + utf8.encode(JSON.stringify(name)).length + 5 * (name.match(/[<>&\u2028\u2029\u0000-\u001f]/g)?.length ?? 0);
  if (n <= MAX_FRAME_BYTES) return undefined;
  return new WsreadyError('InvalidRequest', `wsready: the ${what} would be a frame of about ${n} bytes; the server takes at most ${MAX_FRAME_BYTES}`);
};

/** The package's version (the wasm's own, once loaded, is client.version). */
export const version = '0.5.0';

/** Starts a client. It connects and reconnects in the background. */
export async function connect(opts = {}) {
  if (opts.preconnect !== undefined && typeof opts.preconnect !== 'boolean') throw new TypeError('wsready.connect: preconnect must be true or false');
  // The first socket opens while the wasm loads (see preconnect), unless
  // the page opened it already, says not to, or dials over HTTP first.
  if (opts.preconnect !== false && !connectCalled && (opts.transports?.[0] ?? 'websocket') === 'websocket') {
    try {
      const url = opts.urls?.[0] ?? opts.url ?? defaultURL();
      if (typeof url === 'string' && /^wss?:\/\//.test(url)) preconnect(url, { tabs: opts.tabs ?? (opts.stage ?? 8) >= 8 });
    } catch { /* options connect() refuses below, once loaded */ }
  }
  connectCalled = true;
  try {
    return await start(opts);
  } catch (e) {
    if (warm) dropWarm(warm, 'preconnect unused'); // no client to take it
    throw e;
  }
}

// start is connect() once its first socket is on its way.
async function start(opts) {
  const api = await load({ base: opts.base, wasmURL: opts.wasmURL, wasmExecURL: opts.wasmExecURL });
  if (opts.token !== undefined && typeof opts.token !== 'function') {
    throw new TypeError('wsready.connect: token must be a function ({ force }) => string | Promise<string>');
  }
  if (opts.urls !== undefined) {
    if (!Array.isArray(opts.urls) || opts.urls.length === 0 || opts.urls.some((u) => typeof u !== 'string')) {
      throw new TypeError('wsready.connect: urls must be a non-empty array of ws:// or wss:// URLs');
    }
    if (opts.url !== undefined) throw new TypeError('wsready.connect: give url or urls, not both');
  }
  if (opts.resume !== undefined && opts.resume !== 'session' && opts.resume !== false) {
    throw new TypeError('wsready.connect: resume must be "session" (keep cursors in sessionStorage) or false');
  }
  if (opts.transports !== undefined && (!Array.isArray(opts.transports) || opts.transports.some((t) => typeof t !== 'string'))) {
    throw new TypeError("wsready.connect: transports must be an array of 'websocket' and 'http'");
  }
  const urls = opts.urls ?? [opts.url ?? defaultURL()];
  // topic (optional) is subscribed from the start and READY includes its
  // acknowledgement; without it the client subscribes to nothing until
  // subscribe() asks, and READY needs the server's welcome.
  const serviceTopic = opts.topic ?? '';
  // resume: "session" keeps each topic's cursor in sessionStorage, so a
  // reload of the page resumes where it was (stage 7).
  const storeKey = opts.resume === 'session' ? `wsready:cursors:${serviceTopic}:${urls[0]}` : undefined;
  let saved;
  if (storeKey) {
    try { saved = globalThis.sessionStorage?.getItem(storeKey) ?? undefined; } catch { saved = undefined; }
  }
  // Each kind of event goes to the constructor's callback and to on() listeners.
  const listeners = { state: new Set(), update: new Set(), event: new Set(), record: new Set(), continuityLost: new Set(), topicError: new Set(), presence: new Set() };
  const topicSubs = new Map(); // topic -> Map of entry -> {presence}
  const refusals = new Map(); // topic -> its last refusal ({topic, code, message}), while subscribed (for subscribed())
  const subscribedChecks = new Set(); // the pending subscribed() promises' checks: giving a topic up runs them (Aborted)
  // Topics this tab gave up while the state named their refusal: until a
  // state that no longer names it, ready() does not fail on it (the wasm
  // takes the unsubscribe in after the call returns).
  const givenUp = new Set();
  let saveTimer;
  const save = () => {
    saveTimer = undefined;
    if (!storeKey || !h || h.error) return;
    try { globalThis.sessionStorage?.setItem(storeKey, h.cursors()); } catch { /* storage full or denied: resume from memory only */ }
  };
  const saveSoon = () => { if (storeKey && saveTimer === undefined) saveTimer = setTimeout(save, 250); };
  const fire = (kind, fn, v) => {
    if (typeof fn !== 'function') return;
    try { fn(v); } catch (e) { console.error(`wsready: a ${kind} listener threw`, e); }
  };
  // The option's callback, then the listeners as they were when the event
  // came (one added or removed by a listener counts from the next); no
  // array made per event when there are none (an update is an event).
  const emit = (kind, cb, v) => {
    fire(kind, cb, v);
    const ls = listeners[kind];
    if (ls.size > 0) for (const fn of [...ls]) fire(kind, fn, v);
  };
  let lastState;
  let h;
  // The marks of the page's first connect(), until its first READY (see mark).
  const marking = !connectMarked;
  connectMarked = true;
  const marked = new Set();
  const markOnce = (name) => {
    if (!marking || marked.has('ready') || marked.has(name)) return;
    marked.add(name);
    mark(name);
  };
  // The token hook as given, marked on its first call and first answer; its
  // result (a string or a promise) is passed on untouched.
  const token = typeof opts.token !== 'function' ? opts.token : (arg) => {
    markOnce('ticket-asked');
    const t = opts.token(arg);
    if (typeof t?.then === 'function') t.then(() => markOnce('ticket'), () => {});
    else markOnce('ticket');
    return t;
  };
  markOnce('connect');
  h = api.connect({
    url: urls[0],
    moreURLs: urls.slice(1).join('\n'),
    topic: opts.topic,
    cursors: saved,
    stage: opts.stage,
    budget: opts.budget,
    windowMs: opts.windowMs,
    requestTimeoutMs: opts.requestTimeoutMs,
    firstPingTimeoutMs: opts.firstPingTimeoutMs,
    subscribeTimeoutMs: opts.subscribeTimeoutMs,
    connectTimeoutMs: opts.connectTimeoutMs,
    backoffBaseMs: opts.backoffBaseMs,
    backoffCapMs: opts.backoffCapMs,
    cooldownMs: opts.cooldownMs,
    transports: opts.transports?.join(','),
    reprobeMs: opts.reprobeMs,
    pauseWhenHidden: opts.pauseWhenHidden,
    sendStallMs: opts.sendStallMs,
    degradedMs: opts.degradedMs,
    offlineMs: opts.offlineMs,
    queue: opts.queue,
    tabs: opts.tabs,
    reports: opts.reports,
    inBandRefresh: opts.inBandRefresh,
    token,
    // The preconnected socket, for the first dial (when that is over
    // WebSocket to urls[0]); a client that will not dial it drops it.
    warm: takeWarm,
    // The tabs' lock preconnect() holds, handed to the client's election.
    warmLock: takeWarmLock,
    // A socket's message handler, given the frame (event.data when a
    // string) instead of the event: one crossing into Go per frame.
    frameOnly,
    onRecord: (r) => emit('record', opts.onRecord, r),
    onState: (s) => {
      lastState = s;
      for (const t of givenUp) if (s.refused?.topic !== t) givenUp.delete(t);
      if (s.ready) markOnce('ready');
      if (s.follower && s.ready && warm) dropWarm(warm, 'preconnect unused'); // another tab leads (READY is its): this one dials nothing
      emit('state', opts.onState, s);
    },
    // An update comes in one call from Go (one crossing of the boundary),
    // its data the n characters at `at` in the frame being stepped
    // (frameText), or else the first n bytes of a buffer Go reuses (no JS
    // string made from Go per update); the page gets {data, epoch, seq,
    // topic}, data parsed from its JSON.
    onUpdate: (topic, seq, epoch, n, bytes, at) => {
      const raw = at >= 0 && frameText !== undefined ? frameText.substring(at, at + n) : dataDecoder.decode(bytes.subarray(0, n));
      let data;
      try { data = JSON.parse(raw); } catch { data = raw; }
      const v = { data, epoch, seq, topic };
      emit('update', opts.onUpdate, v); // every topic's, as the Go client's OnUpdate
      for (const fn of topicSubs.get(topic)?.keys() ?? []) {
        try { fn(v); } catch (e) { console.error('wsready: a subscribe callback threw', e); }
      }
      saveSoon();
    },
    onContinuityLost: (l) => { emit('continuityLost', opts.onContinuityLost, l); saveSoon(); },
    onTopicError: (e) => { if (topicSubs.has(e.topic)) refusals.set(e.topic, e); emit('topicError', opts.onTopicError, e); },
    onPresence: (p) => emit('presence', opts.onPresence, p),
    onEvent: (e) => {
      markOnce(`event:${e.kind}`);
      if (e.kind === 'subscribed' && refusals.size > 0) {
        for (const t of h.topics()) if (t.subscribed) refusals.delete(t.topic); // taken since: the refusal is old news
      }
      emit('event', opts.onEvent, e);
    },
  });
  // A client without the tabs will not ask for the lock: let it go.
  if (warm && !h.error && h.state().tabs !== 'on') releaseWarmLock(warm);
  if (h.error) throw new TypeError(h.error);
  if (storeKey) globalThis.addEventListener?.('pagehide', save);
  let closing;
  let tickets = 0;
  // send starts a request or a publish (start(ticket, timeoutMs, queue,
  // key) calls the handle) and resolves with its raw result: the options
  // checked, then its frame's size (name, its method or topic; json, its
  // params or data), an AbortSignal wired to the ticket, a failure turned
  // into a WsreadyError. Never throws.
  const send = (what, start, { timeoutMs, signal, queue, key }, name, json) => {
    if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
      return Promise.reject(new TypeError(`wsready: ${what} timeoutMs must be a positive whole number`));
    }
    if (queue !== undefined && typeof queue !== 'boolean') return Promise.reject(new TypeError(`wsready: ${what} queue must be true or false`));
    if (key !== undefined && typeof key !== 'string') return Promise.reject(new TypeError(`wsready: ${what} key must be a string`));
    if (signal?.aborted) return Promise.reject(new WsreadyError('Aborted', `wsready: the AbortSignal fired before the ${what} was sent`));
    const big = frameTooLarge(what, name, json, key);
    if (big) return Promise.reject(big);
    const ticket = ++tickets;
    const p = start(ticket, timeoutMs ?? 0, queue, key);
    if (p.error) return Promise.reject(new TypeError(p.error));
    const onAbort = () => h.cancel(ticket);
    signal?.addEventListener('abort', onAbort, { once: true });
    return p.then((v) => {
      signal?.removeEventListener('abort', onAbort);
      if (v.ok) return v.result;
      throw new WsreadyError(v.name, v.message, v.code);
    });
  };
  const client = {
    version: api.version,
    /** Adds a listener; returns a function that removes it. */
    on(kind, fn) {
      if (!(kind in listeners)) throw new TypeError(`wsready: unknown event kind ${JSON.stringify(kind)}; kinds are ${Object.keys(listeners).join(', ')}`);
      if (typeof fn !== 'function') throw new TypeError('wsready: a listener must be a function');
      listeners[kind].add(fn);
      return () => listeners[kind].delete(fn);
    },
    off(kind, fn) { listeners[kind]?.delete(fn); },
    /**
     * Resolves at READY; rejects on timeout, when the session ends, or at
     * once while the server refuses a topic this client asked for
     * (TopicRefused: READY waits until the topic is given up).
     */
    ready({ timeoutMs } = {}) {
      return new Promise((resolve, reject) => {
        let timer;
        const check = (s) => {
          if (s.ready) { done(); resolve(); return true; }
          if (s.ended) { done(); reject(Object.assign(new WsreadyError('SessionEnded', `wsready: the session ended: ${s.ended}${s.endReason ? ` (${s.endCode}: ${s.endReason})` : ''}`), { ended: s.ended })); return true; }
          // A refusal of a topic this tab has just given up is the state
          // from before the wasm took the unsubscribe in: the next state
          // drops it (or names the next refused topic). Another tab's
          // refused topic holds the shared connection's READY too.
          const r = s.refused;
          if (r && !givenUp.has(r.topic)) { done(); reject(topicRefused(r, s.refusals)); return true; }
          return false;
        };
        const done = () => { listeners.state.delete(check); clearTimeout(timer); };
        if (check(h.state())) return;
        listeners.state.add(check);
        if (timeoutMs !== undefined) {
          timer = setTimeout(() => { done(); reject(new WsreadyError('Timeout', `wsready: not READY within ${timeoutMs} ms`)); }, timeoutMs);
        }
      });
    },
    request(method, params, options = {}) {
      // Never throws: every failure is a rejected promise.
      if (typeof method !== 'string' || method === '') {
        return Promise.reject(new TypeError('wsready: request method must be a non-empty string'));
      }
      let json;
      try {
        json = params === undefined ? undefined : JSON.stringify(params);
      } catch (e) {
        return Promise.reject(new TypeError(`wsready: request params cannot be sent as JSON: ${e.message}`));
      }
      if (params !== undefined && json === undefined) {
        return Promise.reject(new TypeError('wsready: request params cannot be sent as JSON'));
      }
      return send('request', (ticket, ms, queue, key) => h.request(method, json, ms, ticket, queue, key), options, method, json)
        .then((result) => JSON.parse(result));
    },
    /**
     * Subscribes onUpdate to topic (stage 7 resumes it without gaps across
     * reconnects); since asks for a replay of what followed that seq;
     * presence: true asks for the topic's join/leave events (onPresence,
     * on('presence')). Returns a function that unsubscribes.
     */
    subscribe(topic, onUpdate, { since, presence } = {}) {
      if (typeof onUpdate !== 'function') throw new TypeError('wsready: subscribe needs an onUpdate function');
      if (since !== undefined && !(Number.isSafeInteger(since) && since >= 0)) throw new TypeError('wsready: since must be a whole number >= 0');
      if (presence !== undefined && typeof presence !== 'boolean') throw new TypeError('wsready: presence must be true or false');
      let entries = topicSubs.get(topic);
      // The topic asks for presence while any of its subscribers does.
      const wanted = () => [...entries.values()].some((e) => e.presence);
      if (!entries) {
        const r = h.subscribe(topic, since, Boolean(presence));
        if (r?.error) throw new TypeError(r.error);
        entries = new Map();
        topicSubs.set(topic, entries);
      }
      const had = entries.size > 0 && wanted();
      const entry = (u) => onUpdate(u); // one entry per call, even for the same function
      entries.set(entry, { presence: Boolean(presence) });
      if (entries.size > 1 && wanted() !== had) h.subscribe(topic, undefined, wanted());
      return () => {
        if (!entries.has(entry)) return;
        const before = wanted();
        entries.delete(entry);
        if (entries.size === 0) {
          topicSubs.delete(topic);
          refusals.delete(topic);
          if (h.state().refused?.topic === topic) givenUp.add(topic);
          h.unsubscribe(topic);
          // No event need follow (the socket may be down): a subscribed()
          // waiting for this topic is told now.
          for (const check of [...subscribedChecks]) check();
        } else if (wanted() !== before) {
          h.subscribe(topic, undefined, wanted());
        }
      };
    },
    /**
     * Resolves once the server has taken topic's subscribe (what follows is
     * delivered; at once if it already has). Rejects with TopicRefused (code:
     * the server's) when the server refuses it, or refused it last (the subscription stands and is
     * asked for again on the next connection: call subscribe()'s function to
     * give it up), SessionEnded on a terminal state, Timeout after timeoutMs,
     * and a TypeError for a topic subscribe() has not asked for.
     */
    subscribed(topic, { timeoutMs } = {}) {
      if (!topicSubs.has(topic)) return Promise.reject(new TypeError(`wsready: subscribed(${JSON.stringify(topic)}): subscribe() to it first`));
      if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) return Promise.reject(new TypeError('wsready: subscribed timeoutMs must be a positive whole number'));
      return new Promise((resolve, reject) => {
        let timer;
        let settled = false;
        const fail = (err) => { done(); reject(err); };
        const check = () => {
          if (settled) return;
          if (h.topics().some((t) => t.topic === topic && t.subscribed)) { done(); resolve(); return; }
          const s = h.state();
          if (refusals.has(topic)) fail(topicRefused(refusals.get(topic)));
          else if (s.ended) fail(Object.assign(new WsreadyError('SessionEnded', `wsready: the session ended: ${s.ended}${s.endReason ? ` (${s.endCode}: ${s.endReason})` : ''}`), { ended: s.ended }));
          else if (!topicSubs.has(topic)) fail(new WsreadyError('Aborted', `wsready: the subscribe to ${topic} was given up`));
        };
        const done = () => { settled = true; subscribedChecks.delete(check); listeners.event.delete(check); listeners.state.delete(check); listeners.topicError.delete(check); clearTimeout(timer); };
        check();
        if (settled) return;
        subscribedChecks.add(check);
        listeners.event.add(check);
        listeners.state.add(check);
        listeners.topicError.add(check);
        if (timeoutMs !== undefined) timer = setTimeout(() => fail(new WsreadyError('Timeout', `wsready: the subscribe to ${topic} was not taken within ${timeoutMs} ms`)), timeoutMs);
      });
    },
    /** Appends data to topic; resolves with the seq the server gave it. */
    publish(topic, data, options = {}) {
      let json;
      try { json = JSON.stringify(data); } catch (e) { return Promise.reject(new TypeError(`wsready: publish data cannot be sent as JSON: ${e.message}`)); }
      if (json === undefined) return Promise.reject(new TypeError('wsready: publish data cannot be sent as JSON'));
      return send('publish', (ticket, ms, queue, key) => h.publish(topic, json, ms, ticket, queue, key), options, typeof topic === 'string' ? topic : '', json)
        .then((result) => JSON.parse(result).seq);
    },
    /**
     * Who is subscribed to topic (the reserved request wsready.presence):
     * resolves with {topic, users: [{user, conns}], total, truncated}.
     */
    presence(topic, options = {}) {
      if (typeof topic !== 'string') return Promise.reject(new TypeError('wsready: presence needs a topic name'));
      return client.request('wsready.presence', { topic }, options);
    },
    /** Each topic's cursor and counts (delivered, replayed, duplicates, lost). */
    topics: () => h.topics(),
    state: () => h.state(),
    stats: () => h.stats(),
    reconnect: () => { if (!closing) h.reconnect(); },
    close() {
      if (storeKey) { save(); globalThis.removeEventListener?.('pagehide', save); }
      if (!closing) closing = Promise.resolve(h.close()).then(() => undefined);
      return closing;
    },
  };
  disposer.register(client, h);
  return client;
}

// A handle's Go callbacks outlive close() (so state() still answers); they
// are released when the page drops the client.
const disposer = new FinalizationRegistry((h) => h.dispose());
