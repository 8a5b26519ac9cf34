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

// wsready/vite, the package's Vite plugin (vite.js, beside wsready.js):
// its options, the preload it adds to a built page, the files it
// precompresses.
{
  const { mkdtemp, writeFile, readFile, readdir, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { brotliDecompressSync, gunzipSync } = await import('node:zlib');
  const fail = (msg) => { console.error('node-check: wsready/vite: ' + msg); process.exit(1); };
  const { default: wsready } = await import(new URL('vite.js', new URL(path, `file://${process.cwd()}/`)).href);
  const names = (ps) => ps.map((p) => p.name).join(' ');
  if (names(wsready()) !== 'wsready:preload wsready:precompress') fail(`wsready() gave ${names(wsready())}`);
  if (names(wsready({ preload: false })) !== 'wsready:precompress') fail('preload: false kept the preload');
  if (names(wsready({ precompress: false })) !== 'wsready:preload') fail('precompress: false kept the precompress');
  for (const bad of [null, 'x', [], { preload: 0 }, { precompress: 'no' }, { preloadWasm: true }]) {
    let err;
    try { wsready(bad); } catch (e) { err = e; }
    if (!(err instanceof TypeError)) fail(`wsready(${JSON.stringify(bad)}) was not refused`);
  }
  const [preload, precompress] = wsready();
  preload.configResolved({ base: '/app/' });
  const tags = preload.transformIndexHtml.handler('', { bundle: { 'assets/wsready-abc.wasm': {}, 'assets/index-def.js': {} } });
  if (JSON.stringify(tags) !== JSON.stringify([{ tag: 'link', attrs: { rel: 'preload', href: '/app/assets/wsready-abc.wasm', as: 'fetch', type: 'application/wasm', crossorigin: true }, injectTo: 'head-prepend' }])) {
    fail('preload tags: ' + JSON.stringify(tags));
  }
  const dir = await mkdtemp(join(tmpdir(), 'wsready-vite-'));
  try {
    const wasm = Buffer.from('\0asm' + 'wsready '.repeat(4096));
    await writeFile(join(dir, 'a.wasm'), wasm);
    await writeFile(join(dir, 'b.css'), 'body{}');
    await precompress.writeBundle({ dir }, { 'a.wasm': {}, 'b.css': {} });
    const files = (await readdir(dir)).sort().join(' ');
    if (files !== 'a.wasm a.wasm.br a.wasm.gz b.css') fail('precompress wrote ' + files);
    if (!brotliDecompressSync(await readFile(join(dir, 'a.wasm.br'))).equals(wasm)) fail('a.wasm.br is not a.wasm');
    if (!gunzipSync(await readFile(join(dir, 'a.wasm.gz'))).equals(wasm)) fail('a.wasm.gz is not a.wasm');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  console.log('node-check: wsready/vite: options, preload and precompress as documented');
}
