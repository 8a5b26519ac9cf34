// The example shop's page (docs/app.md): it signs in with the app's own
// login, connects to wsready at /realtime (its session cookie says who it
// is, or a token from the app's /auth/token: a wsready ticket, or the
// app's JWT), subscribes to the user's private cart topic and to the lobby
// with its presence, and calls cart.add.
// window.appState is what the browser suite (e2e/app_test.go) reads;
// window.app holds the actions it drives.
import { connect, WsreadyError } from 'wsready';
import type { Client, PresenceEvent, ReconnectRecord, State, TopicError, Update } from 'wsready';

interface Line { sku: string; name: string; qty: number }
interface Cart { user: string; lines: Line[]; version: number }
interface Me { user?: string; users: string[]; skus: string[]; tokens: string }
interface Said { user: string; text: string }
/** A refusal the page was given: a request's, a publish's or a subscribe's. */
interface AppError { code: string; message: string; where: string }
type Result<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

/** What the page knows, for people (the DOM) and for the browser suite. */
interface AppState {
  user: string | null;
  tokens: string | null;
  ready: boolean;
  via: string | null;
  ended: string | null;
  cart: Cart | null;
  /** Updates that came on the user's cart topic. */
  cartUpdates: number;
  /** Every topic an update arrived on. */
  topicsSeen: string[];
  /** Who is in the lobby now (user ids, sorted). */
  lobby: string[];
  presenceEvents: PresenceEvent[];
  /** The lobby's updates' seqs, in arrival order, and the messages. */
  lobbySeqs: number[];
  messages: (Said & { seq: number })[];
  topicErrors: TopicError[];
  lastError: AppError | null;
  /** Calls of the token hook, those with force (after a 4001), and 4001 closes. */
  tokenCalls: number;
  tokenForced: number;
  refreshes: number;
  readyCount: number;
}

declare global {
  interface Window {
    appState: AppState;
    app: {
      login(user: string): Promise<void>;
      logout(): Promise<void>;
      addToCart(sku: string, qty: number): Promise<Result<Cart>>;
      say(text: string): Promise<Result<number>>;
      trySubscribe(topic: string): void;
      client: Client | null;
    };
  }
}

const state: AppState = (window.appState = {
  user: null, tokens: null, ready: false, via: null, ended: null,
  cart: null, cartUpdates: 0, topicsSeen: [],
  lobby: [], presenceEvents: [], lobbySeqs: [], messages: [],
  topicErrors: [], lastError: null,
  tokenCalls: 0, tokenForced: 0, refreshes: 0, readyCount: 0,
});

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing`);
  return el as T;
};

async function postJSON(path: string, body: unknown): Promise<Response> {
  return fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' }, // the app's guard and TicketHandler ask for it
    body: JSON.stringify(body),
    credentials: 'same-origin',
  });
}

let client: Client | null = null;

window.app = {
  client: null,
  async login(user) {
    const r = await postJSON('/login', { user });
    if (!r.ok) throw new Error(`sign-in refused: ${r.status}`);
    location.reload(); // the page starts again, signed in
  },
  async logout() {
    await postJSON('/logout', {}); // the app also ends this user's realtime connections
    await client?.close();
    location.reload();
  },
  async addToCart(sku, qty) {
    return call(() => need().request<Cart>('cart.add', { sku, qty }), 'cart.add', (c) => setCart(c));
  },
  async say(text) {
    const said: Said = { user: state.user ?? '', text };
    return call(() => need().publish('room:lobby', said), 'publish');
  },
  trySubscribe(topic) {
    // Whatever the page asks, the server's Authorize decides: another
    // user's topic is refused with forbidden (state.topicErrors). A
    // refused topic keeps the client from READY until the page gives it
    // up, so the page does.
    const c = need();
    const off = c.subscribe(topic, () => {});
    c.subscribed(topic).catch((e: unknown) => {
      if (e instanceof WsreadyError && e.name === 'TopicRefused') off();
    });
  },
};

function need(): Client {
  if (!client) throw new Error('not connected');
  return client;
}

/** Runs a request, recording a refusal's code and message in lastError. */
async function call<T>(fn: () => Promise<T>, where: string, ok?: (v: T) => void): Promise<Result<T>> {
  try {
    const value = await fn();
    ok?.(value);
    return { ok: true, value };
  } catch (e) {
    const code = e instanceof WsreadyError ? (e.code ?? e.name) : 'error';
    const message = e instanceof Error ? e.message : String(e);
    state.lastError = { code, message, where };
    render();
    return { ok: false, code, message };
  }
}

/** Keeps the newer cart: it comes both on the topic and in answers. */
function setCart(c: Cart): void {
  if (!state.cart || c.version > state.cart.version) state.cart = c;
  render();
}

// The lobby's presence: a snapshot (presence()) on every READY, with the
// join and leave events that arrived while it was on its way applied again
// on top (they are in order on the connection, and a join or a leave
// applied twice changes nothing).
const lobby = new Set<string>();
let replay: PresenceEvent[] | null = null;

function applyPresence(p: PresenceEvent): void {
  if (p.event === 'join') lobby.add(p.user);
  else lobby.delete(p.user);
  state.lobby = [...lobby].sort();
}

async function refreshLobby(c: Client): Promise<void> {
  replay = [];
  try {
    const who = await c.presence('room:lobby');
    lobby.clear();
    for (const u of who.users) lobby.add(u.user);
    for (const p of replay) applyPresence(p);
    state.lobby = [...lobby].sort();
  } catch {
    // Not READY any more: the next READY asks again.
  } finally {
    replay = null;
    render();
  }
}

function onState(s: State): void {
  const was = state.ready;
  state.ready = s.ready;
  state.via = s.via;
  state.ended = s.ended;
  if (s.ready && !was) {
    state.readyCount++;
    if (client) void refreshLobby(client);
  }
  render();
}

async function start(): Promise<void> {
  const r = await fetch('/me', { credentials: 'same-origin' });
  const me = (await r.json()) as Me;
  state.tokens = me.tokens;
  if (!r.ok || !me.user) {
    const users = $('users');
    for (const u of me.users) {
      const b = document.createElement('button');
      b.textContent = u;
      b.dataset.user = u;
      b.onclick = () => void window.app.login(u).catch((e: Error) => { $('error').textContent = e.message; });
      users.append(b);
    }
    $('login').hidden = false;
    render();
    return;
  }
  const user = me.user;
  state.user = user;
  const cartTopic = `user:${user}.cart`;
  $('who').textContent = user;
  $('carttopic').textContent = cartTopic;
  for (const sku of me.skus) {
    const o = document.createElement('option');
    o.value = o.textContent = sku;
    $<HTMLSelectElement>('sku').append(o);
  }
  $('main').hidden = false;
  $('add').onclick = () => void window.app.addToCart($<HTMLSelectElement>('sku').value, Number($<HTMLInputElement>('qty').value));
  $('logout').onclick = () => void window.app.logout();
  $<HTMLFormElement>('say').onsubmit = (ev) => {
    ev.preventDefault();
    const t = $<HTMLInputElement>('text');
    if (t.value.trim()) void window.app.say(t.value.trim());
    t.value = '';
  };

  client = window.app.client = await connect({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/realtime`,
    // The connection carries this user's identity: one per page, not shared
    // between tabs (tabs: true would share one tab's among them).
    tabs: false,
    // Cookie mode: no token; the upgrade carries the session cookie and the
    // server's Identify hook reads it. Otherwise, before every dial: a
    // ticket (or the app's JWT) for the session cookie. force: the last
    // one expired (4001); this one is fetched fresh anyway.
    token: me.tokens === 'cookie' ? undefined : async ({ force }) => {
      state.tokenCalls++;
      if (force) state.tokenForced++;
      const t = await postJSON('/auth/token', {});
      if (!t.ok) throw new Error(`no token (${t.status}): sign in again`);
      return ((await t.json()) as { token: string }).token;
    },
    onState,
    onUpdate: (u: Update) => {
      if (!state.topicsSeen.includes(u.topic)) state.topicsSeen.push(u.topic);
    },
    onPresence: (p: PresenceEvent) => {
      if (p.topic !== 'room:lobby') return;
      state.presenceEvents.push(p);
      replay?.push(p);
      applyPresence(p);
      render();
    },
    onTopicError: (e: TopicError) => {
      state.topicErrors.push(e);
      state.lastError = { code: e.code, message: `subscribe to ${e.topic} refused`, where: 'subscribe' };
      render();
    },
    onRecord: (r: ReconnectRecord) => {
      if (r.class === 'token_expired') state.refreshes++;
    },
  });
  const c = client;
  c.subscribe<Cart>(cartTopic, (u) => {
    state.cartUpdates++;
    setCart(u.data);
  });
  c.subscribe<Said>('room:lobby', (u) => {
    state.lobbySeqs.push(u.seq);
    const d = u.data ?? { user: '', text: '' };
    state.messages.push({ user: String(d.user ?? ''), text: String(d.text ?? ''), seq: u.seq });
    if (state.messages.length > 50) state.messages.shift(); // the page keeps the last 50
    render();
  }, { presence: true });
  await c.ready({ timeoutMs: 30_000 });
  await call(() => c.request<Cart>('cart.get'), 'cart.get', setCart);
}

function render(): void {
  const s = state;
  const line = $('state');
  line.className = s.ready ? 'ok' : 'bad';
  line.textContent = s.user === null
    ? 'not signed in'
    : `${s.ready ? 'READY' : 'not READY'} · transport ${s.via ?? '-'} · tokens: ${s.tokens} (${s.tokenCalls} fetched, ${s.refreshes} expired)${s.ended ? ` · ended: ${s.ended}` : ''}`;
  $('error').textContent = s.lastError ? `${s.lastError.where}: ${s.lastError.code}: ${s.lastError.message}` : '';
  if (s.user === null) return;
  const cart = $('cart');
  cart.replaceChildren(...(s.cart?.lines ?? []).map((l) => {
    const li = document.createElement('li');
    li.textContent = `${l.qty} × ${l.name}`;
    return li;
  }));
  if (!s.cart || s.cart.lines.length === 0) cart.textContent = 'empty';
  $('lobby').textContent = s.lobby.length ? s.lobby.join(', ') : 'nobody';
  // A publish carries no verified sender: the name is what the sender's
  // page wrote. An app that needs one routes messages through a method that
  // publishes from Go (as cart.add does).
  $('messages').replaceChildren(...s.messages.slice(-10).map((m) => {
    const li = document.createElement('li');
    li.textContent = `${m.user || '?'}: ${m.text}`;
    return li;
  }));
}

try {
  await start();
} catch (e) {
  const message = e instanceof Error ? e.message : String(e);
  state.lastError = { code: e instanceof WsreadyError ? (e.code ?? e.name) : 'error', message, where: 'start' };
  render();
}
