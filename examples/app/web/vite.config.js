import { defineConfig } from 'vite';

// Top-level await in the app and in the package: target browsers that have it.
export default defineConfig({ build: { target: 'es2022' } });
