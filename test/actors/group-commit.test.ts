// Group commit: posts of one account that wait for its actor while it writes are written together, in one
// transaction and one commit, each in a savepoint of its own, each answered after the commit, in the order sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { committedTransactions } from '../../storage/db.ts';

let s: TestServer;
let amy: TestUser;
let bo: TestUser;
let cat: TestUser;
let dee: TestUser;
let eve: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [amy, bo, cat, dee, eve] = await registerUsers(s.app, 'amy', 'bo', 'cat', 'dee', 'eve');
  // Each token once before the tests, so that every request of a test takes the same path to the actor.
  for (const u of [amy, bo, cat, dee, eve]) {
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(u.token) });
    expect(res.statusCode, res.body).toBe(200);
  }
});
afterAll(async () => s?.close());

type Res = Awaited<ReturnType<typeof post>>;
const post = (user: TestUser, payload: object, headers: Record<string, string> = {}) =>
  s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: { ...bearer(user.token), ...headers }, payload });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await sleep(5);
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

/**
 * Keeps `user`'s actor busy with a post whose preparation waits (it mentions an unknown remote account, and the
 * look-up is held here) until `release`: what is sent meanwhile gathers into the next batch, whole.
 */
async function holdActor(user: TestUser): Promise<{ release: () => Promise<Res> }> {
  const deps = s.ctx.actors.deps;
  const original = deps.resolveRemote;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  deps.resolveRemote = async () => {
    entered();
    await opened;
    return null;
  };
  const first = post(user, { status: 'hold on, @nobody@remote.example' });
  await inside;
  return {
    release: () => {
      deps.resolveRemote = original;
      open();
      return first;
    },
  };
}

/** Sends requests one after another, each once the one before has reached the actor (so their order there is known). */
async function sendInOrder(user: TestUser, requests: (() => Promise<Res>)[]): Promise<Promise<Res>[]> {
  const sent: Promise<Res>[] = [];
  for (const request of requests) {
    const before = s.ctx.actors.pendingFor(user.id);
    sent.push(request());
    await until(() => s.ctx.actors.pendingFor(user.id) > before, 'a request to reach the actor');
  }
  return sent;
}

async function statusesOf(user: TestUser): Promise<{ id: string; text: string; created_at: Date }[]> {
  const { rows } = await s.ctx.db.query(`SELECT id::text, text, created_at FROM statuses WHERE account_id = $1 ORDER BY id`, [user.id]);
  return rows;
}

describe('posts of one account sent together', () => {
  it('are all stored, each once, each answered with its own status, with ids in the order sent', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `post number ${i} of forty`);
    // Sent in this order, in the same tick.
    const answers = await Promise.all(texts.map((text) => post(amy, { status: text })));
    for (const [i, res] of answers.entries()) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().content).toBe(`<p>${texts[i]}</p>`);
    }
    const ids = answers.map((r) => BigInt(r.json().id as string));
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `post ${i} has an id above post ${i - 1}'s`).toBe(true);
    const stored = await statusesOf(amy);
    expect(stored.map((r) => r.text)).toEqual(texts);
    expect(stored.map((r) => r.id)).toEqual(answers.map((r) => r.json().id));
    // Fewer transactions than posts: they were written in batches (now() is the transaction's start).
    expect(new Set(stored.map((r) => r.created_at.getTime())).size).toBeLessThan(40);
    const { rows } = await s.ctx.db.query(`SELECT statuses_count FROM accounts WHERE id = $1`, [amy.id]);
    expect(rows[0].statuses_count).toBe(40);
  });

  it('a post that fails in the batch fails alone: the others of the same transaction commit', async () => {
    // A photo, uploaded and processed.
    const image = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#c84' } }).png().toBuffer();
    const form = await multipart({ file: { data: image, filename: 'p.png', type: 'image/png' } });
    const uploaded = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(bo.token), ...form.headers }, payload: form.payload });
    expect([200, 202]).toContain(uploaded.statusCode);
    const mediaId = uploaded.json().id as string;
    for (let i = 0; i < 400; i++) {
      const res = await s.app.inject({ method: 'GET', url: `/api/v1/media/${mediaId}`, headers: bearer(bo.token) });
      if (res.statusCode === 200) break;
      await sleep(25);
    }
    const held = await holdActor(bo);
    // Both name the same media: both pass the checks before the transaction, the second finds it taken inside it.
    const sent = await sendInOrder(bo, [
      () => post(bo, { status: 'before' }),
      () => post(bo, { status: 'with the photo', media_ids: [mediaId] }),
      () => post(bo, { status: 'the same photo again', media_ids: [mediaId] }),
      () => post(bo, { status: 'in between' }),
      () => post(bo, { status: 'a reply to nothing', in_reply_to_id: '4242424242' }),
      () => post(bo, { status: 'after' }),
    ]);
    expect((await held.release()).statusCode).toBe(200);
    const answers = await Promise.all(sent);
    expect(answers.map((r) => r.statusCode), answers.map((r) => r.body.slice(0, 200)).join('\n')).toEqual([200, 200, 422, 200, 404, 200]);
    expect(answers[2]!.json().error).toMatch(/already attached/);
    expect(answers[1]!.json().media_attachments.map((m: { id: string }) => m.id)).toEqual([mediaId]);
    const stored = await statusesOf(bo);
    expect(stored.map((r) => r.text)).toEqual(['hold on, @nobody@remote.example', 'before', 'with the photo', 'in between', 'after']);
    // The four that were written went in one transaction.
    expect(new Set(stored.slice(1).map((r) => r.created_at.getTime())).size).toBe(1);
    const { rows } = await s.ctx.db.query(`SELECT statuses_count FROM accounts WHERE id = $1`, [bo.id]);
    expect(rows[0].statuses_count).toBe(5);
  });

  it('a post of one statement that PostgreSQL refuses fails alone too: the others are written without it', async () => {
    // Plain posts are written without a savepoint: one that fails loses the transaction, and the others are written
    // again in a new one. A trigger of this test's database refuses one text.
    await s.ctx.db.query(`CREATE FUNCTION refuse_marked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.text = 'refused by the database' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; RETURN NEW; END $$`);
    await s.ctx.db.query(`CREATE TRIGGER refuse_marked BEFORE INSERT ON statuses FOR EACH ROW EXECUTE FUNCTION refuse_marked()`);
    try {
      const held = await holdActor(cat);
      const sent = await sendInOrder(cat, [
        () => post(cat, { status: 'plain, before' }),
        () => post(cat, { status: 'refused by the database' }),
        () => post(cat, { status: 'a mention of @amy (a savepoint of its own)' }),
        () => post(cat, { status: 'plain, after' }, { 'idempotency-key': 'after-the-refusal' }),
      ]);
      await held.release();
      const answers = await Promise.all(sent);
      expect(answers.map((r) => r.statusCode), answers.map((r) => r.body.slice(0, 200)).join('\n')).toEqual([200, 500, 200, 200]);
      const stored = await statusesOf(cat);
      expect(stored.map((r) => r.text)).toEqual(['hold on, @nobody@remote.example', 'plain, before', 'a mention of @amy (a savepoint of its own)', 'plain, after']);
      expect(stored.slice(1).map((r) => r.id)).toEqual([answers[0]!.json().id, answers[2]!.json().id, answers[3]!.json().id]);
      expect(new Set(stored.slice(1).map((r) => r.created_at.getTime())).size).toBe(1);
      const again = await post(cat, { status: 'plain, after' }, { 'idempotency-key': 'after-the-refusal' });
      expect(again.json().id).toBe(answers[3]!.json().id);
      const { rows } = await s.ctx.db.query(`SELECT statuses_count FROM accounts WHERE id = $1`, [cat.id]);
      expect(rows[0].statuses_count).toBe(4);
    } finally {
      await s.ctx.db.query(`DROP TRIGGER refuse_marked ON statuses; DROP FUNCTION refuse_marked()`);
    }
  });

  it('32 posts sent together take far fewer than 32 commits', async () => {
    // Only the requests' own transactions: the job workers (fan-out, link cards) are stopped meanwhile.
    await s.stopWorkers();
    try {
      const before = committedTransactions();
      const answers = await Promise.all(Array.from({ length: 32 }, (_, i) => post(eve, { status: `commit test ${i}` })));
      const commits = committedTransactions() - before;
      expect(answers.map((r) => r.statusCode)).toEqual(new Array(32).fill(200));
      expect(commits).toBeGreaterThanOrEqual(1);
      expect(commits).toBeLessThanOrEqual(8);
      const stored = await statusesOf(eve);
      expect(stored).toHaveLength(32);
      expect(new Set(stored.map((r) => r.created_at.getTime())).size).toBeLessThanOrEqual(8);
    } finally {
      s.startWorkers();
    }
  });

  it('two posts of one batch with the same Idempotency-Key make one status, and both are answered with it', async () => {
    const held = await holdActor(dee);
    const sent = await sendInOrder(dee, [
      () => post(dee, { status: 'once, please' }, { 'idempotency-key': 'twice-in-a-batch' }),
      () => post(dee, { status: 'something else' }),
      () => post(dee, { status: 'once, please' }, { 'idempotency-key': 'twice-in-a-batch' }),
    ]);
    await held.release();
    const answers = await Promise.all(sent);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(answers[2]!.json().id).toBe(answers[0]!.json().id);
    const stored = await statusesOf(dee);
    expect(stored.filter((r) => r.text === 'once, please').map((r) => r.id)).toEqual([answers[0]!.json().id]);
    // And once more later: the key still names it.
    const again = await post(dee, { status: 'once, please' }, { 'idempotency-key': 'twice-in-a-batch' });
    expect(again.json().id).toBe(answers[0]!.json().id);
  });

  it('keeps its place among the other messages to the account: none overtakes a delete, nor is overtaken by it', async () => {
    const target = await post(dee, { status: 'to be deleted' });
    expect(target.statusCode).toBe(200);
    const targetId = target.json().id as string;
    const held = await holdActor(dee);
    const sent = await sendInOrder(dee, [
      () => post(dee, { status: 'a reply sent before the delete', in_reply_to_id: targetId }),
      () => s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${targetId}`, headers: bearer(dee.token) }),
      () => post(dee, { status: 'a reply sent after the delete', in_reply_to_id: targetId }),
      () => post(dee, { status: 'a post sent after the delete' }),
    ]);
    await held.release();
    const answers = await Promise.all(sent);
    // The reply sent before is written before the delete; the one sent after finds its parent gone.
    expect(answers.map((r) => r.statusCode), answers.map((r) => r.body.slice(0, 200)).join('\n')).toEqual([200, 200, 404, 200]);
    const { rows } = await s.ctx.db.query(`SELECT id::text, text, created_at, deleted_at FROM statuses WHERE account_id = $1 AND id > $2 ORDER BY id`, [dee.id, targetId]);
    expect(rows.map((r) => r.text)).toEqual(['hold on, @nobody@remote.example', 'a reply sent before the delete', 'a post sent after the delete']);
    // The post after the delete is in a transaction of its own, after the delete's.
    expect(rows[2].created_at.getTime()).toBeGreaterThan(rows[1].created_at.getTime());
  });
});
