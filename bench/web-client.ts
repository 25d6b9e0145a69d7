// The signed-in home page (http/web/client-pages.ts) with 20 posts, asked with a session cookie, against
// `GET /api/v1/timelines/home?limit=20` for the same posts with a token; and what each signed-in timeline page weighs
// with 20 posts (HTML and the stylesheet; the script beside). Part of `npm run bench` (bench/run.ts);
// `node bench/web-client.ts` runs it alone.
import { accountMaker, api, benchSettings, cleanUpBench, loadPage, median, startServer, waitHealthy } from './common.ts';
import { ensureDatabase, migrate } from '../storage/db.ts';
import { Redis } from 'ioredis';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';


/** Signs in through the sign-in form, as a browser does: the session cookie. */
async function signIn(base: string, email: string, password: string): Promise<string> {
  const form = await fetch(`${base}/auth/sign_in`, { headers: { accept: 'text/html' } });
  const csrfCookie = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const csrf = /name="_csrf" value="([^"]*)"/.exec(await form.text())![1]!.replace(/&amp;/g, '&');
  const res = await fetch(`${base}/auth/sign_in`, {
    method: 'POST', redirect: 'manual',
    headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', cookie: csrfCookie },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  });
  const session = res.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('_session='));
  if (res.status !== 303 || !session) throw new Error(`sign-in answered ${res.status}`);
  return session;
}

/**
 * Makes a reader, an author with 20 posts and the rest through the API of the server at `base`, then measures and
 * prints; with the server's `pid`, its CPU time per request too.
 */
export async function benchWebClient(base: string, register: (username: string) => Promise<string>, pid?: number): Promise<void> {
  const reader = await register('webreader');
  const author = await register('webauthor');
  const authorId = (await api(base, '/api/v1/accounts/verify_credentials', { token: author })).id as string;
  await api(base, `/api/v1/accounts/${authorId}/follow`, { method: 'POST', token: reader });
  await api(base, '/api/v1/timelines/home', { token: reader });
  const list = await api(base, '/api/v1/lists', { method: 'POST', token: reader, body: { title: 'Bench' } });
  await api(base, `/api/v1/lists/${list.id}/accounts`, { method: 'POST', token: reader, body: { account_ids: [authorId] } });
  for (let i = 0; i < 20; i++) {
    // Each mentions the reader (a notification) and carries a tag: every page below has 20 posts.
    await api(base, '/api/v1/statuses', { method: 'POST', token: author, body: { status: `Post ${i} for @webreader, a thought long enough to look like a real post, with a link https://example.com/notes/${i} and #webbench. ${'More words follow here. '.repeat(5)}` } });
  }
  await new Promise((r) => setTimeout(r, 1000));
  const session = await signIn(base, 'webreader@bench.example', 'bench password');
  // The first page sets the forms' secret (`_csrf`), which a browser then sends with the session's cookie.
  const first = await fetch(`${base}/home`, { headers: { accept: 'text/html', cookie: session } });
  const formSecret = first.headers.getSetCookie().map((c) => c.split(';')[0]!).find((c) => c.startsWith('_csrf='));
  if (!formSecret) throw new Error('the home page set no _csrf cookie');
  const cookie = `${session}; ${formSecret}`;
  const page = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', cookie };
  const token = { authorization: `Bearer ${reader}` };

  const css = (await (await fetch(`${base}/assets/style.css`)).arrayBuffer()).byteLength;
  const js = (await (await fetch(`${base}/assets/client.js`)).arrayBuffer()).byteLength;
  console.log(`\nsigned-in pages with 20 posts: HTML + the stylesheet (${css} bytes; the script, ${js} bytes, beside), target < 100 KB each`);
  for (const path of ['/home', '/public/local', '/public', '/tags/webbench', `/lists/${list.id}`, '/notifications']) {
    const res = await fetch(`${base}${path}`, { headers: page });
    const html = await res.text();
    const posts = (html.match(/<article class="status"/g) ?? []).length;
    const total = Buffer.byteLength(html) + css;
    console.log(`  ${path.padEnd(22)} ${res.status}, ${posts} posts: ${Buffer.byteLength(html)} bytes of HTML, ${total} with CSS (${(total / 1024).toFixed(1)} KB) ${total < 100 * 1024 ? 'under' : 'OVER'} the target`);
  }

  const pageUrl = `${base}/home`;
  const apiUrl = `${base}/api/v1/timelines/home?limit=20`;
  const statuses = (await (await fetch(apiUrl, { headers: token })).json()) as unknown[];
  await loadPage(pageUrl, page, 3);
  await loadPage(apiUrl, token, 3);
  const rounds: { page: Awaited<ReturnType<typeof loadPage>>; api: Awaited<ReturnType<typeof loadPage>> }[] = [];
  for (let i = 0; i < 4; i++) rounds.push({ page: await loadPage(pageUrl, page, 5, pid), api: await loadPage(apiUrl, token, 5, pid) });
  const ratios = rounds.map((r) => r.page.rps / r.api.rps);
  // What one request costs the server, page against API: the rate the page would reach on the API's CPU.
  const cpuRatios = rounds.map((r) => r.api.cpuUs / r.page.cpuUs);
  const cpu = (us: number) => (Number.isNaN(us) ? '' : `, CPU ${Math.round(us)} µs/request`);
  console.log(`\nsigned-in home page /home (session cookie) vs. GET /api/v1/timelines/home?limit=20 (${statuses.length} statuses, token), the same posts (autocannon, 32 connections, after a warm-up, 4 alternating rounds of 5 s)`);
  for (const [i, r] of rounds.entries()) {
    console.log(`  round ${i + 1}: page ${r.page.rps} req/s (p50 ${r.page.p50} ms, p99 ${r.page.p99} ms, errors ${r.page.errors}${cpu(r.page.cpuUs)})  |  API ${r.api.rps} req/s (p50 ${r.api.p50} ms, p99 ${r.api.p99} ms, errors ${r.api.errors}${cpu(r.api.cpuUs)})  |  ratio ${ratios[i]!.toFixed(2)}`);
  }
  console.log(`  ratio page/API, median of rounds: ${median(ratios).toFixed(2)} (target >= 0.5)`);
  if (pid !== undefined) {
    console.log(`  server CPU per request, median of rounds: page ${Math.round(median(rounds.map((r) => r.page.cpuUs)))} µs, API ${Math.round(median(rounds.map((r) => r.api.cpuUs)))} µs: ratio API/page ${median(cpuRatios).toFixed(2)}`);
  }
  if (process.env.BENCH_WEB_FLOOR) await benchFloor(base, page, pageUrl, token, apiUrl);
  await new Promise((r) => setTimeout(r, 500));
}

/**
 * BENCH_WEB_FLOOR=1: the floor of the two answers' bytes. Bare Fastify (bench/bare-server.ts, a process of its own)
 * sends the bytes of one /home page, beside another sending those of the API's page: what the page would reach against
 * the API if everything it does but sending its bytes cost nothing.
 */
async function benchFloor(base: string, page: Record<string, string>, pageUrl: string, token: Record<string, string>, apiUrl: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fedi-web-floor-'));
  const port = Number(new URL(base).port);
  const servers: ChildProcess[] = [];
  try {
    const bare = async (url: string, headers: Record<string, string>, contentType: string, at: number) => {
      const file = join(dir, `${at}.body`);
      writeFileSync(file, Buffer.from(await (await fetch(url, { headers })).arrayBuffer()));
      const child = fork(fileURLToPath(new URL('./bare-server.ts', import.meta.url)), [], { env: { ...process.env, PORT: String(at), BODY_FILE: file, CONTENT_TYPE: contentType }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      servers.push(child);
      await new Promise((r) => child.once('message', r));
      return { url: `http://127.0.0.1:${at}/api/v1/timelines/home`, pid: child.pid!, bytes: statSync(file).size };
    };
    const pageFloor = await bare(pageUrl, page, 'text/html; charset=utf-8', port + 10);
    const apiFloor = await bare(apiUrl, token, 'application/json; charset=utf-8', port + 11);
    await loadPage(pageFloor.url, {}, 3);
    await loadPage(apiFloor.url, {}, 3);
    const rounds: { page: Awaited<ReturnType<typeof loadPage>>; api: Awaited<ReturnType<typeof loadPage>> }[] = [];
    for (let i = 0; i < 4; i++) rounds.push({ page: await loadPage(pageFloor.url, {}, 5, pageFloor.pid), api: await loadPage(apiFloor.url, {}, 5, apiFloor.pid) });
    console.log(`\nthe floor: bare Fastify sending the page's ${pageFloor.bytes} bytes vs. bare Fastify sending the API's ${apiFloor.bytes} (4 alternating rounds of 5 s)`);
    for (const [i, r] of rounds.entries()) {
      console.log(`  round ${i + 1}: page bytes ${r.page.rps} req/s (CPU ${Math.round(r.page.cpuUs)} µs/request)  |  API bytes ${r.api.rps} req/s (CPU ${Math.round(r.api.cpuUs)} µs/request)  |  ratio ${(r.page.rps / r.api.rps).toFixed(2)}`);
    }
    console.log(`  ratio, median of rounds: ${median(rounds.map((r) => r.page.rps / r.api.rps)).toFixed(2)}; CPU per request API/page ${median(rounds.map((r) => r.api.cpuUs / r.page.cpuUs)).toFixed(2)}`);
  } finally {
    for (const child of servers) child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Alone: a server of its own (as npm start runs it) on its own database and Redis prefix, removed afterwards.
if (import.meta.main) {
  const { env, config, base } = benchSettings(Number(process.env.BENCH_PORT ?? 3960));
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const server = startServer(env);
  const redis = new Redis(config.redisUrl);
  try {
    await waitHealthy(base);
    await benchWebClient(base, await accountMaker(base), server.pid);
  } finally {
    await cleanUpBench(server, redis, config);
  }
}
