import { defineConfig } from 'vite';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip as gzipCompress, constants } from 'node:zlib';

// Two steps a page that wants READY soon does for the package's wasm (the
// largest file, 3 MB raw), measured in docs/performance.md:
//
// preloadWasm: a <link rel="preload" as="fetch" crossorigin> in the page's
// head, so the wasm downloads from the start, not once the bundle has run
// and the package's load() asks for it (load's fetch takes the preload: same
// URL, same mode).
//
// precompress: dist/**/*.{wasm,js,html} also as .br (brotli, quality 11)
// and .gz (gzip -9) for a static host that serves precompressed files (Caddy:
// file_server { precompressed br gzip }; nginx: brotli_static on and
// gzip_static on). The wasm is about 0.65 MB as brotli against 0.87 MB as
// gzip, what a host that compresses on the fly sends.
const preloadWasm = () => {
  let base = '/';
  return {
    name: 'wsready-preload-wasm',
    apply: 'build',
    configResolved(c) { base = c.base; },
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const wasm = Object.keys(ctx.bundle ?? {}).filter((f) => f.endsWith('.wasm'));
        return wasm.map((f) => ({
          tag: 'link',
          attrs: { rel: 'preload', href: base + f, as: 'fetch', type: 'application/wasm', crossorigin: true },
          injectTo: 'head-prepend',
        }));
      },
    },
  };
};

const precompress = () => ({
  name: 'wsready-precompress',
  apply: 'build',
  enforce: 'post',
  async writeBundle(opts, bundle) {
    const brotli = promisify(brotliCompress);
    const gzip = promisify(gzipCompress);
    await Promise.all(Object.keys(bundle).filter((name) => /\.(wasm|js|html)$/.test(name)).map(async (name) => {
      const file = join(opts.dir, name);
      const raw = await readFile(file);
      const params = { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length };
      const [br, gz] = await Promise.all([brotli(raw, { params }), gzip(raw, { level: 9 })]);
      await Promise.all([writeFile(`${file}.br`, br), writeFile(`${file}.gz`, gz)]);
    }));
  },
});

// Top-level await in the app and in the package: target browsers that have it.
// Brotli at quality 11 takes the 3 MB wasm about 10 s: no warning about it.
export default defineConfig({
  build: { target: 'es2022', rolldownOptions: { checks: { bundlerTimings: false } } },
  plugins: [preloadWasm(), precompress()],
});
