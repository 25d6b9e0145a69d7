// Real server processes (`node main.ts`, as `npm start` runs it) for tests that need more than one, or need to kill
// one: started with only the settings given, their output kept for failure messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Node's compiled-code cache, where `npm start` keeps it: a process after the first starts on half the CPU. */
export const NODE_COMPILE_CACHE = join(root, 'node_modules/.cache/node-compile-cache');

export interface Proc {
  child: ChildProcess;
  output: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** For a process started `held`: lets main.ts run. (Nothing otherwise.) */
  release: () => void;
}

/**
 * What a held process runs before main.ts (`node --import`): it loads the modules main.ts imports (a few seconds on a
 * busy machine, the larger part of a start), then waits for a line on its stdin before main.ts itself runs. Loading
 * code connects to nothing: until released, the process has done none of a server's work.
 */
function heldPreload(): string {
  const main = readFileSync(join(root, 'main.ts'), 'utf8');
  const modules = [...main.matchAll(/^import (?!type )[^;]*? from '(\.\/[^']+)';/gm)].map((m) => new URL(m[1]!, pathToFileURL(join(root, 'main.ts'))).href);
  const code = `for (const m of ${JSON.stringify(modules)}) await import(m);
await new Promise((resolve) => process.stdin.once('data', resolve));
process.stdin.destroy();`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

const running: Proc[] = [];

/**
 * `node main.ts` with only the given settings (and PATH/HOME), so nothing from this shell leaks in. `held`: the
 * process loads its code and waits for `release()` before main.ts runs (see heldPreload), so that it can be made
 * ready ahead of the moment it is to start.
 */
export function startProcess(settings: Record<string, string>, options: { held?: boolean } = {}): Proc {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_COMPILE_CACHE: NODE_COMPILE_CACHE, ...settings };
  // Under vitest run through npm this is Node 24, which runs the TypeScript directly.
  const args = options.held ? ['--import', heldPreload(), 'main.ts'] : ['main.ts'];
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: [options.held ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  // A held process ended before its release must not make the write fail loudly.
  child.stdin?.on('error', () => {});
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const release = () => {
    if (child.stdin && !child.stdin.destroyed) child.stdin.end('go\n');
  };
  const proc = { child, output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`, stderr: () => stderr, exited, release };
  running.push(proc);
  return proc;
}

/** Waits until `url`/health answers 200 (or the process exits, or `ms` pass: then throws with its output). */
export async function waitForHealth(url: string, proc: Proc, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (Date.now() < deadline && !exited) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become healthy${exited ? ' (the process exited)' : ''}\n${proc.output()}`);
}

/** Stops every process started here: SIGTERM, then SIGKILL after 5 s. */
export async function stopAll(): Promise<void> {
  await Promise.all(running.splice(0).map(async (p) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return;
    p.child.kill('SIGTERM');
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 5000);
    await p.exited;
    clearTimeout(timer);
  }));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field by the tests
type Json = any;

/** A JSON request to a process's API. */
export async function api(base: string, path: string, init: { method?: string; token?: string; body?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : null) as Json, text };
}
