// The package's Vite plugin (wsready/vite) against its .d.ts, checked with
// tsc --strict by make example; vite.config.js uses it.
import wsready from 'wsready/vite';
import type { WsreadyViteOptions } from 'wsready/vite';
import type { Plugin } from 'vite';

const opts: WsreadyViteOptions = { preload: true, precompress: false };
const plugins: Plugin[] = [...wsready(), ...wsready(opts), ...wsready({})];
// @ts-expect-error: the options are booleans
wsready({ preload: 1 });
// @ts-expect-error: no such option
wsready({ preloadWasm: true });
void plugins;
