import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { ActorRegistry } from '../../actors/registry.ts';
import { ApiError } from '../../errors.ts';
import { LiveDeliveries } from '../../services/live-deliveries.ts';

let s: TestServer;
let ann: TestUser;
let ben: TestUser;
let cy: TestUser;

// Short enough for the suite, long enough that a loaded machine (the whole suite at once) does not stop an actor
// between two messages a test sends back to back.
const IDLE_MS = 300;

beforeAll(async () => {
  s = await startTestServer({ ACTOR_IDLE_MS: String(IDLE_MS) });
  [ann, ben, cy] = await registerUsers(s.app, 'ann', 'ben', 'cy');
});
afterAll(async () => s?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitUntil(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await sleep(10);
  return check();
}

async function followRow(accountId: string, targetId: string): Promise<boolean> {
  const { rowCount } = await s.ctx.db.query('SELECT 1 FROM follows WHERE account_id = $1 AND target_account_id = $2', [accountId, targetId]);
  return rowCount === 1;
}

describe('the server\'s actor registry (ACTOR_IDLE_MS=300)', () => {
  it('spawns an account\'s actor on its first message, stops it when idle, and spawns it again', async () => {
    // Registration itself sends no actor messages; anything left from setup has gone idle.
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);

    expect(await s.ctx.actors.ask(ann.id, { type: 'follow', targetId: ben.id, options: {} })).toBe('followed');
    expect(s.ctx.actors.size).toBe(1);
    expect(await followRow(ann.id, ben.id)).toBe(true);

    // Still alive shortly after; gone once idle for longer than ACTOR_IDLE_MS.
    await sleep(IDLE_MS / 4);
    expect(s.ctx.actors.size).toBe(1);
    const started = Date.now();
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);

    expect(await s.ctx.actors.ask(ann.id, { type: 'unfollow', targetId: ben.id })).toBe(true);
    expect(s.ctx.actors.size).toBe(1);
    expect(await followRow(ann.id, ben.id)).toBe(false);
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
  });

  it('keeps one actor per account, each stopping on its own', async () => {
    await Promise.all([
      s.ctx.actors.ask(ann.id, { type: 'follow', targetId: cy.id, options: {} }),
      s.ctx.actors.ask(ben.id, { type: 'follow', targetId: cy.id, options: {} }),
      s.ctx.actors.ask(ann.id, { type: 'follow', targetId: ben.id, options: {} }),
    ]);
    expect(s.ctx.actors.size).toBe(2);
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
    const { rows } = await s.ctx.db.query('SELECT followers_count FROM accounts WHERE id = $1', [cy.id]);
    expect(rows[0].followers_count).toBe(2);
  });

  it('a message that keeps coming keeps the actor alive', async () => {
    await s.ctx.actors.ask(cy.id, { type: 'follow', targetId: ann.id, options: {} });
    for (let i = 0; i < 5; i++) {
      await sleep(IDLE_MS / 2);
      expect(s.ctx.actors.size).toBe(1);
      await s.ctx.actors.ask(cy.id, { type: 'follow', targetId: ann.id, options: { notify: i % 2 === 0 } });
    }
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
  });

  it('hands an error raised by a message back to the caller, and keeps working', async () => {
    const unknown = s.ctx.actors.ask(ann.id, { type: 'follow', targetId: '424242', options: {} });
    await expect(unknown).rejects.toBeInstanceOf(ApiError);
    await expect(unknown).rejects.toMatchObject({ statusCode: 404, message: 'Record not found' });
    expect(s.ctx.actors.size).toBe(1);
    await expect(s.ctx.actors.ask(ann.id, { type: 'follow', targetId: ann.id, options: {} })).rejects.toMatchObject({ statusCode: 403 });
    // The same actor goes on with the next message.
    expect(await s.ctx.actors.ask(ann.id, { type: 'unfollow', targetId: cy.id })).toBe(true);
    expect(await followRow(ann.id, cy.id)).toBe(false);
    expect(s.ctx.actors.size).toBe(1);

    // And after an error, then idleness, it comes back as well.
    await expect(s.ctx.actors.ask(ann.id, { type: 'authorizeFollowRequest', requesterId: ben.id })).resolves.toBe(false);
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
    await expect(s.ctx.actors.ask(ann.id, { type: 'follow', targetId: '1', options: {} })).rejects.toMatchObject({ statusCode: 404 });
    expect(await s.ctx.actors.ask(ann.id, { type: 'follow', targetId: cy.id, options: {} })).toBe('followed');
  });

  it('answers messages sent right as the actor stops for idleness', async () => {
    // Each ask lands near the idle deadline: before it, on it, or just after the stop.
    for (let i = 0; i < 12; i++) {
      await sleep(IDLE_MS - 6 + (i % 4) * 4);
      const t0 = Date.now();
      const outcome = await s.ctx.actors.ask(ben.id, i % 2 === 0
        ? { type: 'unfollow', targetId: ann.id }
        : { type: 'follow', targetId: ann.id, options: {} });
      expect(outcome).toBe(i % 2 === 0 ? (i > 0) : 'followed');
      expect(Date.now() - t0).toBeLessThan(2000);
    }
    expect(await followRow(ben.id, ann.id)).toBe(true);
    const { rows } = await s.ctx.db.query('SELECT following_count FROM accounts WHERE id = $1', [ben.id]);
    expect(rows[0].following_count).toBe(2);
  });

  it('applies one account\'s messages one at a time, in the order sent', async () => {
    const outcomes = await Promise.all([
      s.ctx.actors.ask(cy.id, { type: 'unfollow', targetId: ben.id }),
      s.ctx.actors.ask(cy.id, { type: 'follow', targetId: ben.id, options: {} }),
      s.ctx.actors.ask(cy.id, { type: 'unfollow', targetId: ben.id }),
      s.ctx.actors.ask(cy.id, { type: 'follow', targetId: ben.id, options: { reblogs: false } }),
      s.ctx.actors.ask(cy.id, { type: 'follow', targetId: ben.id, options: { notify: true } }),
    ]);
    expect(outcomes).toEqual([false, 'followed', true, 'followed', 'updated']);
    const { rows } = await s.ctx.db.query('SELECT show_reblogs, notify FROM follows WHERE account_id = $1 AND target_account_id = $2', [cy.id, ben.id]);
    expect(rows).toEqual([{ show_reblogs: false, notify: true }]);
  });

  it('serves the HTTP API through the same actors', async () => {
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
    const res = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${cy.id}/follow`, headers: bearer(ben.token), payload: { notify: true } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ following: true, notifying: true });
    expect(s.ctx.actors.size).toBe(1);
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
    const again = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${cy.id}/unfollow`, headers: bearer(ben.token) });
    expect(again.json().following).toBe(false);
  });
});

describe('an ActorRegistry of its own (idleMs 50) over the same database', () => {
  let registry: ActorRegistry;

  beforeAll(() => {
    const { db, feeds, listFeeds, jobs, config, versions, events } = s.ctx;
    registry = new ActorRegistry({ db, feeds, listFeeds, jobs, config, versions, events }, { idleMs: 50, queryTimeoutMs: 5000 });
  });
  afterAll(() => registry?.stop());

  it('spawns, stops after 50 ms idle, and spawns again, many times over', async () => {
    expect(registry.size).toBe(0);
    for (let round = 0; round < 4; round++) {
      const outcome = await registry.ask(ann.id, round % 2 === 0
        ? { type: 'unfollow', targetId: cy.id }
        : { type: 'follow', targetId: cy.id, options: {} });
      expect(outcome).toBe(round % 2 === 0 ? true : 'followed');
      expect(registry.size).toBe(1);
      expect(await waitUntil(() => registry.size === 0, 1000)).toBe(true);
    }
    expect(await followRow(ann.id, cy.id)).toBe(true);
  });

  it('passes errors back and keeps going', async () => {
    await expect(registry.ask(cy.id, { type: 'follow', targetId: '77', options: {} })).rejects.toBeInstanceOf(ApiError);
    expect(await registry.ask(cy.id, { type: 'rejectFollowRequest', requesterId: ann.id })).toBe(false);
    expect(registry.size).toBe(1);
  });

  it('refuses work once stopped', async () => {
    const other = new ActorRegistry({ db: s.ctx.db, feeds: s.ctx.feeds, listFeeds: s.ctx.listFeeds, jobs: s.ctx.jobs, config: s.ctx.config, versions: s.ctx.versions, events: s.ctx.events }, { idleMs: 50, queryTimeoutMs: 1000 });
    expect(await other.ask(ben.id, { type: 'unfollow', targetId: '1' })).toBe(false);
    other.stop();
    expect(other.size).toBe(0);
    await expect(other.ask(ben.id, { type: 'unfollow', targetId: '1' })).rejects.toThrow();
  });
});

describe('home feed additions gathered by an ActorRegistry', () => {
  it('go in batches, and one follower whose feed does not answer holds up only its own batch', async () => {
    // Feeds of their own, whose additions for one account never finish (a follower's actor stuck on something slow).
    const stuckId = cy.id;
    const added: { accountId: string; statusIds: string[] }[] = [];
    const feeds = Object.create(s.ctx.feeds) as typeof s.ctx.feeds;
    feeds.add = (accountId: string, statusIds: string[]) => {
      added.push({ accountId, statusIds });
      return accountId === stuckId ? new Promise<void>(() => {}) : Promise.resolve();
    };
    // A timeout of 1.5 s (the stuck batch's wait): well past the 1 s the other batches are allowed below, so a batch
    // held up by the stuck one still fails that bound.
    const registry = new ActorRegistry({ db: s.ctx.db, feeds, listFeeds: s.ctx.listFeeds, jobs: s.ctx.jobs, config: s.ctx.config, versions: s.ctx.versions, events: s.ctx.events }, { idleMs: 5_000, queryTimeoutMs: 1_500 });
    try {
      // Two statuses for the same followers in one turn: one message (one addition) each, with both.
      await Promise.all([registry.addToHomeFeeds([ann.id, ben.id], '1001'), registry.addToHomeFeeds([ann.id, ben.id], '1002')]);
      expect(added).toEqual([{ accountId: ann.id, statusIds: ['1001', '1002'] }, { accountId: ben.id, statusIds: ['1001', '1002'] }]);
      // A batch that waits on the stuck follower, then others: they go after a short gathering, not after it.
      const stuck = registry.addToHomeFeeds([stuckId, ann.id], '1003');
      stuck.catch(() => {});
      await sleep(20);
      const sent = Date.now();
      await registry.addToHomeFeeds([ben.id], '1004');
      await registry.addToHomeFeeds([ann.id, ben.id], '1005');
      expect(Date.now() - sent).toBeLessThan(1_000);
      // The stuck batch fails by the registry's timeout, as any unanswered message does.
      await expect(stuck).rejects.toThrow('Query Timeout');
      // One still gathering when the registry stops is refused, not sent to stopped actors.
      const late = registry.addToHomeFeeds([ann.id], '1006');
      registry.stop();
      await expect(late).rejects.toThrow('stopped');
    } finally {
      registry.stop();
    }
  });
  it('wait while this process writes stream events to sockets, until it has or for 100 ms at most', async () => {
    const added: string[] = [];
    const feeds = Object.create(s.ctx.feeds) as typeof s.ctx.feeds;
    feeds.add = async (_accountId: string, statusIds: string[]) => void added.push(...statusIds);
    const live = new LiveDeliveries();
    const registry = new ActorRegistry({ db: s.ctx.db, feeds, listFeeds: s.ctx.listFeeds, jobs: s.ctx.jobs, config: s.ctx.config, versions: s.ctx.versions, events: s.ctx.events }, { idleMs: 5_000, queryTimeoutMs: 3_000, liveDeliveries: live });
    try {
      // Nothing being delivered: written at once.
      await registry.addToHomeFeeds([ann.id], '2001');
      expect(added).toEqual(['2001']);
      // A delivery under way: the batch waits for its end, gathering what comes meanwhile.
      live.begin();
      const first = registry.addToHomeFeeds([ann.id], '2002');
      await sleep(30);
      const second = registry.addToHomeFeeds([ann.id], '2003');
      await sleep(10);
      expect(added).toEqual(['2001']);
      live.end();
      await Promise.all([first, second]);
      expect(added).toEqual(['2001', '2002', '2003']);
      // One that never ends holds feeds up for 100 ms, not longer.
      live.begin();
      const started = Date.now();
      await registry.addToHomeFeeds([ann.id], '2004');
      expect(Date.now() - started).toBeGreaterThanOrEqual(95);
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(added).toEqual(['2001', '2002', '2003', '2004']);
      live.end();
    } finally {
      registry.stop();
    }
  });
});
