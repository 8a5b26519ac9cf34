// The example app: the package as a Vite user installs it. It reaches
// READY, makes a request and shows the live feed; window.exampleResult is
// for the browser suite.
import { connect, version } from 'wsready';

const $ = (id) => document.getElementById(id);
const ws = new URLSearchParams(location.search).get('ws') ?? undefined;
const result = (window.exampleResult = { version, ready: false, echo: null, updates: 0, error: null, wasmVersion: null });

try {
  const client = await connect({
    url: ws,
    topic: 'feed', // the demo server's feed: READY includes its subscription
    onState: (s) => {
      result.ready = s.ready;
      $('ready').textContent = s.ready ? 'yes' : 'no';
    },
    onUpdate: (u) => {
      result.updates++;
      $('feed').textContent = `#${u.seq}`;
    },
  });
  result.wasmVersion = client.version;
  const ready = () => new Promise((resolve) => {
    const t = setInterval(() => { if (client.state().ready) { clearInterval(t); resolve(); } }, 50);
  });
  await ready();
  result.echo = await client.request('echo', { from: 'vite' });
  $('echo').textContent = JSON.stringify(result.echo);
} catch (e) {
  result.error = `${e.name}: ${e.message}`;
  $('echo').textContent = result.error;
}
