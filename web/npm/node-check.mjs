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
  for (const [opts, want] of [[undefined, 'wsready:preload wsready:precompress'], [{}, 'wsready:preload wsready:precompress'],
    [{ preload: undefined }, 'wsready:preload wsready:precompress'], [{ preload: false }, 'wsready:precompress'],
    [{ precompress: false }, 'wsready:preload'], [{ preload: false, precompress: false }, '']]) {
    if (names(wsready(opts)) !== want) fail(`wsready(${JSON.stringify(opts)}) gave "${names(wsready(opts))}", want "${want}"`);
  }
  for (const bad of [null, 'x', [], { preload: 0 }, { precompress: 'no' }, { preloadWasm: true }]) {
    let err;
    try { wsready(bad); } catch (e) { err = e; }
    if (!(err instanceof TypeError)) fail(`wsready(${JSON.stringify(bad)}) was not refused`);
  }
  // The preload: the package's wasm only (not another wasm), under the
  // base, relative to each page for a relative base; none when the app
  // decides its URLs at run time.
  const bundle = {
    'assets/wsready-abc.wasm': { type: 'asset', fileName: 'assets/wsready-abc.wasm', names: ['wsready.wasm'] },
    'assets/other-xyz.wasm': { type: 'asset', fileName: 'assets/other-xyz.wasm', names: ['other.wasm'] },
    'assets/index-def.js': { type: 'chunk', fileName: 'assets/index-def.js', name: 'index' },
  };
  const hrefs = (config, page) => {
    const [p] = wsready({ precompress: false });
    p.configResolved(config);
    return p.transformIndexHtml.handler('', { path: page, bundle }).map((t) => {
      const { href, ...rest } = t.attrs;
      if (t.tag !== 'link' || t.injectTo !== 'head-prepend' || JSON.stringify(rest) !== JSON.stringify({ rel: 'preload', as: 'fetch', type: 'application/wasm', crossorigin: true })) {
        fail('preload tag: ' + JSON.stringify(t));
      }
      return href;
    }).join(' ');
  };
  for (const [config, page, want] of [[{ base: '/app/' }, '/index.html', '/app/assets/wsready-abc.wasm'],
    [{ base: './' }, '/index.html', './assets/wsready-abc.wasm'], [{ base: './' }, '/sub/index.html', '../assets/wsready-abc.wasm'],
    [{ base: 'https://cdn.example.com/' }, '/sub/index.html', 'https://cdn.example.com/assets/wsready-abc.wasm'],
    [{ base: '/', experimental: { renderBuiltUrl: () => undefined } }, '/index.html', '']]) {
    const got = hrefs(config, page);
    if (got !== want) fail(`preload for ${page} with ${JSON.stringify(config)}: "${got}", want "${want}"`);
  }
  // The precompress: browser builds only; the listed types, each as .br
  // and .gz that decompress to the file.
  const [, precompress] = wsready();
  if (precompress.applyToEnvironment({ config: { consumer: 'server' } }) !== false || precompress.applyToEnvironment({ config: { consumer: 'client' } }) !== true) {
    fail('precompress applies to SSR builds, or not to the browser\'s');
  }
  const dir = await mkdtemp(join(tmpdir(), 'wsready-vite-'));
  try {
    const wasm = Buffer.from('\0asm' + 'wsready '.repeat(4096));
    await writeFile(join(dir, 'a.wasm'), wasm);
    await writeFile(join(dir, 'b.css'), 'body{}');
    await writeFile(join(dir, 'c.png'), 'png');
    await precompress.writeBundle.handler({ dir }, { 'a.wasm': {}, 'b.css': {}, 'c.png': {} });
    const files = (await readdir(dir)).sort().join(' ');
    if (files !== 'a.wasm a.wasm.br a.wasm.gz b.css b.css.br b.css.gz c.png') fail('precompress wrote ' + files);
    if (!brotliDecompressSync(await readFile(join(dir, 'a.wasm.br'))).equals(wasm)) fail('a.wasm.br is not a.wasm');
    if (!gunzipSync(await readFile(join(dir, 'a.wasm.gz'))).equals(wasm)) fail('a.wasm.gz is not a.wasm');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  console.log('node-check: wsready/vite: options, preload and precompress as documented');
}
