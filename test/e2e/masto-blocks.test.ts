// Blocks, mutes and domain blocks as a Mastodon app manages them with masto.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { mastoAccounts } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';

let s: TestServer & { url: string };
let uma: mastodon.rest.Client;
let vic: mastodon.rest.Client;
let wes: mastodon.rest.Client;
let vicId: string;
let wesId: string;
let umaId: string;

beforeAll(async () => {
  s = await startListeningServer();
  ({ uma, vic, wes } = (await mastoAccounts(s.url, 'masto blocks', 'uma', 'vic', 'wes')) as Record<'uma' | 'vic' | 'wes', mastodon.rest.Client>);
  [umaId, vicId, wesId] = (await Promise.all([uma, vic, wes].map(async (c) => (await c.v1.accounts.verifyCredentials()).id))) as [string, string, string];
});
afterAll(async () => s?.close());

describe('masto: blocks, mutes and domain blocks', () => {
  it('blocks and unblocks, with relationships and the list', async () => {
    await uma.v1.accounts.$select(vicId).follow();
    const rel = await uma.v1.accounts.$select(vicId).block();
    expect(rel).toMatchObject({ id: vicId, blocking: true, following: false });
    expect((await uma.v1.blocks.list()).map((a) => a.id)).toEqual([vicId]);
    const [seen] = await vic.v1.accounts.relationships.fetch({ id: [umaId] });
    expect(seen).toMatchObject({ blockedBy: true });
    const post = await uma.v1.statuses.create({ status: 'hidden from vic' });
    await expect(vic.v1.statuses.$select(post.id).fetch()).rejects.toMatchObject({ statusCode: 404 });
    expect((await uma.v1.accounts.$select(vicId).unblock()).blocking).toBe(false);
    expect(await uma.v1.blocks.list()).toEqual([]);
    expect((await vic.v1.statuses.$select(post.id).fetch()).id).toBe(post.id);
  });

  it('mutes with options and unmutes, listing the mute', async () => {
    const rel = await uma.v1.accounts.$select(wesId).mute({ notifications: false, duration: 3600 });
    expect(rel).toMatchObject({ muting: true, mutingNotifications: false });
    const mutes = await uma.v1.mutes.list();
    expect(mutes.map((a) => a.id)).toEqual([wesId]);
    const note = await wes.v1.statuses.create({ status: '@uma a mention, still notified' });
    const notifications = await uma.v1.notifications.list();
    expect(notifications.map((n) => n.status?.id)).toContain(note.id);
    const pub = await uma.v1.timelines.public.list();
    expect(pub.map((x) => x.id)).not.toContain(note.id);
    expect((await uma.v1.accounts.$select(wesId).unmute()).muting).toBe(false);
    expect((await uma.v1.timelines.public.list()).map((x) => x.id)).toContain(note.id);
  });

  it('blocks and unblocks domains', async () => {
    await uma.v1.domainBlocks.create({ domain: 'spam.example' });
    await uma.v1.domainBlocks.create({ domain: 'junk.example' });
    expect(await uma.v1.domainBlocks.list()).toEqual(['junk.example', 'spam.example']);
    await uma.v1.domainBlocks.remove({ domain: 'spam.example' });
    expect(await uma.v1.domainBlocks.list()).toEqual(['junk.example']);
  });
});
