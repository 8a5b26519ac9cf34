// The package in Node.js: connect fails at once with a clear "unsupported
// environment" error instead of hanging. Run by make npm.
const path = process.argv[2];
const m = await import(new URL(path, `file://${process.cwd()}/`).href);
if (m.preconnect('ws://127.0.0.1:9/ws') !== false) {
  console.error('node-check: preconnect opened a socket in Node.js');
  process.exit(1);
}
const started = Date.now();
try {
  await m.connect({ url: 'ws://127.0.0.1:9/ws' });
  console.error('node-check: connect did not fail in Node.js');
  process.exit(1);
} catch (e) {
  if (!/unsupported environment: Node\.js/.test(e.message) || Date.now() - started > 1000) {
    console.error('node-check: unexpected failure:', e.message);
    process.exit(1);
  }
  console.log('node-check: ' + e.message);
}
