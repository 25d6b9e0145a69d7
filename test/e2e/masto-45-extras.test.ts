import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { mastoAccounts } from '../helpers/masto.ts';

/** The calls Mastodon 4.4–4.6 added, driven through masto as an app makes them. */
let s: TestServer & { url: string };
let c: Record<string, mastodon.rest.Client>;
const id: Record<string, string> = {};

beforeAll(async () => {
  s = await startListeningServer();
  c = await mastoAccounts(s.url, 'Extras app', 'ida', 'jon', 'kim');
  for (const [name, client] of Object.entries(c)) {
    const me = await client.v1.accounts.updateCredentials({ discoverable: true });
    id[name] = me.id;
  }
}, 60_000);
afterAll(async () => s?.close());

describe('masto: Mastodon 4.4–4.6 calls', () => {
  it('posts with allowed mentions, and quotes a post', async () => {
    await expect(c.ida!.v1.statuses.create({ status: '@jon @kim hi', allowedMentions: [id.jon!] })).rejects.toMatchObject({ statusCode: 422 });
    const original = await c.jon!.v1.statuses.create({ status: 'quote me', quoteApprovalPolicy: 'public' });
    const quoting = await c.ida!.v1.statuses.create({ status: 'look at this', quotedStatusId: original.id });
    expect(quoting.quote).toMatchObject({ state: 'accepted' });
    expect((await c.jon!.v1.statuses.$select(original.id).fetch()).quotesCount).toBe(1);
  });

  it('quotes a post with both accounts at their defaults, and the count follows the quote', async () => {
    const original = await c.kim!.v1.statuses.create({ status: 'quote me by default' });
    expect(original.quoteApproval).toMatchObject({ automatic: ['public'], currentUser: 'automatic' });
    const quoting = await c.jon!.v1.statuses.create({ status: 'quoting by default', quotedStatusId: original.id });
    expect(quoting.quote).toMatchObject({ state: 'accepted' });
    expect((await c.jon!.v1.statuses.$select(original.id).fetch()).quotesCount).toBe(1);
    // The quoter lists the quotes of kim's post (as masto's own spec does against Mastodon): theirs is among them.
    expect((await c.jon!.v1.statuses.$select(original.id).quotes.list()).map((st) => st.account.id)).toContain(id.jon);
    await c.jon!.v1.statuses.$select(quoting.id).remove();
    expect((await c.jon!.v1.statuses.$select(original.id).fetch()).quotesCount).toBe(0);
  });

  it('lists the directory, features a tag, and marks a conversation unread', async () => {
    const directory = await c.kim!.v1.directory.list({ order: 'new', local: true, limit: 10 });
    expect(directory.map((a) => a.id)).toEqual(expect.arrayContaining([id.ida, id.jon, id.kim]));
    expect((await c.kim!.v1.tags.$select('knitting').feature()).featuring).toBe(true);
    expect((await c.kim!.v1.tags.$select('knitting').unfeature()).featuring).toBe(false);
    await c.jon!.v1.statuses.create({ status: '@kim between us', visibility: 'direct' });
    // The conversation is made by the post's fan-out job: wait for it.
    let conversation: { id: string } | undefined;
    for (let i = 0; i < 100 && !conversation; i++) {
      [conversation] = await c.kim!.v1.conversations.list();
      if (!conversation) await new Promise((r) => setTimeout(r, 50));
    }
    expect((await c.kim!.v1.conversations.$select(conversation!.id).unread()).unread).toBe(true);
  });

  it('makes a collection of accounts and adds one to it', async () => {
    const { collection } = await c.ida!.v1.collections.create({ name: 'People I like', language: 'en', sensitive: false, discoverable: true });
    expect(collection.name).toBe('People I like');
    const { collectionItem } = await c.ida!.v1.collections.$select(collection.id).items.create({ accountId: id.jon! });
    expect(collectionItem.accountId).toBe(id.jon);
    const shown = await c.kim!.v1.collections.$select(collection.id).fetch();
    expect(shown.collection.items.map((i) => i.accountId)).toContain(id.jon);
    // Removing and deleting answer Mastodon's empty `head 200`, which masto reads as nothing.
    await c.ida!.v1.collections.$select(collection.id).items.$select(collectionItem.id).remove();
    expect((await c.kim!.v1.collections.$select(collection.id).fetch()).collection.items).toEqual([]);
    await c.ida!.v1.collections.$select(collection.id).remove();
    await expect(c.kim!.v1.collections.$select(collection.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
  });
});
