import { defineConfig } from 'vite';
import wsready from 'wsready/vite';

// wsready(): the package's plugin (wsready/vite) adds a preload for the wasm
// to the built page's head and writes each .wasm, .js, .html, .css, .svg and
// .json also as .br and .gz, for a host that serves precompressed files
// (docs/client.md).
// Top-level await in the app and in the package: target browsers that have it.
// Brotli at quality 11 takes the 3 MB wasm about 10 s: no warning about it.
export default defineConfig({
  build: { target: 'es2022', rolldownOptions: { checks: { bundlerTimings: false } } },
  plugins: [wsready()],
});
