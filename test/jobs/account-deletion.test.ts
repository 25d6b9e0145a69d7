import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { until } from '../helpers/instances.ts';
import { rowsNaming } from '../helpers/leftovers.ts';
import { deleteAccountJob } from '../../jobs/account-deletion.ts';
import { startAccountDeletion } from '../../services/account-deletion.ts';
import { moderationDeps } from '../../services/moderation.ts';
import { findAccountById } from '../../storage/accounts.ts';
import { pendingOutbox, removeFromOutbox } from '../../storage/outbox.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

// The deletion job (jobs/account-deletion.ts): bounded batches that queue their next run, idempotent runs, and the
// operators' ways in (DELETE /api/v1/admin/accounts/:id, `npm run cli -- accounts delete`).
let s: TestServer;
let mod: TestUser, big: TestUser, fans: TestUser[];
let victim: TestUser, leaver: TestUser; // deleted by the operators' ways in, below

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  s = await startTestServer();
  // The accounts are independent of each other: registered at once.
  const moderator = async () => {
    const client = await createApp(s.app, 'read write follow push admin:read admin:write');
    const user = await registerUser(s.app, client, 'moddy', 'read write admin:read admin:write');
    await makeAdmin(s, user);
    return user;
  };
  const plain = async (name: string) => registerUser(s.app, await createApp(s.app), name);
  [mod, [big, ...fans], victim, leaver] = await Promise.all([moderator(), registerUsers(s.app, 'big', 'fan1', 'fan2', 'fan3'), plain('victim'), plain('leaver')]);
});
afterAll(async () => s?.close());

const api = async (user: TestUser, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: (res.body ? res.json() : {}) as Json };
};
const userIdOf = async (accountId: string) =>
  (await s.ctx.db.query<{ id: string }>(`SELECT id::text FROM users WHERE account_id = $1`, [accountId])).rows[0]?.id ?? null;
const deletionRows = async () => (await pendingOutbox(s.ctx.db, 0, 100)).filter((r) => r.kind === 'deleteAccount');

describe('the deletion job', () => {
  it('works in batches, each run queueing the next through the outbox, and a run done twice does no harm', async () => {
    await s.stopWorkers();
    try {
      for (const fan of fans) expect((await api(fan, 'POST', `/api/v1/accounts/${big.id}/follow`)).status).toBe(200);
      // More statuses than one batch takes, written directly (the job's batches, not posting, are under test).
      await s.ctx.db.query(
        `INSERT INTO statuses (account_id, text, content, visibility) SELECT $1, 'n' || g, '<p>n' || g || '</p>', 'public' FROM generate_series(1, 130) g`,
        [big.id],
      );
      const fanPost = (await api(fans[0]!, 'POST', '/api/v1/statuses', { status: 'a fan post' })).body;
      expect((await api(big, 'POST', `/api/v1/statuses/${fanPost.id}/favourite`)).status).toBe(200);
      const userId = await userIdOf(big.id);

      await startAccountDeletion(moderationDeps(s.ctx), (await findAccountById(s.ctx.db, big.id))!);
      const first = await deletionRows();
      expect(first).toHaveLength(1);
      expect(first[0]!.payload).toMatchObject({ accountId: big.id, step: 'deliver' });
      // Suspended and signed out in the same transaction that queued the job.
      expect((await findAccountById(s.ctx.db, big.id))!.suspended_at).not.toBeNull();
      expect((await api(big, 'GET', '/api/v1/accounts/verify_credentials')).status).toBe(401);

      // As the worker does: run the job, then remove its row. One batch per run. A run done again (its worker died
      // before removing its row) queues a second successor: both chains finish, doing nothing twice.
      let runs = 0;
      const steps = new Set<string>();
      for (let rows = first; rows.length > 0; rows = await deletionRows()) {
        expect(rows.length).toBeLessThanOrEqual(2);
        for (const row of rows) {
          steps.add(String(row.payload.step));
          await deleteAccountJob(s.ctx, row.payload as { accountId: string; step: string }, { runMs: 0 });
          if (runs === 3) await deleteAccountJob(s.ctx, row.payload as { accountId: string; step: string }, { runMs: 0 });
          await removeFromOutbox(s.ctx.db, row.id);
          runs += 1;
        }
        expect(runs).toBeLessThan(300);
      }
      // 130 statuses take three batches of 50; each step at least one run.
      expect(runs).toBeGreaterThanOrEqual(10);
      expect([...steps]).toEqual(expect.arrayContaining(['statuses', 'follows', 'references', 'profile']));
      expect(await rowsNaming(s.ctx.db, big.id, userId)).toEqual({});
      expect((await s.ctx.db.query(`SELECT favourites_count FROM statuses WHERE id = $1`, [fanPost.id])).rows[0].favourites_count).toBe(0);
      for (const fan of fans) expect((await api(fan, 'GET', `/api/v1/accounts/${fan.id}`)).body.following_count).toBe(0);
      // A run of an account that is not marked deleted removes nothing.
      await deleteAccountJob(s.ctx, { accountId: fans[1]!.id, step: 'statuses' });
      expect((await api(fans[1]!, 'GET', '/api/v1/accounts/verify_credentials')).status).toBe(200);
    } finally {
      // The jobs queued for the rows above find nothing left to do.
      s.startWorkers();
    }
  });
});

describe('DELETE /api/v1/admin/accounts/:id', () => {
  it('needs the scope and a suspended account (403 otherwise), then answers the account and deletes it', async () => {
    expect((await api(victim, 'POST', '/api/v1/statuses', { status: 'soon gone' })).status).toBe(200);
    expect((await api(fans[2]!, 'DELETE', `/api/v1/admin/accounts/${victim.id}`)).status).toBe(403);
    const notSuspended = await api(mod, 'DELETE', `/api/v1/admin/accounts/${victim.id}`);
    expect(notSuspended.status).toBe(403);
    expect(notSuspended.body.error).toBeTruthy();
    expect((await api(mod, 'DELETE', '/api/v1/admin/accounts/999999999')).status).toBe(404);
    expect((await findAccountById(s.ctx.db, victim.id))!.deleted_at).toBeNull();

    expect((await api(mod, 'POST', `/api/v1/admin/accounts/${victim.id}/action`, { type: 'suspend' })).status).toBe(200);
    const userId = await userIdOf(victim.id);
    const res = await api(mod, 'DELETE', `/api/v1/admin/accounts/${victim.id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id: victim.id, username: 'victim', suspended: true });
    // The job's runs done (each removes its outbox row after queueing the next), then the rows checked.
    await until(deletionRows, (rows) => rows.length === 0, 'the deletion\'s runs are done');
    await until(async () => rowsNaming(s.ctx.db, victim.id, userId), (left) => Object.keys(left).length === 0, 'the victim\'s rows are gone');
    expect((await findAccountById(s.ctx.db, victim.id))!).toMatchObject({ username: 'victim', display_name: '', statuses_count: 0 });
    expect((await s.app.inject({ method: 'GET', url: '/users/victim', headers: { accept: 'application/activity+json' } })).statusCode).toBe(410);
  });
});

describe('npm run cli -- accounts delete', () => {
  const cli = async (...args: string[]) => {
    const lines: string[] = [];
    await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what),
      { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix, config: s.config });
    return lines;
  };

  it('deletes an account by name (the running server\'s worker does the rest); refuses unknown and deleted ones', async () => {
    expect((await api(leaver, 'POST', '/api/v1/statuses', { status: 'bye' })).status).toBe(200);
    const userId = await userIdOf(leaver.id);
    await expect(cli('accounts', 'delete', 'nobody')).rejects.toThrow(/no account named nobody/);
    expect(await cli('accounts', 'delete', 'leaver')).toEqual(['leaver is suspended; its data is being deleted']);
    await until(async () => (await api(leaver, 'GET', '/api/v1/accounts/verify_credentials')).status, (st) => st === 401, 'the leaver\'s token is refused');
    // The CLI has no queue: the outbox row waits for the sweeper, which this test stands in for.
    for (const row of await deletionRows()) await s.ctx.jobs.enqueue(row);
    await until(deletionRows, (rows) => rows.length === 0, 'the deletion\'s runs are done');
    await until(async () => rowsNaming(s.ctx.db, leaver.id, userId), (left) => Object.keys(left).length === 0, 'the leaver\'s rows are gone');
    await expect(cli('accounts', 'delete', 'leaver')).rejects.toThrow(/already deleted/);
  });
});
