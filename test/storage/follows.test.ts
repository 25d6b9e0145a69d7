import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, transaction, type Db } from '../../storage/db.ts';
import { hasLocalFollowers, localFollowersBatch, remoteFollowersBatch } from '../../storage/follows.ts';
import { insertPost } from '../../storage/statuses.ts';
import { dropTestData, testConfig } from '../helpers/server.ts';
import type { Config } from '../../config.ts';

// follows.follower_local (migration 1766690000000): set by a trigger from the follower's domain, whichever way the
// follow is written, and what a post's fan-out and its remote-audience check read instead of joining accounts.
let config: Config;
let db: Db;

beforeAll(async () => {
  config = await testConfig();
  db = createPool(config.databaseUrl, 2);
});
afterAll(async () => {
  await db?.end();
  if (config) await dropTestData(config);
});

async function account(username: string, domain: string | null = null): Promise<string> {
  const { rows } = await db.query<{ id: string }>(`INSERT INTO accounts (username, domain) VALUES ($1, $2) RETURNING id::text`, [username, domain]);
  return rows[0]!.id;
}
const follow = (follower: string, target: string) => db.query(`INSERT INTO follows (account_id, target_account_id) VALUES ($1, $2)`, [follower, target]);

/** Whether a new post of `author` queues its delivery to other servers (the insert's remote-audience check). */
async function queuesDelivery(author: string): Promise<boolean> {
  const made = await transaction(db, (tx) => insertPost(tx, {
    accountId: author, text: 'hello', content: '<p>hello</p>', spoilerText: '', sensitive: false, language: 'en',
    inReplyToId: null, inReplyToAccountId: null, applicationId: null,
  }, { visibility: 'public', idempotencyKey: null, mentionIds: [], tagIds: [], outbox: [{ kind: 'deliver', payload: { activity: 'Create' }, remoteOnly: true }] }));
  return made!.outbox.some((o) => o.kind === 'deliver');
}

describe('follows of local and remote accounts', () => {
  it('marks each follow by its follower, and reads local and remote followers apart', async () => {
    const [author, amy, ben, rex, sus] = [await account('author'), await account('amy'), await account('ben'), await account('rex', 'remote.example'), await account('sus', 'remote.example')];
    expect(await hasLocalFollowers(db, author)).toBe(false);
    expect(await queuesDelivery(author)).toBe(false);
    await follow(amy, author);
    await follow(rex, author);
    await follow(ben, author);
    await follow(sus, author);
    await db.query(`UPDATE accounts SET suspended_at = now() WHERE id = $1`, [sus]);
    const { rows } = await db.query<{ account_id: string; follower_local: boolean }>(`SELECT account_id::text, follower_local FROM follows WHERE target_account_id = $1 ORDER BY id`, [author]);
    expect(rows).toEqual([
      { account_id: amy, follower_local: true }, { account_id: rex, follower_local: false },
      { account_id: ben, follower_local: true }, { account_id: sus, follower_local: false },
    ]);
    // Local followers in follow order, a batch at a time.
    const first = await localFollowersBatch(db, author, '0', 1);
    expect(first.map((f) => f.accountId)).toEqual([amy]);
    expect((await localFollowersBatch(db, author, first[0]!.followId, 10)).map((f) => f.accountId)).toEqual([ben]);
    expect(await hasLocalFollowers(db, author)).toBe(true);
    expect(await hasLocalFollowers(db, amy)).toBe(false);
    // Remote ones for deliveries, a suspended one left out.
    expect((await remoteFollowersBatch(db, author, '0', 10)).map((f) => f.account.id)).toEqual([rex]);
    expect(await queuesDelivery(author)).toBe(true);
    // Only local followers: nothing to deliver.
    const quiet = await account('quiet');
    await follow(amy, quiet);
    expect(await queuesDelivery(quiet)).toBe(false);
  });

  it('leaves a follow of an unknown account to the foreign key to refuse', async () => {
    const target = await account('target');
    await expect(follow('999999999', target)).rejects.toMatchObject({ code: '23503' });
  });
});
