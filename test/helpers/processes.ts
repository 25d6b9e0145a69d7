// Real server processes (`node main.ts`, as `npm start` runs it) for tests that need more than one, or need to kill
// one: started with only the settings given, their output kept for failure messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Proc {
  child: ChildProcess;
  output: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const running: Proc[] = [];

/** `node main.ts` with only the given settings (and PATH/HOME), so nothing from this shell leaks in. */
export function startProcess(settings: Record<string, string>): Proc {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...settings };
  // Under vitest run through npm this is Node 24, which runs the TypeScript directly.
  const child = spawn(process.execPath, ['main.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc = { child, output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`, stderr: () => stderr, exited };
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
export async function api(base: string, path: string, init: { method?: string; token?: string; body?: Record<string, unknown> } = {}) {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : null) as Json, text };
}
