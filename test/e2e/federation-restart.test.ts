import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { healthOf } from '../../federation/health.ts';
import { listServerHealth } from '../../storage/federation-health.ts';

// Deliveries survive a stopped worker and a receiving server that is down: once both are back, each arrives once.
let a: Instance;
let b: Instance;
let dan: TestUser; // on a
let eve: TestUser; // on b, following dan

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (on: Instance, user: TestUser, method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> =>
  (await on.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) })).json();

beforeAll(async () => {
  [a, b] = await Promise.all([startHttpsInstance(), startHttpsInstance()]);
  [[dan], [eve]] = await Promise.all([registerUsers(a.app, 'dan'), registerUsers(b.app, 'eve')]);
  const danOnB = await api(b, eve, 'GET', `/api/v1/accounts/lookup?acct=dan@${a.domain}`);
  await api(b, eve, 'POST', `/api/v1/accounts/${danOnB.id}/follow`);
  await until(async () => (await api(b, eve, 'GET', `/api/v1/accounts/relationships?id[]=${danOnB.id}`))[0], (r) => r.following === true, 'b: eve follows dan');
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

it('delivers everything queued while the worker was stopped and the receiver down, each once', { timeout: 60_000 }, async () => {
  await a.stopWorkers();
  await b.goOffline();
  const posted: string[] = [];
  for (let i = 0; i < 3; i++) posted.push((await api(a, dan, 'POST', '/api/v1/statuses', { status: `while you were away, ${i}` })).uri);
  // The worker comes back first: its attempts meet a server that is down (a's record of b counts the three failed
  // deliveries), and are retried.
  a.startWorkers();
  await until(async () => { await healthOf(a.ctx).flush(); return (await listServerHealth(a.ctx.db)).find((s) => s.host === b.domain); }, (s) => (s?.delivery_failures ?? 0) >= 3, 'a: deliveries to b failed while it was down');
  await b.goOnline();

  const home = await until(async () => (await api(b, eve, 'GET', '/api/v1/timelines/home')) as Json[], (l) => posted.every((uri) => l.some((s) => s.uri === uri)), 'b: all three in eve\'s home', 30_000);
  expect(home.filter((s) => posted.includes(s.uri))).toHaveLength(3);
  // Later retries (if any were still queued) change nothing: one row per status, once both servers' queues (delayed
  // retries included) and jobs have run.
  await until(async () => (await workSettled(a.ctx, { federation: true })) && (await workSettled(b.ctx, { federation: true })), (done) => done, 'a and b: nothing left to deliver or receive');
  const { rows } = await b.ctx.db.query('SELECT uri, count(*)::int AS n FROM statuses WHERE uri = ANY($1) GROUP BY uri', [posted]);
  expect(rows).toHaveLength(3);
  for (const r of rows) expect(r.n).toBe(1);
});
