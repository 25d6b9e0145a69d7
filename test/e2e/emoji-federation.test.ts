import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { startStrictPeer, type PeerDelivery, type StrictPeer } from '../helpers/strict-peer.ts';
import { addLocalEmoji } from '../../services/custom-emojis.ts';

// Custom emoji with other servers, through a peer that behaves like GoToSocial (401 to unsigned GETs, 202 then
// verify, draft-cavage): Emoji tags as Mastodon, Misskey and Pleroma send them on Notes and actors are shown in
// `emojis`; ours go out as Emoji tags and are served at their URL; Misskey's reaction Likes and EmojiReact are
// favourites, undone by their Undo.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let mia: string;
let pia: string;
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
// How each writes its context (the parts that name what is used here).
const MASTODON_CONTEXT = [AS, { toot: 'http://joinmastodon.org/ns#', Emoji: 'toot:Emoji' }];
const MISSKEY_CONTEXT = [AS, 'https://w3id.org/security/v1', {
  toot: 'http://joinmastodon.org/ns#', Emoji: 'toot:Emoji', misskey: 'https://misskey-hub.net/ns#', _misskey_reaction: 'misskey:_misskey_reaction',
  _misskey_content: 'misskey:_misskey_content',
}];
// Pleroma names its litepub context by URL; its terms for these, inlined (the test peer serves no context document).
const PLEROMA_CONTEXT = [AS, { litepub: 'http://litepub.social/ns#', toot: 'http://joinmastodon.org/ns#', Emoji: 'toot:Emoji', EmojiReact: 'litepub:EmojiReact' }];

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const aliceId = () => `${ours.url}/users/alice`;
const delivered = async (type: string, match: (a: Json) => boolean = () => true): Promise<PeerDelivery> => {
  const d = await peer.waitFor((r) => r.activity.type === type && match(r.activity));
  expect(d, JSON.stringify(d)).toMatchObject({ verified: true, spec: 'draft-cavage' });
  return d;
};
const emojiTag = (id: string, name: string, url: string, extra: Json = {}) => ({ id, type: 'Emoji', name, icon: { type: 'Image', url, ...extra.icon }, ...(extra.updated ? { updated: extra.updated } : {}) });

/**
 * The image another server's emoji shows: its URL here is always our media proxy's (which serves our copy), so the
 * image meant is read from the emoji it names.
 */
async function sourceOf(url: string): Promise<string> {
  const m = new RegExp(`^${ours.url}/media_proxy/emojis/(\\d+)/(original|static)$`).exec(url);
  expect(m, url).not.toBeNull();
  const { rows } = await ours.ctx.db.query(`SELECT image_remote_url FROM custom_emojis WHERE id = $1`, [m![1]]);
  return rows[0].image_remote_url;
}
const sources = (emojis: Json[]) => Promise.all(emojis.map(async (e) => ({ ...e, url: await sourceOf(e.url), static_url: await sourceOf(e.static_url) })));

/** Delivers a Create of the Note from the peer's actor and returns it as our home timeline shows it. */
async function deliverNote(user: string, context: unknown, note: Json): Promise<Json> {
  const actor = peer.actorId(user);
  const full = { id: `${actor}/statuses/${Math.random().toString(36).slice(2)}`, type: 'Note', attributedTo: actor, published: new Date().toISOString(), to: [PUBLIC], cc: [`${actor}/followers`], ...note };
  peer.publish(user, { '@context': context, ...full });
  expect(await peer.send(user, `${ours.url}/inbox`, { '@context': context, id: `${full.id}/activity`, type: 'Create', actor, object: full, to: full.to, cc: full.cc })).toBe(202);
  const home = await until(async () => (await api('GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === full.id), 'the Note at home');
  return home.find((s) => s.uri === full.id)!;
}

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  [gus, mia, pia] = await Promise.all([peer.addActor('gus'), peer.addActor('mia'), peer.addActor('pia')]);
  // Alice follows the three; gus follows alice (our posts reach the peer).
  for (const name of ['gus', 'mia', 'pia']) {
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`@${name}@${peer.domain}`)}&resolve=true`);
    expect((await api('POST', `/api/v1/accounts/${found.body.accounts[0].id}/follow`)).status).toBe(200);
  }
  expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: aliceId() })).toBe(202);
  await delivered('Accept');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

describe('custom emoji from other servers', () => {
  it("shows a Mastodon Note's Emoji tags in its emojis, refusing icons that are not http(s)", async () => {
    const files = `${peer.url}/system/custom_emojis/images/000/000/001/original`;
    const status = await deliverNote('gus', MASTODON_CONTEXT, {
      content: '<p>hi :blobcat: :blobfox: :evil: :notag:</p>', summary: 'cw :blobfox:',
      tag: [
        emojiTag(`${peer.url}/emojis/1`, ':blobcat:', `${files}/blobcat.png`, { icon: { mediaType: 'image/png' }, updated: '2024-01-01T00:00:00Z' }),
        emojiTag(`${peer.url}/emojis/2`, ':blobfox:', `${files}/blobfox.gif`, { icon: { mediaType: 'image/gif' }, updated: '2024-01-01T00:00:00Z' }),
        emojiTag(`${peer.url}/emojis/3`, ':evil:', 'javascript:alert(1)', { icon: { mediaType: 'image/png' } }),
      ],
    });
    expectEntity('Status', status);
    expect(await sources(status.emojis)).toEqual([
      { shortcode: 'blobfox', url: `${files}/blobfox.gif`, static_url: `${files}/blobfox.gif`, visible_in_picker: true },
      { shortcode: 'blobcat', url: `${files}/blobcat.png`, static_url: `${files}/blobcat.png`, visible_in_picker: true },
    ]);
    // Another server's emoji are never this server's: the picker's list stays empty.
    expect((await ours.app.inject({ method: 'GET', url: '/api/v1/custom_emojis' })).json()).toEqual([]);
  });

  it("takes Misskey's and Pleroma's Emoji tags, each per server, and a changed image replaces the one kept", async () => {
    const misskey = await deliverNote('mia', MISSKEY_CONTEXT, {
      content: '<p>:blobcat_mfm: desu</p>', _misskey_content: ':blobcat_mfm: desu',
      tag: [emojiTag(`${peer.url}/emojis/blobcat_mfm`, ':blobcat_mfm:', `${peer.url}/files/webpublic-abc.png`, { icon: { mediaType: 'image/png' }, updated: '2024-02-02T00:00:00.000Z' })],
    });
    expect((await sources(misskey.emojis)).map((e: Json) => [e.shortcode, e.url])).toEqual([['blobcat_mfm', `${peer.url}/files/webpublic-abc.png`]]);
    // Pleroma: no mediaType, and `updated` at the epoch.
    const pleroma = await deliverNote('pia', PLEROMA_CONTEXT, {
      content: 'pleroma :blobcat: here',
      tag: [emojiTag(`${peer.url}/emoji/custom/blobcat.png`, ':blobcat:', `${peer.url}/emoji/custom/blobcat.png`, { updated: '1970-01-01T00:00:00Z' })],
    });
    expect((await sources(pleroma.emojis)).map((e: Json) => e.url)).toEqual([`${peer.url}/emoji/custom/blobcat.png`]);

    // The same shortcode of the same server with a new image: what was shown with the old one now shows the new.
    const again = await deliverNote('gus', MASTODON_CONTEXT, {
      content: '<p>:blobcat: v2</p>',
      tag: [emojiTag(`${peer.url}/emojis/1`, ':blobcat:', `${peer.url}/system/blobcat-v2.png`, { icon: { mediaType: 'image/png' }, updated: '2024-03-01T00:00:00Z' })],
    });
    expect(await sourceOf(again.emojis[0].url)).toBe(`${peer.url}/system/blobcat-v2.png`);
    const home = (await api('GET', '/api/v1/timelines/home')).body as Json[];
    const first = home.find((s) => s.content.includes('hi :blobcat:'))!;
    expect(first.emojis.find((e: Json) => e.shortcode === 'blobcat').url).toBe(again.emojis[0].url);
    const { rows } = await ours.ctx.db.query(`SELECT shortcode, domain FROM custom_emojis WHERE shortcode = 'blobcat' ORDER BY domain`);
    expect(rows).toEqual([{ shortcode: 'blobcat', domain: peer.domain.toLowerCase() }]);
  });

  it('takes at most 50 emoji from one object', async () => {
    const tags = Array.from({ length: 60 }, (_, i) => emojiTag(`${peer.url}/emojis/m${i}`, `:many_${i}:`, `${peer.url}/m/${i}.png`, { icon: { mediaType: 'image/png' } }));
    const status = await deliverNote('gus', MASTODON_CONTEXT, { content: `<p>${tags.map((t) => t.name).join(' ')}</p>`, tag: tags });
    expect(status.emojis).toHaveLength(50);
    const { rows } = await ours.ctx.db.query(`SELECT count(*)::int AS n FROM custom_emojis WHERE shortcode LIKE 'many\\_%'`);
    expect(rows[0].n).toBe(50);
  });

  it("shows the emoji of an actor's name, bio and fields", async () => {
    const update = {
      '@context': [...MASTODON_CONTEXT, { schema: 'http://schema.org#', PropertyValue: 'schema:PropertyValue', value: 'schema:value' }],
      id: `${gus}#updates/1`, type: 'Update', actor: gus, to: [PUBLIC],
      object: {
        id: gus, type: 'Person', preferredUsername: 'gus', name: 'Gus :blobcat:', summary: '<p>likes :blobfox:</p>',
        inbox: `${gus}/inbox`, outbox: `${gus}/outbox`, followers: `${gus}/followers`,
        attachment: [{ type: 'PropertyValue', name: 'mood :party:', value: 'fine' }],
        tag: [
          emojiTag(`${peer.url}/emojis/1`, ':blobcat:', `${peer.url}/system/blobcat-v2.png`, { icon: { mediaType: 'image/png' }, updated: '2024-03-01T00:00:00Z' }),
          emojiTag(`${peer.url}/emojis/2`, ':blobfox:', `${peer.url}/system/custom_emojis/images/000/000/001/original/blobfox.gif`, { icon: { mediaType: 'image/gif' } }),
          emojiTag(`${peer.url}/emojis/9`, ':party:', `${peer.url}/system/party.png`, { icon: { mediaType: 'image/png' } }),
        ],
      },
    };
    expect(await peer.send('gus', `${ours.url}/inbox`, update)).toBe(202);
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`@gus@${peer.domain}`)}`);
    const account = await until(async () => (await api('GET', `/api/v1/accounts/${found.body.accounts[0].id}`)).body, (a) => a.emojis.length === 3, 'the actor with its emoji');
    expectEntity('Account', account);
    expect(account.emojis.map((e: Json) => e.shortcode).sort()).toEqual(['blobcat', 'blobfox', 'party']);
  });
});

describe('our custom emoji on the wire', () => {
  it('sends Emoji tags on our Notes and actor, and serves each emoji at its URL', async () => {
    const image = await sharp({ create: { width: 32, height: 32, channels: 4, background: '#f0f' } }).png().toBuffer();
    const { row } = await addLocalEmoji(ours.ctx, { shortcode: 'ours', image, category: null, visibleInPicker: true, overwrite: false });
    const posted = await api('POST', '/api/v1/statuses', { status: 'with :ours: and :blobcat:', visibility: 'public' });
    expect(posted.body.emojis.map((e: Json) => e.shortcode)).toEqual(['ours']); // another server's blobcat is not ours to use
    const create = await delivered('Create', (a) => a.object?.content?.includes('with :ours:'));
    const emojiId = `${ours.url}/emojis/${row!.id}`;
    const list = (v: unknown): Json[] => (Array.isArray(v) ? v : v ? [v] : []); // one tag is sent as an object
    const tags = list((create.activity.object as Json).tag);
    expect(tags.filter((t) => t.type === 'Emoji')).toEqual([
      { id: emojiId, type: 'Emoji', name: ':ours:', updated: expect.any(String), icon: { type: 'Image', mediaType: 'image/png', url: posted.body.emojis[0].url } },
    ]);

    // As fetched: the Note, the emoji at its URL, and the actor whose name uses it.
    const note = await peer.signedGet('gus', posted.body.uri);
    expect(list(note.json!.tag).some((t) => t.type === 'Emoji' && t.id === emojiId)).toBe(true);
    const emoji = await peer.signedGet('gus', emojiId);
    expect(emoji.status).toBe(200);
    expect(emoji.json).toMatchObject({ id: emojiId, type: 'Emoji', name: ':ours:', icon: { type: 'Image', mediaType: 'image/png', url: posted.body.emojis[0].url } });
    expect((await peer.signedGet('gus', `${ours.url}/emojis/999`)).status).toBe(404);
    await ours.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(alice.token), payload: { display_name: 'Alice :ours:' } });
    const actor = await peer.signedGet('gus', aliceId());
    expect(list(actor.json!.tag)).toMatchObject([{ id: emojiId, type: 'Emoji', name: ':ours:' }]);
  });
});

describe('reactions', () => {
  it("counts Misskey's reaction Like and an EmojiReact as favourites, and their Undo takes them back", async () => {
    const posted = await api('POST', '/api/v1/statuses', { status: 'react to this', visibility: 'public' });
    const statusUri = posted.body.uri;
    const favourites = () => api('GET', `/api/v1/statuses/${posted.body.id}`).then((r) => r.body.favourites_count as number);

    const like = {
      '@context': MISSKEY_CONTEXT, type: 'Like', id: `${peer.url}/likes/9abc`, actor: mia, object: statusUri, content: ':blobcat_mfm:', _misskey_reaction: ':blobcat_mfm:',
      tag: [emojiTag(`${peer.url}/emojis/blobcat_mfm`, ':blobcat_mfm:', `${peer.url}/files/webpublic-abc.png`, { icon: { mediaType: 'image/png' } })],
    };
    expect(await peer.send('mia', `${ours.url}/inbox`, like)).toBe(202);
    await until(favourites, (n) => n === 1, 'the Like counted');

    const react = {
      '@context': PLEROMA_CONTEXT, type: 'EmojiReact', id: `${peer.url}/activities/react-1`, actor: pia, object: statusUri, content: ':blobcat:',
      to: [aliceId()], cc: [PUBLIC], tag: [emojiTag(`${peer.url}/emoji/custom/blobcat.png`, ':blobcat:', `${peer.url}/emoji/custom/blobcat.png`)],
    };
    expect(await peer.send('pia', `${ours.url}/inbox`, react)).toBe(202);
    await until(favourites, (n) => n === 2, 'the EmojiReact counted');
    // Again: still one favourite of pia's.
    expect(await peer.send('pia', `${ours.url}/inbox`, react)).toBe(202);

    // A unicode reaction from gus too, then Pleroma's Undo of the EmojiReact, inlined.
    expect(await peer.send('gus', `${ours.url}/inbox`, { ...react, id: `${peer.url}/activities/react-2`, actor: gus, content: '👍', tag: [] })).toBe(202);
    await until(favourites, (n) => n === 3, 'the unicode EmojiReact counted');
    expect(await peer.send('pia', `${ours.url}/inbox`, { '@context': PLEROMA_CONTEXT, type: 'Undo', id: `${peer.url}/activities/undo-1`, actor: pia, object: react })).toBe(202);
    await until(favourites, (n) => n === 2, 'the EmojiReact undone');
    expect(await peer.send('mia', `${ours.url}/inbox`, { '@context': MISSKEY_CONTEXT, type: 'Undo', id: `${peer.url}/likes/9abc/undo`, actor: mia, object: like })).toBe(202);
    await until(favourites, (n) => n === 1, 'the Like undone');
    const who = await api('GET', `/api/v1/statuses/${posted.body.id}/favourited_by`);
    expect(who.body.map((a: Json) => a.acct)).toEqual([`gus@${peer.domain}`]);
  });

  it("counts snac's EmojiReact, sent under ActivityStreams' context alone, and its Undo takes it back", async () => {
    const posted = await api('POST', '/api/v1/statuses', { status: 'react to this, snac', visibility: 'public' });
    const favourites = () => api('GET', `/api/v1/statuses/${posted.body.id}`).then((r) => r.body.favourites_count as number);
    const carol = await peer.addActor('carol');
    // What snac 2.94 sends (msg_emoji_init, msg_emoji_unreact): no definition of EmojiReact in its context, its own
    // `accounts` and `accountId` terms, the reacted post's author as `attributedTo`.
    const react = {
      '@context': AS, type: 'EmojiReact', id: `${peer.url}/carol/e/651239fe`, actor: carol, published: new Date().toISOString(),
      object: posted.body.uri, to: [PUBLIC, aliceId()], content: '⭐', accounts: [carol], attributedTo: aliceId(), accountId: 'carol', tag: [],
    };
    expect(await peer.send('carol', `${ours.url}/inbox`, react)).toBe(202);
    await until(favourites, (n) => n === 1, "snac's EmojiReact counted");
    const who = await api('GET', `/api/v1/statuses/${posted.body.id}/favourited_by`);
    expect(who.body.map((a: Json) => a.acct)).toEqual([`carol@${peer.domain}`]);

    const { published: _, ...unpublished } = react;
    const undo = { '@context': AS, type: 'Undo', id: `${react.id}/Undo_1796525732.744626`, actor: carol, object: unpublished, published: new Date().toISOString(), to: react.to };
    expect(await peer.send('carol', `${ours.url}/inbox`, undo)).toBe(202);
    await until(favourites, (n) => n === 0, "snac's Undo of its EmojiReact");
  });

  it("takes back a favourite whose Undo names the Like or EmojiReact by id alone (Pleroma, Akkoma), and only its sender's", async () => {
    const posted = await api('POST', '/api/v1/statuses', { status: 'react, then take it back', visibility: 'public' });
    const statusUri = posted.body.uri;
    const favouritedBy = () => api('GET', `/api/v1/statuses/${posted.body.id}/favourited_by`).then((r) => (r.body as Json[]).map((a) => a.acct as string).sort());
    // Pleroma's EmojiReact and plain Like, and Misskey's reaction Like; none of them is served at its id (Pleroma
    // deletes a reaction when it is undone), so only the id we kept tells which favourite an Undo means.
    const react = { '@context': PLEROMA_CONTEXT, type: 'EmojiReact', id: `${peer.url}/activities/7f1e-react`, actor: pia, object: statusUri, content: '🔥', to: [aliceId()], cc: [PUBLIC] };
    const like = { '@context': PLEROMA_CONTEXT, type: 'Like', id: `${peer.url}/activities/7f1e-like`, actor: gus, object: statusUri, to: [aliceId()], cc: [PUBLIC] };
    const mkLike = { '@context': MISSKEY_CONTEXT, type: 'Like', id: `${peer.url}/likes/9f00`, actor: mia, object: statusUri, content: '👍', _misskey_reaction: '👍' };
    expect(await peer.send('pia', `${ours.url}/inbox`, react)).toBe(202);
    expect(await peer.send('gus', `${ours.url}/inbox`, like)).toBe(202);
    expect(await peer.send('mia', `${ours.url}/inbox`, mkLike)).toBe(202);
    await until(favouritedBy, (l) => l.length === 3, 'three favourites');

    // gus names pia's reaction: not his to undo.
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': PLEROMA_CONTEXT, type: 'Undo', id: `${peer.url}/activities/undo-x`, actor: gus, object: react.id, to: [aliceId()], cc: [PUBLIC] })).toBe(202);
    // pia's Undo of her EmojiReact, by id, as Pleroma sends it.
    expect(await peer.send('pia', `${ours.url}/inbox`, { '@context': PLEROMA_CONTEXT, type: 'Undo', id: `${peer.url}/activities/undo-react`, actor: pia, object: react.id, to: [aliceId()], cc: [PUBLIC] })).toBe(202);
    expect(await until(favouritedBy, (l) => l.length === 2, 'the EmojiReact undone')).toEqual([`gus@${peer.domain}`, `mia@${peer.domain}`]);
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': PLEROMA_CONTEXT, type: 'Undo', id: `${peer.url}/activities/undo-like`, actor: gus, object: like.id, to: [aliceId()], cc: [PUBLIC] })).toBe(202);
    expect(await peer.send('mia', `${ours.url}/inbox`, { '@context': MISSKEY_CONTEXT, type: 'Undo', id: `${peer.url}/likes/9f00/undo`, actor: mia, object: mkLike.id })).toBe(202);
    await until(favouritedBy, (l) => l.length === 0, 'every favourite undone');
    expect((await api('GET', `/api/v1/statuses/${posted.body.id}`)).body.favourites_count).toBe(0);
  });
});
