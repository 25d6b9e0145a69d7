import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { workSettled } from '../helpers/work-settled.ts';
import {
  LEMMY_CONTEXT, LITEPUB_CONTEXT, akkomaCreate, friendicaCreate, lemmyActivity, lemmyAnnounce, lemmyComment, lemmyPage, mastodonPhotoNote, misskeyCreate,
  mobilizonCreate, peertubeAnnounce, peertubeVideo, pixelfedCreate, wordpressCreate,
} from './fixtures/other-software.ts';

// What the rest of the fediverse sends, delivered signed by the strict peer to our shared inbox, and what a local
// follower then sees through the API, as Mastodon shows it: Lemmy communities (Groups relaying their members' posts),
// PeerTube channels, WordPress blogs, Mobilizon events, Pixelfed photos, Misskey, Akkoma and Friendica posts.
let ours: Instance;
let peer: StrictPeer; // the "home" server of most actors (a Lemmy instance, a PeerTube instance…, all one here)
let other: StrictPeer; // another server, whose members post in the first one's community
let alice: TestUser;
const actors: Record<string, string> = {};
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;
const FLOOD_BUDGET = 12;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  return res.json();
};
const inbox = () => `${ours.url}/inbox`;
const search = async (uri: string) => (await api('GET', `/api/v2/search?q=${encodeURIComponent(uri)}&type=statuses`)).statuses as Json[];
const statusByUri = (uri: string) => until(() => search(uri), (l) => l.length === 1, `status ${uri}`).then((l) => l[0]!);
const home = () => api('GET', '/api/v1/timelines/home?limit=40') as Promise<Json[]>;
/** The entry of the home timeline whose status (or boosted status) has this uri. */
const inHome = (uri: string) => until(home, (l) => l.some((s) => (s.reblog ?? s).uri === uri), `${uri} in the home timeline`).then((l) => l.find((s) => (s.reblog ?? s).uri === uri)!);
const quiet = () => until(() => workSettled(ours.ctx, { federation: true, outbox: 'none' }), (idle) => idle, 'the queues are empty');
let seq = 0;

beforeAll(async () => {
  // A small relay budget, for the flooding group below (the others stay well under it).
  [ours, peer, other] = await Promise.all([startHttpsInstance({ GROUP_RELAYED_PER_MINUTE: String(FLOOD_BUDGET) }), startStrictPeer(), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  const people = ['picard', 'root', 'blogger', 'organiser', 'photog', 'mk', 'ak', 'fr', 'masto'];
  const groups = ['tenforward', 'root_channel', 'floody'];
  await Promise.all([
    ...people.map(async (u) => { actors[u] = await peer.addActor(u); }),
    ...groups.map(async (u) => { actors[u] = await peer.addActor(u, { type: 'Group' }); }),
    other.addActor('riker').then((id) => { actors.riker = id; }),
  ]);
  // alice follows every one of them but the community's members and PeerTube's account (she follows its channel).
  const followed = ['tenforward', 'root_channel', 'floody', 'blogger', 'organiser', 'photog', 'mk', 'ak', 'fr', 'masto'];
  const ids: string[] = [];
  for (const u of followed) {
    const account = await api('GET', `/api/v1/accounts/lookup?acct=${u}@${peer.domain}`);
    expect(account.id, `lookup of ${u}: ${JSON.stringify(account)}`).toBeTruthy();
    await api('POST', `/api/v1/accounts/${account.id}/follow`);
    ids.push(account.id);
  }
  await until(async () => (await api('GET', `/api/v1/accounts/relationships?${ids.map((id) => `id[]=${id}`).join('&')}`)) as Json[], (l) => l.length === ids.length && l.every((r) => r.following === true), 'alice follows them all');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close(), other?.close()]);
});

describe('Lemmy: a community relays its members\' posts', () => {
  const community = () => actors.tenforward!;
  const announce = (object: Json | string) => lemmyAnnounce({ id: `${community()}/activities/announce/${++seq}`, community: community(), object });
  let page: string;

  it('shows the community as a group, and a relayed post as its boost of the member\'s Page, titled and linked', async () => {
    const group = await api('GET', `/api/v1/accounts/lookup?acct=tenforward@${peer.domain}`);
    expect(group).toMatchObject({ group: true, bot: false });
    page = `${peer.url}/post/${++seq}`;
    const object = lemmyPage({ id: page, author: actors.picard!, community: community(), name: 'Warp core maintenance & you', content: '<p>Body that Mastodon leaves out</p>', link: 'https://example.com/warp' });
    const create = lemmyActivity('Create', { id: `${peer.url}/activities/create/${++seq}`, actor: actors.picard!, community: community(), object });
    expect(await peer.send('tenforward', inbox(), announce(create))).toBe(202);

    const entry = await inHome(page);
    expect(entry.account.acct).toBe(`tenforward@${peer.domain}`);
    expect(entry.reblog.account.acct).toBe(`picard@${peer.domain}`);
    expect(entry.reblog.content).toBe(`<h2>Warp core maintenance &amp; you</h2><p><a href="${page}" rel="nofollow noopener noreferrer" target="_blank">${page}</a></p>`);
    expect(entry.reblog.spoiler_text).toBe('');
    expect(entry.reblog.visibility).toBe('public');
    expect(entry.reblog.language).toBe(null);
  });

  it('relays a comment as a reply in the post\'s thread, and an Update as an edit', async () => {
    const comment = `${peer.url}/comment/${++seq}`;
    const note = lemmyComment({ id: comment, author: actors.picard!, community: community(), inReplyTo: page, content: '<p>Reverse the polarity</p>' });
    expect(await peer.send('tenforward', inbox(), announce(lemmyActivity('Create', { id: `${peer.url}/activities/create/${++seq}`, actor: actors.picard!, community: community(), object: note })))).toBe(202);
    const reply = (await inHome(comment)).reblog;
    const post = await statusByUri(page);
    expect(reply.in_reply_to_id).toBe(post.id);
    expect(reply.content).toBe('<p>Reverse the polarity</p>');

    const edited = lemmyPage({ id: page, author: actors.picard!, community: community(), name: 'Warp core maintenance, revised' });
    const update = lemmyActivity('Update', { id: `${peer.url}/activities/update/${++seq}`, actor: actors.picard!, community: community(), object: { ...edited, updated: new Date().toISOString() } });
    expect(await peer.send('tenforward', inbox(), announce(update))).toBe(202);
    await until(() => api('GET', `/api/v1/statuses/${post.id}`), (s) => String(s.content).startsWith('<h2>Warp core maintenance, revised</h2>'), 'edited');
  });

  it('lets a local person reply to and boost the relayed post, sending both to its author\'s server', async () => {
    const post = await statusByUri(page);
    const reply = await api('POST', '/api/v1/statuses', { status: `@picard@${peer.domain} engage`, in_reply_to_id: post.id });
    expect(reply.in_reply_to_id).toBe(post.id);
    await api('POST', `/api/v1/statuses/${post.id}/reblog`);
    const created = await peer.waitFor((d) => d.activity.type === 'Create' && (d.activity.object as Json)?.inReplyTo === page);
    expect(created.verified).toBe(true);
    expect((await peer.waitFor((d) => d.activity.type === 'Announce' && d.activity.object === page)).verified).toBe(true);
  });

  it('fetches an activity the community names by id alone, and takes it only when its actor and its post are of its own server', async () => {
    // The member's Create, served at its id by its server (as Lemmy serves activities); the Announce names it only.
    const byId = `${peer.url}/post/${++seq}`;
    const createId = `${peer.url}/activities/create/${++seq}`;
    peer.publish('picard', { '@context': LEMMY_CONTEXT, ...lemmyActivity('Create', { id: createId, actor: actors.picard!, community: community(), object: lemmyPage({ id: byId, author: actors.picard!, community: community(), name: 'Named by id' }) }) });
    expect(await peer.send('tenforward', inbox(), announce(createId))).toBe(202);
    const entry = await inHome(byId);
    expect(entry.account.acct).toBe(`tenforward@${peer.domain}`);
    expect(entry.reblog.account.acct).toBe(`picard@${peer.domain}`);
    expect(entry.reblog.content).toContain('<h2>Named by id</h2>');
    expect(peer.gets.find((g) => g.path === new URL(createId).pathname)).toMatchObject({ signed: true, status: 200 });

    // A post named by id alone is fetched and shown as the community's boost too.
    const page2 = `${peer.url}/post/${++seq}`;
    peer.publish('picard', { '@context': LEMMY_CONTEXT, ...lemmyPage({ id: page2, author: actors.picard!, community: community(), name: 'A post by id' }) });
    expect(await peer.send('tenforward', inbox(), announce(page2))).toBe(202);
    expect((await inHome(page2)).account.acct).toBe(`tenforward@${peer.domain}`);

    // Served by this server but claiming another server's member as its actor: refused.
    const spoofed = `${peer.url}/post/${++seq}`;
    const claimId = `${peer.url}/activities/create/${++seq}`;
    peer.publish('picard', { '@context': LEMMY_CONTEXT, ...lemmyActivity('Create', { id: claimId, actor: actors.riker!, community: community(), object: lemmyPage({ id: spoofed, author: actors.riker!, community: community(), name: 'Spoofed by id' }) }) });
    // A post served here but attributed to another server's account: refused.
    const foreign = `${peer.url}/post/${++seq}`;
    peer.publish('picard', { '@context': LEMMY_CONTEXT, ...lemmyPage({ id: foreign, author: actors.riker!, community: community(), name: 'Foreign by id' }) });
    // An Announce served by id: not followed further (one level only).
    const nestedId = `${peer.url}/activities/announce/${++seq}`;
    const nestedPage = `${peer.url}/post/${++seq}`;
    peer.publish('picard', { '@context': LEMMY_CONTEXT, ...lemmyAnnounce({ id: nestedId, community: community(), object: lemmyActivity('Create', { id: `${peer.url}/activities/create/${++seq}`, actor: actors.picard!, community: community(), object: lemmyPage({ id: nestedPage, author: actors.picard!, community: community(), name: 'Nested' }) }) }) });
    // An id nobody serves.
    const missing = `${peer.url}/activities/create/${++seq}`;
    for (const id of [claimId, foreign, nestedId, missing]) expect(await peer.send('tenforward', inbox(), announce(id))).toBe(202);
    await quiet();
    for (const uri of [spoofed, foreign, nestedPage]) expect(await search(uri)).toEqual([]);
    expect((await home()).some((s) => /Spoofed by id|Foreign by id|Nested/.test(String((s.reblog ?? s).content)))).toBe(false);
  });

  it('takes a relayed Delete by the post\'s author, and ignores relayed votes', async () => {
    const like = lemmyActivity('Like', { id: `${peer.url}/activities/like/${++seq}`, actor: actors.picard!, community: community(), object: page });
    expect(await peer.send('tenforward', inbox(), announce(like))).toBe(202);
    const del = lemmyActivity('Delete', { id: `${peer.url}/activities/delete/${++seq}`, actor: actors.picard!, community: community(), object: page });
    expect(await peer.send('tenforward', inbox(), announce(del))).toBe(202);
    await until(() => search(page), (l) => l.length === 0, 'deleted');
  });

  it('takes a member of another server\'s post only as that server serves it, never as the community inlined it', async () => {
    const real = `${other.url}/post/${++seq}`;
    const createId = `${other.url}/activities/create/${++seq}`;
    const genuine = lemmyPage({ id: real, author: actors.riker!, community: community(), name: 'Genuine title' });
    // riker's server serves the Create (Lemmy serves activities by id); the community's copy was tampered with.
    other.publish('riker', { '@context': AS, ...lemmyActivity('Create', { id: createId, actor: actors.riker!, community: community(), object: genuine }) });
    const forged = lemmyActivity('Create', { id: createId, actor: actors.riker!, community: community(), object: { ...genuine, name: 'Forged title' } });
    expect(await peer.send('tenforward', inbox(), announce(forged))).toBe(202);
    const entry = await inHome(real);
    expect(entry.reblog.account.acct).toBe(`riker@${other.domain}`);
    expect(entry.reblog.content).toContain('<h2>Genuine title</h2>');

    // Inlined by the community's server, claiming another server's member as its actor: refused.
    const spoofed = `${peer.url}/post/${++seq}`;
    const claim = lemmyActivity('Create', { id: `${peer.url}/activities/create/${++seq}`, actor: actors.riker!, community: community(), object: lemmyPage({ id: spoofed, author: actors.riker!, community: community(), name: 'Spoofed' }) });
    // A post of another server that its server does not serve: nothing is stored.
    const missing = `${other.url}/post/${++seq}`;
    const unserved = lemmyActivity('Create', { id: `${other.url}/activities/create/${++seq}`, actor: actors.riker!, community: community(), object: lemmyPage({ id: missing, author: actors.riker!, community: community(), name: 'Never served' }) });
    expect(await peer.send('tenforward', inbox(), announce(claim))).toBe(202);
    expect(await peer.send('tenforward', inbox(), announce(unserved))).toBe(202);
    await quiet();
    expect(await search(spoofed)).toEqual([]);
    expect(await search(missing)).toEqual([]);
    expect((await home()).some((s) => /Spoofed|Never served|Forged/.test(String((s.reblog ?? s).content)))).toBe(false);
  });
});

describe('PeerTube: a channel announces its account\'s Video', () => {
  it('shows the video as the channel\'s boost: title, link to its page, its largest MP4 within the size cap with its preview image', async () => {
    const uuid = '0f3c2b1a-5d4e-4f60-8a7b-9c8d7e6f5a4b';
    const video = peertubeVideo({ base: peer.url, uuid, account: actors.root!, channel: actors.root_channel!, name: 'Modular synth jam', description: '**Patch** notes' });
    peer.publish('root', video);
    expect(await peer.send('root_channel', inbox(), peertubeAnnounce({ channel: actors.root_channel!, video: String(video.id) }))).toBe(202);
    const entry = await inHome(String(video.id));
    expect(entry.account).toMatchObject({ acct: `root_channel@${peer.domain}`, group: true });
    const status = entry.reblog;
    expect(status.account.acct).toBe(`root@${peer.domain}`);
    const watch = `${peer.url}/videos/watch/${uuid}`;
    expect(status.content).toBe(`<h2>Modular synth jam</h2><p><a href="${watch}" rel="nofollow noopener noreferrer" target="_blank">${watch}</a></p>`);
    expect(status.url).toBe(watch);
    expect(status.tags.map((t: Json) => t.name)).toEqual(['synthesizer']);
    // The 1080p file is over MAX_VIDEO_BYTES and the HLS playlist's fragments are not files to show: the 720p web video.
    expect(status.media_attachments).toHaveLength(1);
    const media = status.media_attachments[0];
    expect(media).toMatchObject({
      type: 'video', remote_url: `${peer.url}/static/web-videos/${uuid}-720.mp4`, preview_remote_url: `${peer.url}/lazy-static/previews/${uuid}.jpg`,
      description: 'Modular synth jam', meta: { original: { width: 1280, height: 720 } },
    });
    // Readers load it (and its preview) from here: the media proxy copies both at the first view.
    expect(media.url).toBe(`${ours.url}/media_proxy/${media.id}/original`);
    expect(media.preview_url).toBe(`${ours.url}/media_proxy/${media.id}/small`);
  });
});

describe('long posts, events and photos', () => {
  it('shows a WordPress Article as its title, excerpt and link, with its image', async () => {
    const create = wordpressCreate({ base: peer.url, author: actors.blogger!, postId: ++seq, title: 'Lighthouses of Brittany', excerpt: 'Seven towers, one coast.', body: '<p>The full article, long.</p>', image: `${peer.url}/wp-content/uploads/lighthouse.jpg` });
    expect(await peer.send('blogger', inbox(), create)).toBe(202);
    const id = String((create.object as Json).id);
    const status = (await inHome(id));
    const url = String((create.object as Json).url);
    expect(status.content).toBe(`<h2>Lighthouses of Brittany</h2><p>Seven towers, one coast.</p><p><a href="${url}" rel="nofollow noopener noreferrer" target="_blank">${url}</a></p>`);
    expect(status).toMatchObject({ spoiler_text: '', sensitive: false, url, language: 'en' });
    expect(status.tags.map((t: Json) => t.name)).toEqual(['lighthouses']);
    expect(status.media_attachments[0]).toMatchObject({ type: 'image', description: 'A lighthouse at dusk' });
  });

  it('shows a Mobilizon Event with its start, end and place', async () => {
    const create = mobilizonCreate({ base: peer.url, organiser: actors.organiser!, uuid: `ev-${++seq}`, name: 'Repair café', startTime: '2026-12-24T18:00:00Z', endTime: '2026-12-24T21:30:00Z' });
    expect(await peer.send('organiser', inbox(), create)).toBe(202);
    const status = await inHome(String((create.object as Json).id));
    expect(status.content).toContain('<h2>Repair café</h2>');
    expect(status.content).toContain('<p>2026-12-24 18:00 UTC – 2026-12-24 21:30 UTC<br />Salle des fêtes, 1 rue de la Mairie, 44000, Nantes, France</p>');
    expect(status.content).not.toContain('Bring your own mug');
    expect(status.media_attachments[0]).toMatchObject({ type: 'image', description: 'Banner' });
  });

  it('keeps a Pixelfed photo\'s blurhash and description, and a Mastodon one\'s focal point', async () => {
    const id = `${peer.url}/p/photog/${++seq}`;
    const blurhash = 'U9Eyb[%M00of~qayRjWB00WB?bt7%MRjxuof';
    expect(await peer.send('photog', inbox(), pixelfedCreate({ base: peer.url, user: actors.photog!, id, caption: 'Cats', image: `${peer.url}/storage/m/cats.jpg`, blurhash }))).toBe(202);
    const photo = await inHome(id);
    expect(photo.media_attachments[0]).toMatchObject({ type: 'image', blurhash, description: 'Two cats on a windowsill', meta: { focus: { x: 0, y: 0 } } });

    const harbour = `${peer.url}/users/masto/statuses/${++seq}`;
    const hash = 'LEHV6nWB2yk8pyo0adR*.7kCMdnj';
    expect(await peer.send('masto', inbox(), mastodonPhotoNote({ user: actors.masto!, id: harbour, image: `${peer.url}/system/harbour.png`, blurhash: hash, focalPoint: [-0.42, 0.8] }))).toBe(202);
    expect((await inHome(harbour)).media_attachments[0]).toMatchObject({ blurhash: hash, description: 'Boats in a harbour', meta: { focus: { x: -0.42, y: 0.8 } } });
  });
});

describe('posts written in other markups', () => {
  it('shows Misskey\'s HTML content, not its MFM', async () => {
    const id = `${peer.url}/notes/9${++seq}`;
    // Misskey renders MFM's functions ($[spin …]) as <i> in its HTML.
    expect(await peer.send('mk', inbox(), misskeyCreate({ user: actors.mk!, id, html: '<p><span>Hello <b>world</b><br><i>🍮</i></span></p>', mfm: 'Hello **world**\n$[spin 🍮]', file: `${peer.url}/files/webpublic-1.webp` }))).toBe(202);
    const status = await inHome(id);
    expect(status.content).toBe('<p><span>Hello <b>world</b><br /><i>🍮</i></span></p>');
    expect(status.media_attachments[0]).toMatchObject({ type: 'image', description: null });
  });

  it('takes a Misskey quote (`_misskey_quote`, `quoteUrl`) of a post here as a quote awaiting approval, showing its HTML', async () => {
    const quoted = await api('POST', '/api/v1/statuses', { status: 'quote me', visibility: 'public' });
    const id = `${peer.url}/notes/9${++seq}`;
    const mfm = '$[x2 **Look**] at this <plain>:not_an_emoji:</plain>';
    expect(await peer.send('mk', inbox(), misskeyCreate({ user: actors.mk!, id, html: '<p><span><i><b>Look</b></i> at this :not_an_emoji:</span></p>', mfm, quote: quoted.uri }))).toBe(202);
    const status = await inHome(id);
    expect(status.content).toBe(`<p><span><i><b>Look</b></i> at this :not_an_emoji:<br /><br />RE: ${`<a href="${quoted.uri}" rel="nofollow noopener noreferrer" target="_blank">${quoted.uri}</a>`}</span></p>`);
    expect(status.content).not.toContain('$[');
    expect(status.quote).toMatchObject({ state: 'pending' });
    expect((await api('GET', `/api/v1/statuses/${quoted.id}`)).quotes_count).toBe(0); // not counted before it is approved
  });

  it('shows an Akkoma post that comes with contentMap and no content, in its language', async () => {
    peer.publishOpenly('/schemas/litepub-0.1.jsonld', LITEPUB_CONTEXT);
    const id = `${peer.url}/objects/${++seq}`;
    expect(await peer.send('ak', inbox(), akkomaCreate({ user: actors.ak!, id, html: '<p>Bonjour <em>tout</em> le monde</p>', markdown: 'Bonjour *tout* le monde', context: `${peer.url}/schemas/litepub-0.1.jsonld` }))).toBe(202);
    const status = await inHome(id);
    expect(status.content).toBe('<p>Bonjour <em>tout</em> le monde</p>');
    expect(status.language).toBe('en');
  });

  it('shows a Friendica Article as its title and link', async () => {
    const guid = `f${++seq}`;
    expect(await peer.send('fr', inbox(), friendicaCreate({ base: peer.url, user: actors.fr!, guid, title: 'Notes from the meeting', html: '<p>Long minutes.</p>' }))).toBe(202);
    const status = await inHome(`${peer.url}/objects/${guid}`);
    const url = `${peer.url}/display/${guid}`;
    expect(status.content).toBe(`<h2>Notes from the meeting</h2><p><a href="${url}" rel="nofollow noopener noreferrer" target="_blank">${url}</a></p>`);
    expect(status.language).toBe('en');
  });
});

describe('search by URL', () => {
  it('finds a Lemmy post and a Mobilizon event by their URLs, fetched and converted as when pushed', async () => {
    const page = `${peer.url}/post/${++seq}`;
    peer.publish('picard', { '@context': LEMMY_CONTEXT, ...lemmyPage({ id: page, author: actors.picard!, community: actors.tenforward!, name: 'Found by search' }) });
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(page)}&type=statuses&resolve=true`);
    expect(found.statuses).toHaveLength(1);
    expect(found.statuses[0].content).toBe(`<h2>Found by search</h2><p>${`<a href="${page}" rel="nofollow noopener noreferrer" target="_blank">${page}</a>`}</p>`);

    const event = mobilizonCreate({ base: peer.url, organiser: actors.organiser!, uuid: `ev-${++seq}`, name: 'Fetched event', startTime: '2027-01-05T17:00:00Z', endTime: '2027-01-05T19:00:00Z' });
    peer.publish('organiser', { '@context': event['@context'], ...(event.object as Json) });
    const byUrl = await api('GET', `/api/v2/search?q=${encodeURIComponent(String((event.object as Json).id))}&type=statuses&resolve=true`);
    expect(byUrl.statuses[0].content).toContain('<p>2027-01-05 17:00 UTC – 2027-01-05 19:00 UTC<br />Salle des fêtes, 1 rue de la Mairie, 44000, Nantes, France</p>');
    expect(byUrl.statuses[0].media_attachments[0]).toMatchObject({ description: 'Banner' });
  });
});

describe('what is refused', () => {
  it('answers a Create of an unknown type with 202 and stores nothing; refuses a body over 1 MB with 413', async () => {
    const chat = { '@context': AS, id: `${actors.mk}/chat/${++seq}`, type: 'Create', actor: actors.mk, to: [PUBLIC], object: { id: `${actors.mk}/chat/${seq}/o`, type: 'Widget', attributedTo: actors.mk, content: 'gizmo', to: [PUBLIC] } };
    expect(await peer.send('mk', inbox(), chat)).toBe(202);
    const huge = lemmyPage({ id: `${peer.url}/post/${++seq}`, author: actors.picard!, community: actors.tenforward!, name: 'Huge', content: `<p>${'x'.repeat(2 * 1024 * 1024)}</p>` });
    expect(await peer.send('tenforward', inbox(), lemmyAnnounce({ id: `${actors.tenforward}/activities/announce/${++seq}`, community: actors.tenforward!, object: lemmyActivity('Create', { id: `${peer.url}/activities/create/${++seq}`, actor: actors.picard!, community: actors.tenforward!, object: huge }) }))).toBe(413);
    await quiet();
    expect(await search(String(chat.object.id))).toEqual([]);
    expect(await search(String(huge.id))).toEqual([]);
  });

  it('takes no more than its budget of relayed activities a minute from a group that floods', async () => {
    // All sent within one minute's window: wait for the next one when this one is about to end.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 8_000) await new Promise((r) => setTimeout(r, left + 50));
    const community = actors.floody!;
    const pages: string[] = [];
    for (let i = 0; i <= FLOOD_BUDGET; i++) {
      const page = `${peer.url}/post/${++seq}`;
      pages.push(page);
      const create = lemmyActivity('Create', { id: `${peer.url}/activities/create/${++seq}`, actor: actors.picard!, community, object: lemmyPage({ id: page, author: actors.picard!, community, name: `Flood ${i}` }) });
      expect(await peer.send('floody', inbox(), lemmyAnnounce({ id: `${community}/activities/announce/${++seq}`, community, object: create }))).toBe(202);
    }
    await quiet();
    const stored = (await Promise.all(pages.map(search))).filter((l) => l.length === 1);
    expect(stored).toHaveLength(FLOOD_BUDGET);
  });

  it('refuses a fetched document over 1 MB: a channel announcing such a Video stores nothing', async () => {
    const video = peertubeVideo({ base: peer.url, uuid: `big-${++seq}`, account: actors.root!, channel: actors.root_channel!, name: 'Huge', description: 'y'.repeat(1024 * 1024 + 10) });
    peer.publish('root', video);
    expect(await peer.send('root_channel', inbox(), peertubeAnnounce({ channel: actors.root_channel!, video: String(video.id) }))).toBe(202);
    await quiet();
    expect(await search(String(video.id))).toEqual([]);
    expect(peer.gets.some((g) => g.path === new URL(String(video.id)).pathname && g.status === 200)).toBe(true);
  });
});
