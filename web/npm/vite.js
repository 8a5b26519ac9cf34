// wsready/vite: the package's Vite plugin, for vite.config.js (it runs in
// Node.js, at build time; a page never imports it).
//
//   import wsready from 'wsready/vite';
//   export default defineConfig({ plugins: [wsready()] });
//
// Two steps for the package's wasm, the page's largest file (3 MB raw) and
// what its READY waits for, measured in the project's docs/performance.md:
//
// preload: a <link rel="preload" as="fetch" crossorigin> for the emitted
// wsready.wasm, first in each built page's head, so the wasm downloads from
// the start and not once the bundle has run and load() asks for it (load's
// fetch takes the preload's response: same URL, same mode). Other .wasm
// files are left alone. With experimental.renderBuiltUrl set the wasm's
// URL is the app's to decide at run time: no preload (a preload of another
// URL would be a second download).
//
// precompress: each emitted .wasm, .js, .mjs, .html, .css, .svg and .json
// also written as .br (brotli, quality 11) and .gz (gzip -9) beside it, for
// a host that serves precompressed files (wsready's StaticHandler; Caddy:
// file_server { precompressed br gzip }; nginx: brotli_static on and
// gzip_static on). The wasm is about 0.65 MB as brotli against 0.87 MB as
// gzip, what a host that compresses on the fly sends. Brotli at quality 11
// takes the wasm about 10 s (rolldown's slow-plugin notice says so; its
// checks.bundlerTimings: false turns that off). Browser builds only (not
// SSR), after every other plugin has written its files.
//
// Both apply to `vite build` only, and both are on unless turned off:
// wsready({ preload: false, precompress: false }) (undefined is unset).
import { readFile, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip as gzipCompress, constants } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gzip = promisify(gzipCompress);

/** The files precompress writes .br and .gz beside. */
const compressed = /\.(wasm|m?js|html|css|svg|json)$/;

/** Whether a bundle entry is the package's wasm. */
const isWsreadyWasm = (b) => b?.type === 'asset' && (b.names ?? [b.name]).includes('wsready.wasm');

export default function wsready(opts = {}) {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw new TypeError('wsready/vite: options must be an object');
  for (const k of Object.keys(opts)) {
    if (k !== 'preload' && k !== 'precompress') throw new TypeError(`wsready/vite: unknown option ${JSON.stringify(k)} (preload, precompress)`);
    if (opts[k] !== undefined && typeof opts[k] !== 'boolean') throw new TypeError(`wsready/vite: ${k} must be true or false`);
  }
  const plugins = [];
  if (opts.preload !== false) {
    let base = '/';
    let runtimeURLs = false;
    plugins.push({
      name: 'wsready:preload',
      apply: 'build',
      configResolved(c) {
        base = c.base;
        runtimeURLs = typeof c.experimental?.renderBuiltUrl === 'function';
      },
      transformIndexHtml: {
        order: 'post',
        handler(_html, ctx) {
          if (runtimeURLs) return [];
          // A relative base ('./') is relative to each page, as Vite's
          // own tags are: '../' for sub/index.html.
          const pageBase = base === './' || base === ''
            ? posix.join(posix.relative(ctx.path.replace(/^\//, ''), '').slice(0, -2), './')
            : base;
          return Object.values(ctx.bundle ?? {}).filter(isWsreadyWasm).map((b) => ({
            tag: 'link',
            attrs: { rel: 'preload', href: pageBase + b.fileName, as: 'fetch', type: 'application/wasm', crossorigin: true },
            injectTo: 'head-prepend',
          }));
        },
      },
    });
  }
  if (opts.precompress !== false) {
    plugins.push({
      name: 'wsready:precompress',
      apply: 'build',
      applyToEnvironment: (env) => env.config?.consumer !== 'server',
      writeBundle: {
        sequential: true,
        order: 'post',
        async handler(out, bundle) {
          await Promise.all(Object.keys(bundle).filter((f) => compressed.test(f)).map(async (f) => {
            const file = join(out.dir, f);
            const raw = await readFile(file);
            const params = { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length };
            const [br, gz] = await Promise.all([brotli(raw, { params }), gzip(raw, { level: 9 })]);
            await Promise.all([writeFile(`${file}.br`, br), writeFile(`${file}.gz`, gz)]);
          }));
        },
      },
    });
  }
  return plugins;
}
