// The README's web snippet ("In a web page"): the lines between the two
// snippet markers below are copied into the README, and readme_test.go (go
// test ./, in make test) fails when the copy and these lines differ. make
// example checks this file with tsc --strict and the Vite template's
// linting options (tsconfig.json). It is type-checked only: the example
// app's page runs main.js.

// snippet:begin web
import { connect, WsreadyError } from 'wsready';

const status = document.querySelector('#status') ?? document.body;

// The client connects, and reconnects, in the background. READY: the socket is
// open, the server's pings arrive, and it acknowledged every topic subscribed to.
const client = await connect({
  // url: default /ws on the page's host, where wsready serve has it; your own
  // server's, for example 'wss://app.example.com/realtime' (the Go server below).
  onState: (s) => {
    const why = s.refused ? `${s.refused.topic} refused (${s.refused.code})` : s.lastError?.message;
    status.textContent = s.ready ? 'READY' : `not READY: ${why ?? 'connecting'}`;
  },
});

// Every update of the topic from now on, across reconnects, with no gap. wsready
// serve publishes "feed" four times a second; the Go server below publishes "clock".
const unsubscribe = client.subscribe<{ ts: number; value: number }>('feed', (u) => {
  console.log(`feed #${u.seq}`, new Date(u.data.ts), u.data.value);
});

try {
  await client.ready({ timeoutMs: 10_000 }); // rejects with Timeout, TopicRefused (e.topic), or SessionEnded
  const answer = await client.request<{ hello: string }>('echo', { hello: 'world' }, { timeoutMs: 2000 });
  console.log('echo', answer.hello);
} catch (e) {
  if (!(e instanceof WsreadyError)) throw e; // a TypeError: an empty method, params JSON cannot encode
  switch (e.name) {
    case 'NotReady': // never sent: always safe to send again
      break;
    case 'RequestTimeout': // sent, and the outcome is unknown:
    case 'ConnectionClosed': // send again only if the request is idempotent
      break;
    default: // ServerError and TopicRefused (e.code says why), Timeout, SessionEnded (e.ended), Aborted
      console.warn(e.name, e.code ?? e.ended);
  }
}

// The updates go on until the page says it is done with them, not right after the echo.
addEventListener('pagehide', () => {
  unsubscribe();
  void client.close(); // every socket closed with 1000; pending requests reject with ConnectionClosed
});
// snippet:end web
