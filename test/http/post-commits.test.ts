// A post costs PostgreSQL one commit: every statement the server sends while answering POST /api/v1/statuses
// is seen through a hook on pg's client, and the commits counted: each COMMIT, and each write sent outside a
// transaction (which commits by itself). The job workers are stopped, so only the request's own work is counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';

let s: TestServer;
let amy: TestUser;
let ben: TestUser;

const WRITE = /^\s*(insert|update|delete|with\b[\s\S]*\b(insert|update|delete)\b)/i;
const seen: { client: object; text: string }[] = [];
let recording = false;
const originalQuery = pg.Client.prototype.query;

beforeAll(async () => {
  s = await startTestServer();
  [amy, ben] = await registerUsers(s.app, 'amy', 'ben');
  await s.stopWorkers();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg's query has many overloads; the hook passes them all on
  (pg.Client.prototype as any).query = function (this: object, config: unknown, ...rest: unknown[]) {
    if (recording) seen.push({ client: this, text: typeof config === 'string' ? config : String((config as { text?: string })?.text ?? '') });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (originalQuery as any).call(this, config, ...rest);
  };
});
afterAll(async () => {
  pg.Client.prototype.query = originalQuery;
  await s?.close();
});

/** The commits a request made, and the statements it sent. */
async function commitsOf(request: () => Promise<{ statusCode: number; body: string }>): Promise<{ commits: number; statements: string[] }> {
  seen.length = 0;
  recording = true;
  let res;
  try {
    res = await request();
  } finally {
    recording = false;
  }
  expect(res.statusCode, res.body).toBe(200);
  const inTransaction = new Set<object>();
  let commits = 0;
  for (const { client, text } of seen) {
    const t = text.trim().toUpperCase();
    if (/^BEGIN\b/.test(t)) inTransaction.add(client);
    else if (t === 'COMMIT') {
      inTransaction.delete(client);
      commits += 1;
    } else if (t === 'ROLLBACK') inTransaction.delete(client);
    else if (!inTransaction.has(client) && WRITE.test(text)) commits += 1;
  }
  return { commits, statements: seen.map((q) => q.text.replace(/\s+/g, ' ').slice(0, 120)) };
}

const post = (user: TestUser, payload: object, headers: Record<string, string> = {}) =>
  s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: { ...bearer(user.token), ...headers }, payload });

describe('a post is one commit', () => {
  it('for a plain post, a reply, a post with a known hashtag or a remote-free mention list, and with an Idempotency-Key', async () => {
    // A hashtag seen for the first time is made by a statement of its own (a tag row, harmless alone): once.
    await post(amy, { status: 'warming up #fediverse' });
    const first = await post(amy, { status: 'the first' });
    const cases: [string, () => ReturnType<typeof post>][] = [
      ['plain', () => post(amy, { status: 'Hello, world' })],
      ['reply', () => post(ben, { status: 'a reply', in_reply_to_id: first.json().id })],
      ['known hashtag', () => post(amy, { status: 'more on the #fediverse' })],
      ['unlisted with a content warning', () => post(amy, { status: 'hidden', visibility: 'unlisted', spoiler_text: 'cw' })],
      ['Idempotency-Key', () => post(amy, { status: 'once only' }, { 'idempotency-key': 'k-1' })],
      ['mention of a local account (a notification in the same transaction)', () => post(amy, { status: 'hi @ben' })],
    ];
    for (const [name, request] of cases) {
      const { commits, statements } = await commitsOf(request);
      expect(commits, `${name}:\n${statements.join('\n')}`).toBe(1);
    }
  });

  it('writes nothing at all for a repeated Idempotency-Key, and answers with the first status', async () => {
    const a = await post(amy, { status: 'same' }, { 'idempotency-key': 'k-2' });
    const { commits } = await commitsOf(() => post(amy, { status: 'same' }, { 'idempotency-key': 'k-2' }));
    expect(commits).toBe(0);
    const again = await post(amy, { status: 'same' }, { 'idempotency-key': 'k-2' });
    expect(again.json().id).toBe(a.json().id);
  });

  it('keeps what the one statement writes consistent: counters, reply count, mentions, tags, outbox rows', async () => {
    const before = (await s.ctx.db.query(`SELECT statuses_count FROM accounts WHERE id = $1`, [amy.id])).rows[0].statuses_count as number;
    const parent = (await post(amy, { status: 'a parent' })).json();
    const reply = (await post(ben, { status: '@amy a reply about #Topics', in_reply_to_id: parent.id })).json();
    const { rows: [counts] } = await s.ctx.db.query(
      `SELECT (SELECT statuses_count FROM accounts WHERE id = $1) AS amy, (SELECT replies_count FROM statuses WHERE id = $2) AS replies`, [amy.id, parent.id],
    );
    expect(counts.amy).toBe(before + 1);
    expect(counts.replies).toBe(1);
    expect(reply.mentions.map((m: { id: string }) => m.id)).toEqual([amy.id]);
    expect(reply.tags.map((t: { name: string }) => t.name)).toEqual(['topics']);
    expect(reply.in_reply_to_account_id).toBe(amy.id);
    const outboxOf = async (id: string) => (await s.ctx.db.query(`SELECT kind, payload FROM outbox WHERE payload->>'statusId' = $1 ORDER BY id`, [id])).rows.map((o) => [o.kind, o.payload.activity ?? null]);
    // Nobody on another server follows ben, or is mentioned: no delivery is queued at all.
    expect(await outboxOf(reply.id)).toEqual([['fanOutStatus', null]]);
    // Once someone elsewhere follows him, his posts are delivered; his direct posts only to whom they mention.
    const { rows: [remote] } = await s.ctx.db.query(
      `INSERT INTO accounts (username, domain, uri, inbox_url) VALUES ('far', 'far.example', 'https://far.example/users/far', 'https://far.example/inbox') RETURNING id`,
    );
    await s.ctx.db.query(`INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2)`, [remote.id, ben.id]);
    const followed = (await post(ben, { status: 'now followed from afar' })).json();
    expect(await outboxOf(followed.id)).toEqual([['fanOutStatus', null], ['deliver', 'Create']]);
    const direct = (await post(ben, { status: '@amy just us', visibility: 'direct' })).json();
    expect(await outboxOf(direct.id)).toEqual([['fanOutStatus', null]]);
  });
});
