// A Mastodon app's day with masto: post, read timelines and threads, favourite, reblog, markers, notifications.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOAuthAPIClient, createRestAPIClient, type mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { updateAccountProfile } from '../../services/profile.ts';

let s: TestServer & { url: string };
let pia: mastodon.rest.Client;
let quin: mastodon.rest.Client;
let piaToken: string;
let quinId: string;

async function waitForOutbox() {
  for (let i = 0; i < 200; i++) {
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM outbox');
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  s = await startListeningServer();
  const anonymous = createRestAPIClient({ url: s.url });
  const app = await anonymous.v1.apps.create({ clientName: 'masto day', redirectUris: 'urn:ietf:wg:oauth:2.0:oob', scopes: 'read write follow' });
  const oauth = createOAuthAPIClient({ url: s.url });
  const appToken = await oauth.token.create({ grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: 'urn:ietf:wg:oauth:2.0:oob', scope: 'read write follow' });
  const asApp = createRestAPIClient({ url: s.url, accessToken: appToken.accessToken });
  const t1 = await asApp.v1.accounts.create({ username: 'pia', email: 'pia@example.com', password: 'pia password', agreement: true, locale: 'en' });
  const t2 = await asApp.v1.accounts.create({ username: 'quin', email: 'quin@example.com', password: 'quin password', agreement: true, locale: 'en' });
  piaToken = t1.accessToken;
  pia = createRestAPIClient({ url: s.url, accessToken: t1.accessToken });
  quin = createRestAPIClient({ url: s.url, accessToken: t2.accessToken });
  quinId = (await quin.v1.accounts.verifyCredentials()).id;
  await pia.v1.accounts.$select(quinId).follow();
});
afterAll(async () => s?.close());

describe('masto: statuses and timelines', () => {
  it('posts with sensitive as a boolean, and as a string through a form body', async () => {
    const first = await quin.v1.statuses.create({ status: 'Hello from quin #first', sensitive: true, spoilerText: 'greeting' });
    expect(first.sensitive).toBe(true);
    expect(first.spoilerText).toBe('greeting');
    const form = await fetch(`${s.url}/api/v1/statuses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${piaToken}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ status: 'form post from pia', sensitive: 'true' }),
    });
    expect(form.status).toBe(200);
    expect(((await form.json()) as { sensitive: boolean }).sensitive).toBe(true);
  });

  it('reads home and public timelines, and a thread', async () => {
    const root = await quin.v1.statuses.create({ status: 'What do you think, @pia?' });
    const reply = await pia.v1.statuses.create({ status: '@quin I agree', inReplyToId: root.id });
    await waitForOutbox();
    const home = await pia.v1.timelines.home.list({ limit: 10 });
    expect(home.map((x) => x.id).slice(0, 2)).toEqual([reply.id, root.id]);
    const pub = await pia.v1.timelines.public.list({ local: true, limit: 40 });
    expect(pub.map((x) => x.id)).toContain(root.id);
    const context = await quin.v1.statuses.$select(reply.id).context.fetch();
    expect(context.ancestors.map((x) => x.id)).toEqual([root.id]);
    const down = await quin.v1.statuses.$select(root.id).context.fetch();
    expect(down.descendants.map((x) => x.id)).toEqual([reply.id]);
    const tagged = await pia.v1.timelines.tag.$select('first').list();
    expect(tagged).toHaveLength(1);
  });

  it('pages the home timeline with the paginator', async () => {
    for (let i = 0; i < 7; i++) await pia.v1.statuses.create({ status: `page ${i}` });
    const seen: string[] = [];
    for await (const page of pia.v1.timelines.home.list({ limit: 3 })) {
      seen.push(...page.map((x) => x.id));
      if (seen.length > 30) break;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : -1))).toEqual(seen);
    expect(seen.length).toBeGreaterThanOrEqual(10);
  });

  it('favourites and reblogs, and the author is notified', async () => {
    const st = await quin.v1.statuses.create({ status: 'boost me' });
    const fav = await pia.v1.statuses.$select(st.id).favourite();
    expect(fav.favourited).toBe(true);
    expect(fav.favouritesCount).toBe(1);
    const boost = await pia.v1.statuses.$select(st.id).reblog();
    expect(boost.reblog?.id).toBe(st.id);
    const notes = await quin.v1.notifications.list();
    expect(notes.map((n) => n.type).slice(0, 3)).toEqual(['reblog', 'favourite', 'mention']);
    const unread = await fetch(`${s.url}/api/v1/notifications/unread_count`, { headers: { authorization: `Bearer ${piaToken}` } });
    expect(unread.status).toBe(200);
  });

  it('saves and reads markers', async () => {
    const [latest] = await pia.v1.timelines.home.list({ limit: 1 });
    const saved = await pia.v1.markers.create({ home: { lastReadId: latest!.id } });
    expect(saved.home?.lastReadId).toBe(latest!.id);
    const read = await pia.v1.markers.fetch({ timeline: ['home', 'notifications'] });
    expect(read.home?.lastReadId).toBe(latest!.id);
    expect(read.home?.version).toBe(0);
    // Neither timeline given: nothing saved, an empty map, as from Mastodon.
    expect(await pia.v1.markers.create({})).toEqual({});
  });

  it('fetches several statuses and accounts at once, and none when asked for none', async () => {
    const secret = await quin.v1.statuses.create({ status: 'just for me', visibility: 'direct' });
    const open = await quin.v1.statuses.create({ status: 'for all' });
    // In the order asked, without what pia may not see or what does not exist.
    const many = await pia.v1.statuses.fetch({ id: [open.id, secret.id, '12345', 'nonsense'] });
    expect(many.map((x) => x.id)).toEqual([open.id]);
    expect(await pia.v1.statuses.fetch({ id: [] })).toEqual([]);
    await expect(pia.v1.statuses.fetch({ id: Array.from({ length: 21 }, (_, i) => String(i + 1)) })).rejects.toMatchObject({ statusCode: 422 });
    expect((await pia.v1.accounts.fetch({ id: [quinId] })).map((a) => a.id)).toEqual([quinId]);
    expect(await pia.v1.accounts.fetch({ id: [] })).toEqual([]);
    expect(await pia.v1.accounts.relationships.fetch({ id: [] })).toEqual([]);
    expect(await pia.v1.accounts.familiarFollowers.fetch([])).toEqual([]);
  });
});

describe('masto: the application a status was posted from', () => {
  it('is shown to everyone while its author discloses it (Mastodon\'s default), else to its author only', async () => {
    const posted = await quin.v1.statuses.create({ status: 'from my app' });
    expect(posted.application).toEqual({ name: 'masto day', website: null });
    expect((await pia.v1.statuses.$select(posted.id).fetch()).application).toEqual({ name: 'masto day', website: null });
    await waitForOutbox();
    const homeOf = async (client: mastodon.rest.Client) => (await client.v1.timelines.home.list({ limit: 5 })).find((x) => x.id === posted.id);
    expect((await homeOf(pia))?.application).toEqual({ name: 'masto day', website: null });
    // A boost shows the original's.
    const boost = await pia.v1.statuses.$select(posted.id).reblog();
    expect(boost.reblog?.application).toEqual({ name: 'masto day', website: null });

    // quin stops disclosing it (the settings page's choice): pages rendered before, for pia too, are not reused.
    const [quinAccount] = await findAccountsByIds(s.ctx.db, [quinId]);
    await updateAccountProfile(s.ctx, quinAccount!, { showApplication: false });
    expect((await pia.v1.statuses.$select(posted.id).fetch()).application).toBeNull();
    expect((await homeOf(pia))?.application).toBeNull();
    expect((await pia.v1.timelines.home.list({ limit: 5 })).find((x) => x.reblog?.id === posted.id)?.reblog?.application).toBeNull();
    expect((await pia.v1.statuses.fetch({ id: [posted.id] }))[0]!.application).toBeNull();
    expect((await createRestAPIClient({ url: s.url }).v1.statuses.$select(posted.id).fetch()).application).toBeNull();
    // Its author still sees it, one by one and in their home timeline.
    expect((await quin.v1.statuses.$select(posted.id).fetch()).application).toEqual({ name: 'masto day', website: null });
    expect((await homeOf(quin))?.application).toEqual({ name: 'masto day', website: null });
    // And pia again does not, after quin's reads filled the caches.
    expect((await homeOf(pia))?.application).toBeNull();
    await updateAccountProfile(s.ctx, (await findAccountsByIds(s.ctx.db, [quinId]))[0]!, { showApplication: true });
    expect((await homeOf(pia))?.application).toEqual({ name: 'masto day', website: null });
  });
});

describe('masto: media', () => {
  it('uploads two photos with descriptions, waits for them, posts them, and every URL serves the reported sizes', async () => {
    const { default: sharp } = await import('sharp');
    const photos = await Promise.all([[640, 480, '#a33'], [300, 500, '#3a3']].map(([w, h, bg]) =>
      sharp({ create: { width: w as number, height: h as number, channels: 3, background: bg as string } }).jpeg().toBuffer()));
    // masto polls GET /api/v1/media/:id until the attachment is processed.
    const attachments = await Promise.all(photos.map((data, i) =>
      pia.v2.media.create({ file: new Blob([new Uint8Array(data)], { type: 'image/jpeg' }), description: `photo number ${i + 1}` })));
    for (const a of attachments) expect(a.url).toMatch(/^http/);
    const status = await pia.v1.statuses.create({ status: 'two photos', mediaIds: attachments.map((a) => a.id) });
    expect(status.mediaAttachments.map((m) => m.description)).toEqual(['photo number 1', 'photo number 2']);
    for (const [i, m] of status.mediaAttachments.entries()) {
      const meta = m.meta as { original: { width: number; height: number }; small: { width: number; height: number } };
      for (const [url, size] of [[m.url!, meta.original], [m.previewUrl!, meta.small]] as const) {
        const res = await fetch(url);
        expect(res.status).toBe(200);
        const decoded = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
        expect([decoded.width, decoded.height], `photo ${i + 1}: ${url}`).toEqual([size.width, size.height]);
      }
    }
    expect(status.mediaAttachments[0]!.meta).toMatchObject({ original: { width: 640, height: 480 } });
  });
});
