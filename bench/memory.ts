// `npm run bench:memory`: the server's memory at rest. Starts it as `npm start` does (package.json's flags and
// environment) on a fresh database, sends no traffic, and after 60 s (BENCH_MEMORY_WAIT_S) reads its resident
// memory (VmRSS) and what makes it up: the node binary's pages, shared libraries, malloc, the V8 heap. Then, for the
// big dependencies, what importing each alone adds to a bare process, which is what lazy loading saves
// (BENCH_MEMORY_IMPORTS=0 leaves that out).
//
// BENCH_MEMORY_REQUEST=/api/v1/instance: as an operator checks a new server, one GET of that path once it answers,
// then the wait; the modules loaded from then on are listed (by package), which is what a first answer leaves.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { benchSettings, cleanUpBench, startCommand, startServer, waitHealthy } from './common.ts';

const PORT = 3960;
const WAIT_S = Number(process.env.BENCH_MEMORY_WAIT_S ?? 60);
const REQUEST = process.env.BENCH_MEMORY_REQUEST;
const IMPORTS = process.env.BENCH_MEMORY_IMPORTS !== '0';
const root = fileURLToPath(new URL('..', import.meta.url));
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function status(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of readFileSync(`/proc/${pid}/status`, 'utf8').matchAll(/^(Vm\w+|Rss\w+):\s+(\d+) kB/gm)) out[m[1]!] = Number(m[2]) * 1024;
  return out;
}

/** Resident bytes by mapping: the node binary, other files (native addons, libc…), malloc's heap, anonymous memory. */
function mappings(pid: number): Record<string, number> {
  const out: Record<string, number> = { 'node binary': 0, 'other files (libraries, addons)': 0, 'malloc heap': 0, 'anonymous (V8 heap, thread stacks, arenas)': 0 };
  let name = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) { name = head[1]!; continue; }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const key = name.endsWith('/bin/node') ? 'node binary' : name === '[heap]' ? 'malloc heap' : name.startsWith('/') ? 'other files (libraries, addons)' : 'anonymous (V8 heap, thread stacks, arenas)';
    out[key] = (out[key] ?? 0) + Number(rss[1]) * 1024;
  }
  return out;
}

/**
 * What importing each of `specifiers` in turn adds to a bare process's resident memory (npm start's flags): what a
 * module shares with an earlier one is counted with the earlier one, so the figures add up to the whole.
 */
function importCosts(specifiers: string[]): number[] {
  const start = startCommand();
  const code = `import { readFileSync } from 'node:fs'; const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
    const out = []; for (const s of ${JSON.stringify(specifiers)}) { const before = rss(); await import(s); await new Promise((r) => setTimeout(r, 300)); out.push(rss() - before); }
    console.log(JSON.stringify(out)); process.exit(0);`;
  const out = execFileSync(process.execPath, [...start.nodeFlags, '--input-type=module', '-e', code], { cwd: root, env: { ...process.env, ...start.env } });
  return JSON.parse(out.toString()) as number[];
}

async function main() {
  const { env, config, base } = benchSettings(PORT);
  const usageFile = join(mkdtempSync(join(tmpdir(), 'fedi-memory-')), 'usage.json');
  const spawnedAt = Date.now();
  const server = startServer({ ...env, BENCH_MEMORY_FILE: usageFile }, { nodeFlags: ['--import', './bench/memory-probe.js'] });
  const redis = new Redis(config.redisUrl);
  try {
    await waitHealthy(base);
    const answeredAt = Date.now();
    if (REQUEST) {
      const res = await fetch(`${base}${REQUEST}`);
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`${REQUEST}: ${res.status}`);
    }
    await new Promise((r) => setTimeout(r, WAIT_S * 1000));
    const pid = server.pid!;
    const s = status(pid);
    const maps = mappings(pid);
    server.kill('SIGUSR2');
    for (let i = 0; i < 50 && !existsSync(usageFile); i++) await new Promise((r) => setTimeout(r, 100));
    const probe = JSON.parse(readFileSync(usageFile, 'utf8')) as { usage: NodeJS.MemoryUsage; spaces: { name: string; size: number; used: number }[]; typeStripperLoaded: boolean; fetchLoaded: boolean; modules: [string, number][] };
    const u = probe.usage;
    // The machine's load while it ran, to judge a figure by (memory is not very sensitive to it).
    console.log(`\nserver at rest, ${WAIT_S} s after ${REQUEST ? `one GET ${REQUEST} once it answered` : 'start'} (npm start: ${JSON.stringify(startCommand())}, fresh database, no traffic; load average ${loadavg()[0]!.toFixed(1)})`);
    console.log(`  VmRSS ${mb(s.VmRSS!)} (peak VmHWM ${mb(s.VmHWM!)}): anonymous ${mb(s.RssAnon!)}, file-backed ${mb(s.RssFile!)}`);
    for (const [k, v] of Object.entries(maps)) console.log(`    ${k}: ${mb(v)}`);
    console.log(`  V8 heap: ${mb(u.heapTotal)} reserved, ${mb(u.heapUsed)} used (${probe.spaces.filter((x) => x.size > 0).map((x) => `${x.name} ${mb(x.used)}/${mb(x.size)}`).join(', ')})`);
    console.log(`  external ${mb(u.external)} (of which array buffers ${mb(u.arrayBuffers)}); TypeScript stripper loaded: ${probe.typeStripperLoaded} (a cold compile cache loads it: ~17 MB); Node's fetch (undici) loaded: ${probe.fetchLoaded}`);
    if (REQUEST) {
      // By package (node_modules/<name> or <@scope/name>), or the project's own file; the health check's own first
      // answer is before `answeredAt`.
      const later = new Map<string, number>();
      for (const [url, at] of probe.modules) {
        if (at < answeredAt) continue;
        const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
        const what = m ? m[1]! : url.startsWith('file://') ? url.slice(`file://${root}`.length) : url;
        later.set(what, (later.get(what) ?? 0) + 1);
      }
      console.log(`  loaded after the server first answered (${((answeredAt - spawnedAt) / 1000).toFixed(1)} s after it was started): ${[...later].map(([what, n]) => n > 1 ? `${what} (${n})` : what).join(', ') || 'nothing'}`);
    }
    if (!IMPORTS) return;
    const specs = ['pg', 'ioredis', 'fastify', 'typebox', 'bullmq', 'node-pg-migrate', '@fedify/fedify', 'sanitize-html', 'prom-client', './server.ts', 'sharp', '@aws-sdk/client-s3'];
    const costs = importCosts(specs);
    console.log('\nwhat importing each in turn adds to a bare process (VmRSS; shared code counts with the first to load it):');
    for (const [i, spec] of specs.entries()) {
      const note = spec === './server.ts' ? ' (the rest of what the server loads at start: its own modules and smaller dependencies)' : spec === 'sharp' || spec === '@aws-sdk/client-s3' || spec === 'sanitize-html' ? ' (loaded at first use, so not at rest)' : '';
      console.log(`  ${spec}: ${mb(costs[i]!)}${note}`);
    }
    console.log('');
  } finally {
    await cleanUpBench(server, redis, config, env.DATA_DIR);
  }
}

await main();
