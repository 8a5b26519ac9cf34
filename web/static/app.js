// The stage demo: one client, configured by ?stage=0..8, against the
// server's failure switches. Exposes window.wsreadyDemo for the e2e suite.
import { connect, load } from './wsready.js';

const STAGES = [
  'Naive: online on open, offline on close, reconnect 1 s after close; requests wait forever.',
  'Request registry: every request settles (timeout, rejected on close, typed errors).',
  'Heartbeat: server pings; a watchdog closes a silent socket and reconnects at once (still fooled by late events).',
  'Stale events: only the current socket may change state.',
  'Service readiness: subscribe, resubscribe, and report the service layer.',
  'Reconnection policy: full-jitter backoff, reset after 5 s READY, offline/online aware.',
  'Session contract: every close is classified (1000 ends the session, 4003 is forbidden, 4001 refreshes the token and dials at once, 1013 waits out the retry-after); a budget of 10 attempts and a 2-minute window; terminal states and a Reconnect button.',
  'Resume: stage 6 plus a cursor per topic. After every reconnect (and a reload of this page) the client subscribes with since=cursor and the server replays what it missed: no gap, no duplicate. What the server no longer has is reported as continuity lost, with its range.',
  'Where users are: stage 7 plus the browser as it really is. A blocked WebSocket (try Block WebSocket) falls back to HTTP (Server-Sent Events and POST) after 3 attempts and moves back when it can; the tabs of this page share one connection (open a second tab: one leads, the others follow, and a closed or frozen leader is replaced within about a second); a timer that fires far late (sleep, a frozen tab) probes before it kills, and hidden tabs keep their connection; sends that stop draining (try Deaf) are noticed and the socket replaced (4409); banners say "reconnecting" after 3 s and "offline" after 30 s without READY.',
];

// Stage 6's budget in the demo; the library's default is unbounded.
const STAGE6 = { budget: 10, windowMs: 120000 };

const $ = (id) => document.getElementById(id);

// Until the client's first READY the page draws nothing the client or the
// server reports: each draw is queued, in order, and all are done at once
// at the first READY (or 1 s in, or with an error). Every change drawn
// before then is a style, layout and paint on the main thread, where the
// client's first connection (Go's, and its socket's callbacks) waits
// behind it. What the page records (window.wsreadyDemo) is not held.
let held = [];
function draw(fn) {
  if (held) held.push(fn); else fn();
}
function drawHeld() {
  const q = held;
  held = null;
  for (const fn of q ?? []) {
    try { fn(); } catch (e) { console.error('demo: a held draw threw', e); } // the rest are still drawn
  }
}
const demo = window.wsreadyDemo = {
  stage: null, error: null, state: null, updates: 0, lastUpdateAt: 0, lastSeq: 0,
  log: [], results: [], records: [], client: null, server: null,
  // The page's client id, for tickets (and the Revoke switch).
  clientId: window.demoClientId ?? 'page-' + Math.random().toString(36).slice(2, 10),
  tokensFetched: 0,
  // For the e2e suite: when READY changed ({t, ready}) and when updates came (ms).
  transitions: [], updateTimes: [],
  // Stage 7: continuity losses seen, and the demo topic's published seqs.
  lost: [], published: [],
  // Every feed seq delivered, in order (the e2e suite checks them against
  // the server's); seqsDropped counts entries trimmed from the front.
  seqs: [], seqsDropped: 0,
};

function stageFromURL() {
  const raw = new URLSearchParams(location.search).get('stage');
  if (raw === null || raw === '') return { stage: 5 };
  if (!/^[0-8]$/.test(raw)) return { error: raw };
  return { stage: Number(raw) };
}

// ?reprobeMs=N (stage 8, a whole number of ms) passes the client's
// reprobeMs option through: how often the HTTP transport tries WebSocket
// again (the library's default, 10 minutes, when absent). The browser
// suite shortens it to see the move back.
function reprobeFromURL() {
  const raw = new URLSearchParams(location.search).get('reprobeMs');
  return raw !== null && /^[1-9][0-9]{0,8}$/.test(raw) ? { reprobeMs: Number(raw) } : {};
}

// ?backoffCapMs=N (stage 5 and up, a whole number of ms) caps the
// reconnect backoff (the library's default, 30 s, when absent). The chaos
// soak's pages take the native fleet's 3 s so that a page is READY within
// its 15 s of the last fault healing, as the fleet is.
function backoffFromURL() {
  const raw = new URLSearchParams(location.search).get('backoffCapMs');
  return raw !== null && /^[1-9][0-9]{0,8}$/.test(raw) ? { backoffCapMs: Number(raw) } : {};
}

// ?budget=N and ?windowMs=N (stage 6 and up, whole numbers; 0 is the
// library's default, unbounded) replace the demo's budget of 10 attempts
// and 2-minute window. The chaos soak's pages take 0 for both, as its
// native fleet does: with its 3 s backoff cap, ten failed attempts in a
// row fit in one fault, where the demo's budget is sized for the 30 s cap.
function budgetFromURL() {
  const q = new URLSearchParams(location.search);
  const out = {};
  for (const [key, opt] of [['budget', 'budget'], ['windowMs', 'windowMs']]) {
    const raw = q.get(key);
    if (raw !== null && /^(0|[1-9][0-9]{0,8})$/.test(raw)) out[opt] = Number(raw);
  }
  return out;
}

function renderStageNav(current) {
  const nav = $('stages');
  nav.replaceChildren(...STAGES.map((_, i) => {
    const a = document.createElement('a');
    a.href = `?stage=${i}`;
    a.textContent = `Stage ${i}`;
    if (i === current) { a.className = 'current'; a.setAttribute('aria-current', 'page'); }
    return a;
  }));
}

// setIcon sets the page's SVG icon: at the first READY, not before (see
// index.html), or 3 s after the start (main), or with an error.
function setIcon() {
  const icon = $('icon');
  if (icon.getAttribute('href') !== 'favicon.svg') Object.assign(icon, { type: 'image/svg+xml', href: 'favicon.svg' });
}

function showError(msg) {
  setIcon();
  drawHeld();
  const el = $('error');
  el.hidden = false;
  el.textContent = msg;
  demo.error = msg;
}

function setLight(name, level) {
  $(`l-${name}`).className = `light ${level}`;
  $(`t-${name}`).textContent = level === 'off' ? 'not tracked' : level;
}

function renderState(s) {
  // Page load to READY, from navigation start (the e2e suite reads it).
  if (s.ready && demo.firstReadyMs === undefined) {
    demo.firstReadyMs = Math.round(performance.now());
    setIcon();
  }
  if (!demo.state || demo.state.ready !== s.ready) demo.transitions.push({ t: Date.now(), ready: s.ready });
  demo.state = s;
  draw(() => drawState(s));
  if (s.ready) drawHeld();
}

function drawState(s) {
  setLight('transport', s.transport);
  setLight('protocol', s.protocol);
  setLight('service', s.service);
  $('l-ready').className = `light ${s.ready ? 'up' : 'down'}`;
  $('t-ready').textContent = s.ready ? 'READY' : 'NOT READY';
  $('epoch').textContent = s.epoch;
  $('attempt').textContent = s.attempt;
  $('online').textContent = s.online ? 'online' : 'offline';
  $('ended').textContent = s.ended ? `${s.ended}${s.endCode ? ` (${s.endCode})` : ''}` : 'no';
  $('reconnect').hidden = !s.ended || s.ended === 'stopped';
  $('last-error').textContent = s.lastError ? `${s.lastError.class}: ${s.lastError.message}` : 'none';
  $('via').textContent = s.via === 'http' ? 'HTTP (Server-Sent Events + POST)' : s.via === 'websocket' ? 'WebSocket' : '–';
  $('tab').textContent = s.tabs === 'on' ? (s.leader ? 'leader (holds the connection)' : 'follower (another tab holds it)')
    : s.tabs === 'unsupported' ? 'own connection (no Web Locks or BroadcastChannel here)' : 'own connection';
  renderBanner();
  if (demo.client) {
    const st = demo.client.stats();
    $('dials').textContent = st.dials;
    $('recovery').textContent = st.recoveries ? `${(st.recoveryP50Ms / 1000).toFixed(2)} s / ${(st.recoveryP99Ms / 1000).toFixed(2)} s (${st.recoveries})` : '–';
    $('per-ready').textContent = st.readyCount ? (st.dials / st.readyCount).toFixed(1) : '–';
  }
}

function renderRecord(r) {
  demo.records.push({ t: Date.now(), ...r });
  if (demo.records.length > 2000) demo.records.splice(0, 1000);
  const left = [r.budgetLeft >= 0 ? `budget ${r.budgetLeft} left` : '', r.windowLeftMs >= 0 ? `window ${(r.windowLeftMs / 1000).toFixed(0)} s left` : '']
    .filter(Boolean).join(', ');
  const wait = r.retryAfterMs > 0 ? `, retry-after ${(r.retryAfterMs / 1000).toFixed(1)} s` : '';
  addLog('record', `${r.by} ${r.code} → ${r.class}: ${r.outcome}` + (r.outcome === 'reconnect' ? ` in ${(r.delayMs / 1000).toFixed(2)} s` : '') + wait + (left ? ` (${left})` : ''));
}

// The page's token hook: it caches its ticket as a simple app would, and
// fetches a fresh one only when asked to force (stage 6: late in the
// ticket's life for the in-band refresh, or after a 4001).
let cachedToken; // a promise of the ticket, shared by concurrent callers
function token({ force }) {
  if (!cachedToken || force) {
    // The first is index.html's early request (window.demoTicket), used
    // once; if it failed, or for a forced refresh, the page asks anew.
    const early = force ? undefined : window.demoTicket;
    window.demoTicket = undefined;
    cachedToken = early ? early.then((r) => (r ? (demo.tokensFetched++, r.token) : fetchTicket()), fetchTicket) : fetchTicket();
    cachedToken.catch(() => { cachedToken = undefined; });
  }
  return cachedToken;
}

// fetchTicket asks the server for a ticket for this page's client id.
function fetchTicket() {
  return api('/api/token', { clientId: demo.clientId }).then((r) => { demo.tokensFetched++; return r.token; });
}

const pad = (n, w = 2) => String(n).padStart(w, '0');
function stamp(d = new Date()) {
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function addLog(kind, detail) {
  const entry = { t: Date.now(), kind, detail };
  demo.log.push(entry);
  if (demo.log.length > 2000) demo.log.splice(0, 1000);
  draw(() => drawLog(entry));
}

function drawLog({ t, kind, detail }) {
  if (kind === 'ping' && !$('show-pings').checked) return;
  const li = document.createElement('li');
  li.className = kind;
  li.innerHTML = '<span class="t"></span><span class="k"></span><span class="d"></span>';
  li.children[0].textContent = stamp(new Date(t));
  li.children[1].textContent = kind;
  li.children[2].textContent = detail;
  const log = $('log');
  log.prepend(li);
  while (log.children.length > 200) log.lastChild.remove();
}

function renderUpdate(u) {
  if (u.topic !== 'feed') return; // onUpdate has every topic's; the measurements count the feed's
  demo.updates++;
  demo.lastUpdateAt = Date.now();
  demo.updateTimes.push(demo.lastUpdateAt);
  if (demo.updateTimes.length > 4000) demo.updateTimes.splice(0, 2000);
  demo.lastSeq = u.seq;
  demo.seqs.push(u.seq);
  if (demo.seqs.length > 20000) { demo.seqs.splice(0, 10000); demo.seqsDropped += 10000; }
  draw(() => drawUpdate(u));
}

function drawUpdate(u) {
  const li = document.createElement('li');
  li.textContent = `#${u.seq} value ${u.data && u.data.value} (epoch ${u.epoch})`;
  const feed = $('feed');
  feed.prepend(li);
  while (feed.children.length > 8) feed.lastChild.remove();
}

// The topics table: per topic the cursor, updates replayed, duplicates and
// updates lost since the page loaded (the client's own accounting).
function renderTopics() {
  // Not before the first READY: there is nothing to count yet, and each
  // call below is a call into the wasm (compiled on its first call) on the
  // main thread while the page is still on its way to READY.
  if (!demo.client || demo.firstReadyMs === undefined) return;
  const st = demo.client.stats();
  $('missed').textContent = st.missedUpdates;
  $('dups').textContent = demo.stage >= 7 ? `${st.duplicatesDropped} dropped` : `${st.duplicates} delivered twice`;
  const rows = demo.client.topics().map((t) => {
    const tr = document.createElement('tr');
    for (const v of [t.topic, t.cursor, t.delivered, t.replayed, t.duplicates, t.lost]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.append(td);
    }
    return tr;
  });
  $('topics').replaceChildren(...rows);
}

// The banners apps draw (stage 8): "reconnecting" once the client has not
// been READY for 3 s (state.degraded), "offline" after 30 s (state.offline).
function renderBanner() {
  const s = demo.state;
  const el = $('banner');
  if (!s || (!s.degraded && !s.offline)) { el.hidden = true; return; }
  const secs = s.notReadySince ? Math.round((Date.now() - s.notReadySince) / 1000) : 0;
  el.hidden = false;
  el.className = s.offline ? 'banner offline' : 'banner degraded';
  el.textContent = s.offline ? `Offline: not READY for ${secs} s. The client keeps trying.` : `Reconnecting… (not READY for ${secs} s)`;
}

setInterval(() => {
  if (held) return;
  renderTopics();
  renderBanner();
  $('feed-age').textContent = demo.lastUpdateAt
    ? `last update ${((Date.now() - demo.lastUpdateAt) / 1000).toFixed(1)} s ago`
    : 'no data yet';
}, 250);

// sendRequest is what the button does; the e2e suite calls it too.
demo.sendRequest = async function sendRequest(method = 'echo', params = { at: Date.now() }) {
  const started = performance.now();
  const rec = { method, status: 'pending', started: Date.now() };
  demo.results.push(rec);
  const out = $('result');
  out.className = 'result wait';
  out.textContent = `pending: ${method}…`;
  try {
    const r = await demo.client.request(method, params);
    Object.assign(rec, { status: 'resolved', value: r, ms: Math.round(performance.now() - started) });
    out.className = 'result ok';
    out.textContent = `resolved in ${rec.ms} ms: ${JSON.stringify(r)}`;
  } catch (e) {
    Object.assign(rec, { status: 'rejected', name: e.name, message: e.message, ms: Math.round(performance.now() - started) });
    out.className = 'result err';
    out.textContent = `rejected after ${rec.ms} ms: ${e.name} (${e.message})`;
  }
  return rec;
};

// api calls the server's JSON API; sent, when given, is that request's
// response already on its way (index.html starts the first stats request).
async function api(path, body, sent) {
  const resp = await (sent ?? fetch(path, body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  }));
  const json = await resp.json();
  if (!resp.ok) throw new Error(json.error || resp.statusText);
  return json;
}

// The switches, as GET /api/faults lists them (server/demo/switches.go's table):
// each is rendered into its group, a checkbox for a toggle, a button for
// an action or a client-id switch, so a new switch needs no edit here.
// A control carries data-switch=<name>; a button also the id <kebab-name>
// (restart, end-session, revoke).
let switches = [];
// Client-id switches (Revoke) the page has applied to its own client id.
demo.applied = {};

function renderSwitches(list) {
  switches = list;
  for (const sw of list) {
    const group = document.querySelector(`.switches[data-group="${sw.group}"]`) || document.querySelector('.switches');
    const before = [...group.children].find((el) => !el.dataset.switch && !(el.firstElementChild && el.firstElementChild.dataset.switch));
    let el;
    if (sw.kind === 'toggle') {
      el = document.createElement('label');
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.dataset.switch = sw.name;
      box.addEventListener('change', () => flip(sw, box.checked, `${sw.name} ${box.checked ? 'on' : 'off'}`));
      el.append(box, ` ${sw.label}`);
    } else {
      el = document.createElement('button');
      el.id = sw.name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
      el.dataset.switch = sw.name;
      el.textContent = sw.label;
      el.addEventListener('click', async () => {
        if (sw.kind === 'clientId') {
          const next = !demo.applied[sw.name];
          await flip(sw, next ? demo.clientId : '', `${(next ? sw.label : sw.activeLabel || `un${sw.label}`).toLowerCase()} this page`);
          demo.applied[sw.name] = next;
        } else {
          await flip(sw, true, sw.label.toLowerCase());
        }
      });
    }
    el.title = sw.description;
    group.insertBefore(el, before || null);
  }
}

// A poll that left before a flip's POST was answered carries the old
// state: it must not undo the box the person just clicked. Each poll has a
// generation; a flip marks the generation after which polls are news.
let pollGen = 0;
const flippedAt = {}; // switch name -> the last poll generation issued before its POST was answered

async function flip(sw, value, what) {
  flippedAt[sw.name] = Infinity; // no poll is news until the POST is answered
  try {
    await api('/api/faults', { [sw.name]: value });
    addLog('switch', what);
  } catch (e) { $('s-status').textContent = e.message; }
  flippedAt[sw.name] = pollGen;
  pollServer();
}

function renderServer(st, gen = Infinity) {
  $('s-open').textContent = st.open;
  $('s-handshakes').textContent = st.handshakes;
  $('s-window').textContent = st.handshakesWindow;
  $('s-subscribed').textContent = st.subscribed;
  $('s-node').textContent = st.node || '–';
  const authOn = st.auth && st.auth.mode !== 'off';
  for (const sw of switches) {
    const el = document.querySelector(`[data-switch="${sw.name}"]`);
    if (!el) continue;
    const on = Boolean(st.faults && st.faults[sw.name]);
    if (sw.kind === 'toggle') {
      const stale = gen <= (flippedAt[sw.name] ?? -1);
      if (document.activeElement !== el && !stale) el.checked = on;
    } else {
      const active = sw.kind === 'clientId' ? demo.applied[sw.name] : on;
      el.textContent = active && sw.activeLabel ? sw.activeLabel : sw.label;
    }
    el.disabled = !st.demo || (sw.needsAuth && !authOn);
  }
  for (const el of document.querySelectorAll('#reset, #drain')) el.disabled = !st.demo;
  // Publishing is the server's choice (wsready serve -publish; make run has
  // it): without it every publish is refused, so the button says so.
  $('publish').disabled = !st.publish;
  if (!st.publish && !demo.published.length) $('pub-result').textContent = 'publishing is off on this server: start it with -publish (make run does)';
  $('s-status').textContent = st.demo ? '' : 'The switches are off: start the server with -demo (make run does) to use them.';
}

// showServer records the server's stats at once and draws them (held
// until the first READY, behind what is held before them).
function showServer(st, gen) {
  demo.server = st;
  draw(() => renderServer(st, gen));
}

async function pollServer() {
  const gen = ++pollGen;
  try {
    showServer(await api('/api/stats?connections=false'), gen);
  } catch (e) { draw(() => { $('s-status').textContent = `server unreachable: ${e.message}`; }); }
}

function wireSwitches() {
  $('reset').addEventListener('click', async () => { showServer(await api('/api/reset', {})); });
  $('drain').addEventListener('click', async () => {
    await api('/api/drain', {}).catch((e) => draw(() => { $('s-status').textContent = e.message; }));
    addLog('switch', 'drain');
    pollServer();
  });
  $('reconnect').addEventListener('click', () => { if (demo.client) demo.client.reconnect(); });
  $('send').addEventListener('click', () => demo.sendRequest());
  $('publish').addEventListener('click', () => demo.publish());
}

// publish is the Publish button: one update to the "demo" topic, which the
// page subscribes to after its first publish (the topic exists from then).
let demoSub;
demo.publish = async function publish(text = `hello at ${stamp()}`) {
  const out = $('pub-result');
  try {
    const seq = await demo.client.publish('demo', { text });
    demo.published.push(seq);
    out.className = 'result ok';
    out.textContent = `published as demo #${seq}`;
    if (!demoSub) demoSub = demo.client.subscribe('demo', (u) => addLog('demo', `#${u.seq} ${u.data && u.data.text}`), { since: seq - 1 });
    return seq;
  } catch (e) {
    out.className = 'result err';
    out.textContent = `not published: ${e.name}${e.code ? ` ${e.code}` : ''} (${e.message})`;
    return null;
  }
};

async function main() {
  const { stage, error } = stageFromURL();
  // index.html's inline script started the wasm's fetch and compile
  // (window.wsreadyWasm) and called load() with it: this call shares that
  // one (load() is once per page), so connect() finds Go started.
  if (error === undefined) load({ module: window.wsreadyWasm }).catch(() => { /* connect() loads again and reports it */ });
  renderStageNav(stage);
  wireSwitches();
  // Both asked at once; the stats are drawn after the switches they light.
  const stats = api('/api/stats?connections=false', undefined, window.demoStats);
  const firstStats = api('/api/faults')
    .then((f) => draw(() => renderSwitches(f.switches)), (e) => draw(() => { $('s-status').textContent = `no switches: ${e.message}`; }))
    .then(() => stats);
  firstStats.then((st) => { demo.server ??= st; draw(() => renderServer(st)); }, () => {});
  setInterval(pollServer, 500);
  setTimeout(drawHeld, 1000); // a page that is not READY by then is drawn anyway
  setTimeout(setIcon, 3000); // and gets its icon
  if (error !== undefined) {
    $('stage-desc').textContent = '';
    $('readiness').hidden = true;
    $('feed-card').hidden = true;
    showError(`Unknown stage "${error}". Pick one of the stages 0 to 8 above (for example ?stage=8).`);
    return;
  }
  demo.stage = stage;
  document.title = `wsready demo: stage ${stage}`;
  $('stage-desc').textContent = `Stage ${stage}. ${STAGES[stage]}`;
  let authOn = false;
  try { const st = await stats; authOn = Boolean(st.auth && st.auth.mode !== 'off'); } catch { /* server down: no tickets */ }
  // The first ticket is fetched while the wasm loads, not after: the token
  // hook then answers the first dial from the cache.
  if (authOn) token({ force: false }).catch(() => {});
  try {
    demo.client = await connect({
      stage,
      topic: 'feed', // the demo's service: READY includes its subscription
      ...(stage >= 6 ? { ...STAGE6, ...budgetFromURL() } : {}),
      ...(stage >= 7 ? { resume: 'session' } : {}),
      ...(stage >= 5 ? backoffFromURL() : {}),
      ...(stage >= 8 ? reprobeFromURL() : {}),
      onContinuityLost: (l) => {
        demo.lost.push(l);
        addLog('continuity-lost', `${l.topic}: ${l.reset ? `history reset after #${l.from - 1}` : `#${l.from}..#${l.to} are gone`}`);
      },
      ...(authOn ? { token } : {}),
      onState: renderState,
      onUpdate: renderUpdate,
      onEvent: (e) => addLog(e.kind, e.detail),
      onRecord: renderRecord,
    });
    renderState(demo.client.state());
  } catch (e) {
    showError(`The client failed to start: ${e.message}`);
  }
}

main();
