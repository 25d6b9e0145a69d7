// The public profile page of an account with 20 posts, served to strangers from the page cache
// (http/web/public-page-cache.ts), against `GET /api/v1/accounts/:id/statuses?limit=20` for the same posts, both
// asked without a token or cookie. Part of `npm run bench` (bench/run.ts); `node bench/public-pages.ts` runs it alone.
import { accountMaker, api, benchSettings, cleanUpBench, loadPage, median, startServer, waitHealthy } from './common.ts';
import { ensureDatabase, migrate } from '../storage/db.ts';
import { Redis } from 'ioredis';


/** Makes the account and its posts through the API of the server at `base`, then measures and prints. */
export async function benchPublicProfile(base: string, register: (username: string) => Promise<string>): Promise<void> {
  const token = await register('profile');
  const me = await api(base, '/api/v1/accounts/verify_credentials', { token });
  await api(base, '/api/v1/accounts/update_credentials', { method: 'PATCH', token, body: { display_name: 'Profile Bench', note: 'A profile with twenty posts, read by strangers.' } });
  for (let i = 0; i < 20; i++) {
    await api(base, '/api/v1/statuses', { method: 'POST', token, body: { status: `Post ${i} on a public profile: a thought long enough to look like a real post, with a link https://example.com/notes/${i} and #benchmarks. ${'More words follow here. '.repeat(5)}` } });
  }
  const pageUrl = `${base}/@profile`;
  const apiUrl = `${base}/api/v1/accounts/${me.id}/statuses?limit=20`;
  const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
  const page = await fetch(pageUrl, { headers: browser });
  const pageBytes = (await page.arrayBuffer()).byteLength;
  const statuses = (await api(base, apiUrl.slice(base.length))) as unknown[];
  const apiBytes = Buffer.byteLength(JSON.stringify(statuses));

  // Both warmed up first, then alternating rounds, so that the machine's other work touches both sides alike.
  await loadPage(pageUrl, browser, 3);
  await loadPage(apiUrl, {}, 3);
  const rounds: { page: Awaited<ReturnType<typeof loadPage>>; api: Awaited<ReturnType<typeof loadPage>> }[] = [];
  for (let i = 0; i < 4; i++) rounds.push({ page: await loadPage(pageUrl, browser, 5), api: await loadPage(apiUrl, {}, 5) });
  const ratios = rounds.map((r) => r.page.rps / r.api.rps);

  console.log(`\npublic profile page /@profile (${page.status}, ${pageBytes} bytes of HTML) vs. GET /api/v1/accounts/:id/statuses?limit=20 (${statuses.length} statuses, ${apiBytes} bytes), both without a token or cookie (autocannon, 32 connections, after a warm-up, 4 alternating rounds of 5 s)`);
  for (const [i, r] of rounds.entries()) {
    console.log(`  round ${i + 1}: page ${r.page.rps} req/s (p50 ${r.page.p50} ms, p99 ${r.page.p99} ms, errors ${r.page.errors})  |  API ${r.api.rps} req/s (p50 ${r.api.p50} ms, p99 ${r.api.p99} ms, errors ${r.api.errors})  |  ratio ${ratios[i]!.toFixed(2)}`);
  }
  console.log(`  ratio page/API, median of rounds: ${median(ratios).toFixed(2)} (target >= 0.5)`);
  // Requests autocannon left in flight are answered before the caller stops the server.
  await new Promise((r) => setTimeout(r, 500));
}

// Alone: a server of its own (as npm start runs it) on its own database and Redis prefix, removed afterwards.
if (import.meta.main) {
  const { env, config, base } = benchSettings(Number(process.env.BENCH_PORT ?? 3950));
  await ensureDatabase(config.databaseUrl);
  await migrate(config.databaseUrl);
  const server = startServer(env);
  const redis = new Redis(config.redisUrl);
  try {
    await waitHealthy(base);
    await benchPublicProfile(base, await accountMaker(base));
  } finally {
    await cleanUpBench(server, redis, config);
  }
}
