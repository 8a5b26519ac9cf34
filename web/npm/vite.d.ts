// Types for wsready/vite, the package's Vite plugin (vite.js says what it does).
import type { Plugin } from 'vite';

export interface WsreadyViteOptions {
  /** A <link rel="preload" as="fetch" crossorigin> for the emitted wsready.wasm, first in each page's head (none with experimental.renderBuiltUrl). Default true. */
  preload?: boolean;
  /** Each emitted .wasm, .js, .mjs, .html, .css, .svg and .json also as .br (brotli 11) and .gz (gzip -9), for a host that serves precompressed files; browser builds only. Default true. */
  precompress?: boolean;
}

/** The plugins for vite.config.js's plugins: [wsready()]; both apply to vite build only. */
export default function wsready(opts?: WsreadyViteOptions): Plugin[];
