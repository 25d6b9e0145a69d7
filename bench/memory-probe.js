// Loaded into the server by `npm run bench:memory` (node --import): on SIGUSR2 it writes the process's own view of
// its memory to BENCH_MEMORY_FILE. Plain JavaScript, so that loading it does not start the TypeScript stripper.
import { renameSync, writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { getHeapSpaceStatistics } from 'node:v8';

/** Every module the process loads (import or require), with when it was first resolved (Date.now()). */
const loaded = new Map();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    if (!loaded.has(resolved.url)) loaded.set(resolved.url, Date.now());
    return resolved;
  },
});

process.on('SIGUSR2', () => {
  // Written aside and renamed, so that the benchmark, waiting for the file, never reads it half-written.
  const file = process.env.BENCH_MEMORY_FILE;
  writeFileSync(`${file}.part`, JSON.stringify({
    usage: process.memoryUsage(),
    spaces: getHeapSpaceStatistics().map((s) => ({ name: s.space_name, size: s.space_size, used: s.space_used_size })),
    typeStripperLoaded: process.moduleLoadList.some((m) => m.includes('amaro')),
    fetchLoaded: process.moduleLoadList.some((m) => m.includes('undici')),
    modules: [...loaded],
  }));
  renameSync(`${file}.part`, file);
});
