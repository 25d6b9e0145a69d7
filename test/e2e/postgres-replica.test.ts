import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { OwnPostgres } from '../helpers/own-services.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { parseLsn } from '../../storage/replica.ts';

// A server on a PostgreSQL primary of this file's own with one streaming replica (DATABASE_REPLICA_URL): reads that
// may be a little behind are served by the replica, a viewer reads their own writes at once even while the replica
// replays nothing, and a stopped replica leaves the primary answering.
const DATABASE = 'fedi_replica_test';
let primary: OwnPostgres;
let replica: OwnPostgres;
let s: TestServer;
let alice: TestUser; // writes
let bob: TestUser; // another viewer

/** A statement on the replica itself (pausing and resuming its replay). */
async function onReplica(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: replica.url(DATABASE) });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const theReplica = () => s.ctx.replicas!.replicas[0]!;

/** Waits until the server has seen the replica replay everything the primary has now. */
async function replicaCaughtUp(): Promise<void> {
  const { rows } = await s.ctx.db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  const target = parseLsn(rows[0]!.lsn);
  await until(() => theReplica().usable && (theReplica().replayed ?? 0n) >= target, 10_000, 'the replica catches up');
}

const account = (id: string, token?: string) => s.app.inject({ method: 'GET', url: `/api/v1/accounts/${id}`, headers: token ? bearer(token) : {} });
const statusTexts = async (id: string, token: string) => {
  const res = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${id}/statuses`, headers: bearer(token) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { content: string }[]).map((st) => st.content.replace(/<[^>]+>/g, ''));
};

beforeAll(async () => {
  primary = await OwnPostgres.start();
  replica = await primary.startReplica();
  s = await startTestServer({ DATABASE_URL: primary.url(DATABASE), DATABASE_REPLICA_URL: replica.url(DATABASE), ROLE: 'web' });
  [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
  await replicaCaughtUp();
}, 60_000);

afterAll(async () => {
  await onReplica('SELECT pg_wal_replay_resume()').catch(() => {});
  await s?.close();
  await replica?.remove();
  await primary?.remove();
});

describe('read replicas (DATABASE_REPLICA_URL)', () => {
  it('serves a public account read from the replica', async () => {
    const onReplicaPool = vi.spyOn(theReplica().pool, 'query');
    try {
      const res = await account(alice.id);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().username).toBe('alice');
      expect(onReplicaPool).toHaveBeenCalled();
    } finally {
      onReplicaPool.mockRestore();
    }
  });

  it('serves search, suggestions and ActivityPub collection pages from the replica', async () => {
    const reads: [string, Record<string, string>][] = [
      ['/api/v2/search?q=alice@test.local&type=accounts', {}],
      ['/api/v2/suggestions', bearer(bob.token)],
      ['/users/alice/outbox?cursor=', { accept: 'application/activity+json' }],
    ];
    for (const [url, headers] of reads) {
      const onReplicaPool = vi.spyOn(theReplica().pool, 'query');
      try {
        const res = await s.app.inject({ method: 'GET', url, headers });
        expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
        expect(onReplicaPool, url).toHaveBeenCalled();
      } finally {
        onReplicaPool.mockRestore();
      }
    }
  });

  it('a writer reads their own profile edit and post at once while the replica replays nothing; others see the replica', async () => {
    await replicaCaughtUp();
    await onReplica('SELECT pg_wal_replay_pause()');
    try {
      const edit = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(alice.token), payload: { display_name: 'Alice Edited' } });
      expect(edit.statusCode, edit.body).toBe(200);
      const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'fresh from the primary' } });
      expect(posted.statusCode, posted.body).toBe(200);

      // The writer: from the primary, at once.
      expect((await account(alice.id, alice.token)).json().display_name).toBe('Alice Edited');
      expect(await statusTexts(alice.id, alice.token)).toContain('fresh from the primary');
      // Another viewer and an anonymous one: from the paused replica, which has neither yet (proof it is read from).
      expect((await account(alice.id, bob.token)).json().display_name).not.toBe('Alice Edited');
      expect((await account(alice.id)).json().display_name).not.toBe('Alice Edited');
      expect(await statusTexts(alice.id, bob.token)).not.toContain('fresh from the primary');
    } finally {
      await onReplica('SELECT pg_wal_replay_resume()');
    }
    // Replayed: everyone sees it.
    await replicaCaughtUp();
    expect((await account(alice.id, bob.token)).json().display_name).toBe('Alice Edited');
    expect(await statusTexts(alice.id, bob.token)).toContain('fresh from the primary');
  });

  it('a profile edited on a web page is read at once through a token of the same account', async () => {
    const browser = new WebClient(s.app);
    expect((await browser.signIn(alice.email, alice.password)).statusCode).toBe(303);
    const page = await browser.get('/settings/profile');
    await replicaCaughtUp();
    await onReplica('SELECT pg_wal_replay_pause()');
    try {
      const body = await multipart({ _csrf: csrfOf(page.body), display_name: 'Alice on the Web', note: '' });
      const res = await s.app.inject({ method: 'POST', url: '/settings/profile', payload: body.payload, headers: { ...body.headers, cookie: browser.jar.header() } });
      expect(res.statusCode, res.body).toBe(303);
      expect((await account(alice.id, alice.token)).json().display_name).toBe('Alice on the Web');
      expect((await account(alice.id, bob.token)).json().display_name).not.toBe('Alice on the Web');
    } finally {
      await onReplica('SELECT pg_wal_replay_resume()');
    }
  });

  it('a replica further behind than the bound is not read from', async () => {
    await replicaCaughtUp();
    const replicas = s.ctx.replicas!;
    await onReplica('SELECT pg_wal_replay_pause()');
    try {
      const edit = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(alice.token), payload: { display_name: 'Alice Lagging' } });
      expect(edit.statusCode, edit.body).toBe(200);
      // A few polls see the primary past the edit; then, rather than waiting out the 10 s bound, the server's
      // view of the primary's past is moved back by a minute.
      await new Promise((r) => setTimeout(r, 400));
      for (const sample of (replicas as unknown as { primaryLsns: { at: number }[] }).primaryLsns) sample.at -= 60_000;
      await until(() => !theReplica().usable, 5000, 'the lagging replica is set aside');
      expect((await account(alice.id, bob.token)).json().display_name).toBe('Alice Lagging');
    } finally {
      await onReplica('SELECT pg_wal_replay_resume()');
    }
    await replicaCaughtUp();
  });

  it('a stopped replica leaves the primary answering', async () => {
    await replica.stop('fast');
    // At once, before the poll has noticed: the read falls back to the primary.
    const first = await account(bob.id);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().username).toBe('bob');
    await until(() => !theReplica().usable, 5000, 'the stopped replica is set aside');
    // A read sent to the replica between its stop and the next poll (as if the poll had not run yet): tried there,
    // answered from the primary.
    const tried = vi.spyOn(theReplica().pool, 'query');
    try {
      theReplica().usable = true;
      const between = await account(alice.id);
      expect(between.statusCode, between.body).toBe(200);
      expect(between.json().display_name).toBe('Alice Lagging');
      expect(tried).toHaveBeenCalled();
    } finally {
      tried.mockRestore();
    }
    const again = await account(alice.id, bob.token);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().display_name).toBe('Alice Lagging');
    expect(await statusTexts(alice.id, bob.token)).toContain('fresh from the primary');
    // Started again, it is read from once it answers.
    await replica.start();
    await replicaCaughtUp();
    const onReplicaPool = vi.spyOn(theReplica().pool, 'query');
    try {
      expect((await account(alice.id)).statusCode).toBe(200);
      expect(onReplicaPool).toHaveBeenCalled();
    } finally {
      onReplicaPool.mockRestore();
    }
  });
});
