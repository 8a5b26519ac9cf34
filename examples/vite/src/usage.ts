// A usage file checked with tsc --strict against the package's .d.ts (make
// example): every part of the public API a TypeScript app touches.
import { connect, load, defaultURL, version, WsreadyError } from 'wsready';
import type { Client, ConnectOptions, State, Stats, Update, ClientEvent, ReconnectRecord, Terminal, ErrorName, Failure, ContinuityLost, TopicError, TopicStats,
  Transport, PresenceEvent, PresenceResult, SubscribeOptions, RequestOptions } from 'wsready';

async function main(): Promise<void> {
  const opts: ConnectOptions = {
    url: 'wss://example.com/ws',
    stage: 6,
    budget: 10,
    windowMs: 120_000,
    requestTimeoutMs: 2000, firstPingTimeoutMs: 3000, subscribeTimeoutMs: 2000, connectTimeoutMs: 10_000,
    backoffBaseMs: 500, backoffCapMs: 20_000, cooldownMs: 5000,
    token: async ({ force }: { force: boolean }) => (force ? 'fresh' : 'cached'),
    onState: (s: State) => { const t: Terminal | null = s.ended; void t; },
    onUpdate: (u: Update) => { const seq: number = u.seq; void seq; },
    onEvent: (e: ClientEvent) => { const k: string = e.kind; void k; },
    onRecord: (r: ReconnectRecord) => { const o: string = r.outcome; void o; },
  };
  await load({ wasmURL: new URL('https://cdn.example.com/wsready.wasm') });
  const c: Client = await connect(opts);
  const n: number = await c.request<number>('echo', 1);
  const st: Stats = c.stats();
  void n; void st; void defaultURL; void version;
  try {
    await c.request('echo', { a: 1 });
  } catch (e) {
    if (e instanceof WsreadyError) {
      const name: ErrorName = e.name;
      const retry: boolean = e.safeToRetry;
      void name; void retry;
    }
  }
  c.reconnect();
  await c.close();
}
void main;

async function more(c: Client): Promise<void> {
  const ac = new AbortController();
  const r = c.request<{ ok: boolean }>('echo', { ok: true }, { timeoutMs: 2000, signal: ac.signal });
  ac.abort();
  await r.catch((e: unknown) => { if (e instanceof WsreadyError && e.name === 'Aborted') return; throw e; });
  await c.ready({ timeoutMs: 1000 });
  const off = c.on('state', (s: State) => { void s.ready; });
  off();
  c.on('record', (r: ReconnectRecord) => { void r.class; });
}
void more;

function why(c: Client): string {
  const f: Failure | null = c.state().lastError;
  return f ? `${f.class} ${f.code}: ${f.message}` : 'ok';
}
void why;

// Stage 7: topics, publish, resume.
async function topics(): Promise<void> {
  const c: Client = await connect({
    urls: ['wss://a.example.com/ws', 'wss://b.example.com/ws'],
    stage: 7,
    topic: 'feed',
    resume: 'session',
    onContinuityLost: (l: ContinuityLost) => { const to: number | null = l.to; void to; void l.reset; },
    onTopicError: (e: TopicError) => { void e.code; },
  });
  const stop: () => void = c.subscribe<{ text: string }>('chat', (u: Update<{ text: string }>) => { const t: string = u.data.text; void t; }, { since: 0 });
  const seq: number = await c.publish('chat', { text: 'hi' }, { timeoutMs: 2000 });
  const ts: TopicStats[] = c.topics();
  void seq; void ts[0]?.lost; void c.stats().duplicatesDropped;
  c.on('continuityLost', (l: ContinuityLost) => { void l.from; });
  stop();
}
void topics;

// Stage 8: transports, banners, tabs, the queue, presence.
async function whereUsersAre(): Promise<void> {
  const c: Client = await connect({
    stage: 8,
    transports: ['websocket', 'http'],
    reprobeMs: 600_000,
    pauseWhenHidden: false,
    sendStallMs: 5000,
    degradedMs: 3000,
    offlineMs: 30_000,
    queue: false,
    tabs: true,
    onPresence: (p: PresenceEvent) => { const e: 'join' | 'leave' = p.event; void e; void p.user; },
    onState: (s: State) => {
      const via: Transport | null = s.via;
      const since: number | null = s.notReadySince;
      const banner: string = s.offline ? 'offline' : s.degraded ? 'reconnecting' : '';
      const tabs: 'on' | 'off' | 'unsupported' = s.tabs;
      const role: string = s.leader ? 'leader' : s.follower ? 'follower' : 'alone';
      void via; void since; void banner; void tabs; void role;
    },
  });
  const opts: RequestOptions = { queue: true, key: 'order-42', timeoutMs: 10_000 };
  const r = await c.request<{ ok: boolean }>('cart.add', { item: 1 }, opts);
  void r.ok;
  const seq: number = await c.publish('room', { text: 'hi' }, { queue: true });
  void seq;
  const sub: SubscribeOptions = { since: 0, presence: true };
  const stop = c.subscribe('room', (u: Update) => { void u.seq; }, sub);
  const who: PresenceResult = await c.presence('room');
  const first: string | undefined = who.users[0]?.user;
  const n: number = who.total + (who.users[0]?.conns ?? 0);
  void first; void n; void who.truncated;
  const off = c.on('presence', (p: PresenceEvent) => { void p.topic; });
  off();
  const st: Stats = c.stats();
  void st.sendStalls; void st.httpProbes; void st.forwarded;
  stop();
}
void whereUsersAre;
