// Types for wsready/vite, the package's Vite plugin (vite.js says what it does).
import type { Plugin } from 'vite';

export interface WsreadyViteOptions {
  /** A <link rel="preload" as="fetch" crossorigin> for each emitted .wasm, first in the page's head. Default true. */
  preload?: boolean;
  /** Each emitted .wasm, .js and .html also as .br (brotli 11) and .gz (gzip -9), for a host that serves precompressed files. Default true. */
  precompress?: boolean;
}

/** The plugins for vite.config.js's plugins: [wsready()]; both apply to vite build only. */
export default function wsready(opts?: WsreadyViteOptions): Plugin[];
