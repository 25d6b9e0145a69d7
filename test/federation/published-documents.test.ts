import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { expectEntity } from '../helpers/schema.ts';
import { verifyAccountLinks } from '../../jobs/profile-links.ts';
import sharp from 'sharp';
import { multipart } from '../helpers/multipart.ts';

// Our people and posts as other servers see them, fetched by a peer that verifies every signature (test/helpers/strict-peer.ts):
// profile fields as PropertyValue attachments, bots as Service actors, links verified by rel="me" (ours and other
// servers', against pages served on loopback: the instance allows private addresses, as the link-card tests do), and
// Notes' replies collections.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let robo: TestUser;
let pages: Server;
let base: string;
const AS = 'https://www.w3.org/ns/activitystreams';
/** Pages on loopback, by path: each names its rel="me" links. */
const served = new Map<string, string>();
/** Paths asked for. */
const asked = new Set<string>();

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses and documents

beforeAll(async () => {
  pages = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    asked.add(path);
    const body = served.get(path);
    if (body === undefined) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
  });
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice, robo] = await registerUsers(ours.app, 'alice', 'robo');
}, 60_000);
afterAll(async () => {
  pages?.closeAllConnections();
  await Promise.all([ours?.close(), peer?.close(), new Promise((r) => pages?.close(r))]);
});

async function api(user: TestUser, method: 'GET' | 'PATCH', url: string, payload?: object): Promise<Json> {
  const res = await ours.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json();
}
const actorOf = (user: TestUser) => `${ours.url}/users/${user.username}`;
const page = (path: string, html: string) => {
  served.set(path, html);
  return `${base}${path}`;
};
/** A field's verification as the Account entity shows it, by name. */
const verifiedAt = (account: Json) => Object.fromEntries((account.fields as Json[]).map((f) => [f.name, f.verified_at]));
const jobsDone = () => until(
  async () => Number((await ours.ctx.db.query(`SELECT count(*) AS n FROM outbox WHERE kind = 'verifyAccountLinks'`)).rows[0].n),
  (n) => n === 0, 'link verification jobs done',
);

describe('our actors', () => {
  it('publishes profile fields as PropertyValue attachments, values as Mastodon renders them, and sends an Update when they change', async () => {
    const gus = await peer.addActor('gus');
    expect(await peer.send('gus', `${actorOf(alice)}/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: actorOf(alice) })).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);

    await api(alice, 'PATCH', '/api/v1/accounts/update_credentials', {
      fields_attributes: [{ name: 'Pronouns', value: 'she/her' }, { name: 'Site', value: 'see https://alice.example/about & <more>' }],
    });
    const update = await peer.waitFor((d) => d.activity.type === 'Update' && (d.activity.object as Json)?.attachment !== undefined);
    expect(update.verified, update.reason).toBe(true);

    const { status, json: actor } = await peer.signedGet('gus', actorOf(alice));
    expect(status).toBe(200);
    expect(actor!.type).toBe('Person');
    expect(actor!.attachment).toEqual([
      { type: 'PropertyValue', name: 'Pronouns', value: 'she/her' },
      { type: 'PropertyValue', name: 'Site', value: 'see <a href="https://alice.example/about" target="_blank" rel="nofollow noopener me">https://alice.example/about</a> &amp; &lt;more&gt;' },
    ]);
    // The terms a reader that does not expand JSON-LD needs, as Mastodon's actors carry them.
    const context = JSON.stringify(actor!['@context']);
    expect(context).toContain('"PropertyValue":"schema:PropertyValue"');
    expect(context).toContain('"value":"schema:value"');
    expect(context).toContain('"schema":"http://schema.org#"');
    expect((update.activity.object as Json).attachment).toEqual(actor!.attachment);
  });

  it('publishes a bot account as a Service that WebFinger finds and whose key signs its deliveries', async () => {
    await api(robo, 'PATCH', '/api/v1/accounts/update_credentials', { bot: true });
    const { json: actor } = await peer.signedGet('gus', actorOf(robo));
    expect(actor).toMatchObject({
      id: actorOf(robo), type: 'Service', preferredUsername: 'robo', inbox: `${actorOf(robo)}/inbox`,
      publicKey: { id: `${actorOf(robo)}#main-key`, owner: actorOf(robo) },
    });
    const finger = await fetch(`${ours.url}/.well-known/webfinger?resource=acct:robo@${ours.domain}`);
    expect(finger.status).toBe(200);
    expect(((await finger.json()) as Json).links).toContainEqual(expect.objectContaining({ rel: 'self', href: actorOf(robo) }));
    // Its Follow reaches the peer signed, the key fetched from the Service actor and found to be its own.
    const lee = await peer.addActor('lee');
    const account = await api(robo, 'GET', `/api/v1/accounts/lookup?acct=lee@${peer.domain}`);
    const res = await ours.app.inject({ method: 'POST', url: `/api/v1/accounts/${account.id}/follow`, headers: bearer(robo.token) });
    expect(res.statusCode, res.body).toBe(200);
    const follow = await peer.waitFor((d) => d.activity.type === 'Follow' && d.activity.actor === actorOf(robo));
    expect(follow.verified, follow.reason).toBe(true);
    expect(follow.activity.object).toBe(lee);
    expectEntity('Account', await api(alice, 'GET', `/api/v1/accounts/${robo.id}`));
    expect((await api(alice, 'GET', `/api/v1/accounts/${robo.id}`)).bot).toBe(true);
  });
});

describe('our attachments', () => {
  it('carry their blurhash and focal point under the names and definitions Mastodon uses, in the Create sent, its signature and the Note served', async () => {
    const hal = await peer.addActor('hal');
    expect(await peer.send('hal', `${actorOf(robo)}/inbox`, { '@context': AS, id: `${hal}/follows/1`, type: 'Follow', actor: hal, object: actorOf(robo) })).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.inbox.includes('/hal'));
    const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 40, b: 90 } } }).png().toBuffer();
    const form = await multipart({ focus: '0.5,-0.25', description: 'a red square', file: { data: photo, filename: 'red.png', type: 'image/png' } });
    const uploaded = await ours.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(robo.token), ...form.headers }, payload: form.payload });
    expect(uploaded.statusCode, uploaded.body).toBeLessThan(300);
    // 206 while the photo is processed.
    const processed = await until(() => ours.app.inject({ method: 'GET', url: `/api/v1/media/${uploaded.json().id}`, headers: bearer(robo.token) }), (r) => r.statusCode === 200, 'the photo processed');
    const media = processed.json();
    expect(media.blurhash).toMatch(/^[0-9A-Za-z#$%*+,\-.:;=?@[\]^_{|}~]{6,}$/);
    const plain = await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(robo.token), payload: { status: 'centred' } });
    expect(plain.statusCode).toBe(200);
    const posted = await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(robo.token), payload: { status: 'a photo', media_ids: [media.id] } });
    expect(posted.statusCode, posted.body).toBe(200);

    const create = await peer.waitFor((d) => d.activity.type === 'Create' && (d.activity.object as Json)?.content?.includes('a photo'));
    expect(create.verified, create.reason).toBe(true);
    const expected = { type: 'Document', mediaType: 'image/png', name: 'a red square', width: 64, height: 48, blurhash: media.blurhash, focalPoint: [0.5, -0.25] };
    // One attachment may be compacted to a single value (JSON-LD's way; readers take either).
    const attachments = (doc: Json) => [doc.attachment].flat();
    expect(attachments(create.activity.object as Json)).toMatchObject([expected]);
    const definitions = { blurhash: 'toot:blurhash', focalPoint: { '@container': '@list', '@id': 'toot:focalPoint' } };
    const defines = (doc: Json) => (doc['@context'] as unknown[]).some((c) => typeof c === 'object' && c !== null && (c as Json).toot === 'http://joinmastodon.org/ns#' && (c as Json).blurhash === definitions.blurhash && JSON.stringify((c as Json).focalPoint) === JSON.stringify(definitions.focalPoint));
    expect(defines(create.activity)).toBe(true);
    const { status, json: note } = await peer.signedGet('hal', (create.activity.object as Json).id);
    expect(status).toBe(200);
    expect(attachments(note!)).toMatchObject([expected]);
    expect(defines(note!)).toBe(true);
    // A post without them says nothing of them.
    const { json: plainNote } = await peer.signedGet('hal', `${actorOf(robo)}/statuses/${plain.json().id}`);
    expect(JSON.stringify(plainNote)).not.toMatch(/blurhash|focalPoint/);
  });
});

describe('verified links', () => {
  it('verifies our links whose page links back with rel="me", keeps that while the value stays, and clears it when it changes', async () => {
    const profile = `${ours.url}/@alice`;
    const back = page('/alice/site', `<html><head><link rel="me" href="${profile}"></head><body>home</body></html>`);
    const anchor = page('/alice/blog', `<html><body><a href="${base}/elsewhere" rel="me">not it</a><a rel="nofollow ME" href="${profile.toUpperCase().replace('HTTPS', 'https')}">me</a></body></html>`);
    const byId = page('/alice/id', `<html><body><a rel="me" href="${actorOf(alice)}">me</a></body></html>`);
    const none = page('/alice/none', `<html><body><a href="${profile}">no rel</a><a rel="met" href="${profile}">not me</a></body></html>`);
    const other = page('/alice/other', `<html><body><a rel="me" href="${ours.url}/@robo">someone else</a></body></html>`);
    const fields = [
      { name: 'Site', value: back }, { name: 'Blog', value: anchor }, { name: 'Id', value: byId }, { name: 'None', value: none },
    ];
    const updated = await api(alice, 'PATCH', '/api/v1/accounts/update_credentials', { fields_attributes: fields });
    expect(verifiedAt(updated)).toEqual({ Site: null, Blog: null, Id: null, None: null });
    await jobsDone();
    const account = await api(alice, 'GET', '/api/v1/accounts/verify_credentials');
    expectEntity('CredentialAccount', account);
    const at = verifiedAt(account);
    expect(at.Site).toEqual(expect.any(String));
    expect(Date.parse(at.Site)).toBeGreaterThan(Date.now() - 60_000);
    expect(at.Blog).toEqual(expect.any(String));
    expect(at.Id).toEqual(expect.any(String));
    expect(at.None).toBeNull();
    expect(account.source.fields.find((f: Json) => f.name === 'Site').verified_at).toBe(at.Site);
    // Others see it too, on the entity and the profile page.
    expect(verifiedAt(await api(robo, 'GET', `/api/v1/accounts/${alice.id}`)).Site).toBe(at.Site);

    // Renamed, same value: still verified; a new value (its page names someone else) is not.
    const edited = await api(alice, 'PATCH', '/api/v1/accounts/update_credentials', {
      fields_attributes: [{ name: 'Home', value: back }, { name: 'Blog', value: other }, { name: 'None', value: none }],
    });
    expect(verifiedAt(edited)).toEqual({ Home: at.Site, Blog: null, None: null });
    await jobsDone();
    expect(verifiedAt(await api(alice, 'GET', '/api/v1/accounts/verify_credentials'))).toEqual({ Home: at.Site, Blog: null, None: null });
  });

  it('verifies nothing that is not a plain link, nor a page that cannot be had', async () => {
    const profile = `${ours.url}/@robo`;
    const back = page('/robo/site', `<a rel="me" href="${profile}">me</a>`);
    await api(robo, 'PATCH', '/api/v1/accounts/update_credentials', {
      fields_attributes: [
        { name: 'Text', value: `my site: ${back}` }, { name: 'Missing', value: `${base}/robo/missing` },
        { name: 'User', value: back.replace('http://', 'http://user:pw@') }, { name: 'Scheme', value: back.replace('http:', 'ftp:') },
      ],
    });
    await jobsDone();
    expect(verifiedAt(await api(robo, 'GET', '/api/v1/accounts/verify_credentials'))).toEqual({ Text: null, Missing: null, User: null, Scheme: null });
    // Only links are fetched: the page of the link inside the text, or with a user, or not http(s), was never asked for.
    expect(asked.has('/robo/missing')).toBe(true);
    expect(asked.has('/robo/site')).toBe(false);
    expect(await verifyAccountLinks(ours.ctx, robo.id)).toEqual([]);
  });

  it('verifies other servers\' links against their profile URL, kept while unchanged, cleared by an Update that changes them', async () => {
    const field = (url: string) => `<a href="${url}" target="_blank" rel="nofollow noopener me" translate="no"><span class="invisible">http://</span><span class="">${url.slice('http://'.length)}</span><span class="invisible"></span></a>`;
    const site = page('/kim/site', `<html><head><link rel="me" href="${peer.profileUrl('kim')}"></head></html>`);
    const plain = page('/kim/plain', `<html><body><a rel="me" href="https://elsewhere.example/@kim">not here</a></body></html>`);
    const kim = await peer.addActor('kim', {
      fields: [
        { name: 'Site', value: field(site) }, { name: 'Plain', value: field(plain) },
        // Not a single link showing its own address: never fetched.
        { name: 'Label', value: `<a href="${site}">my site</a>` }, { name: 'Text', value: 'hello' },
      ],
    });
    const found = await api(alice, 'GET', `/api/v1/accounts/lookup?acct=kim@${peer.domain}`);
    expect(found.fields.map((f: Json) => f.name)).toEqual(['Site', 'Plain', 'Label', 'Text']);
    const verified = await until(async () => verifiedAt(await api(alice, 'GET', `/api/v1/accounts/${found.id}`)), (v) => v.Site !== null, 'kim\'s site verified');
    await jobsDone();
    expect(verifiedAt(await api(alice, 'GET', `/api/v1/accounts/${found.id}`))).toEqual({ Site: verified.Site, Plain: null, Label: null, Text: null });

    // kim's server sends an Update: Site unchanged keeps its verification, Plain's new value is not verified.
    const moved = page('/kim/moved', '<html><body>nothing</body></html>');
    peer.setFields('kim', [{ name: 'Site', value: field(site) }, { name: 'Plain', value: field(moved) }]);
    const { json: person } = await peer.signedGet('kim', kim);
    expect(await peer.send('kim', `${ours.url}/inbox`, { '@context': person!['@context'], id: `${kim}#updates/1`, type: 'Update', actor: kim, object: person })).toBe(202);
    await until(async () => verifiedAt(await api(alice, 'GET', `/api/v1/accounts/${found.id}`)), (v) => !('Label' in v), 'kim updated');
    await jobsDone();
    expect(verifiedAt(await api(alice, 'GET', `/api/v1/accounts/${found.id}`))).toEqual({ Site: verified.Site, Plain: null });
  });
});

describe('replies collections', () => {
  const post = async (user: TestUser, status: string, extra: Json = {}): Promise<Json> => {
    const res = await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload: { status, ...extra } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const noteUri = (user: TestUser, s: Json) => `${actorOf(user)}/statuses/${s.id}`;
  const pageOf = async (url: string): Promise<Json> => {
    const { status, json } = await peer.signedGet('gus', url);
    expect(status, url).toBe(200);
    return json!;
  };

  it('inlines the author\'s first public replies in the Note, then pages through the rest of theirs and then others\', never private, direct or deleted ones', async () => {
    const parent = await post(alice, 'a thread');
    const reply = (user: TestUser, text: string, extra: Json = {}) => post(user, text, { in_reply_to_id: parent.id, ...extra });
    const own = [];
    for (let i = 1; i <= 6; i++) own.push(await reply(alice, `part ${i}`, i === 2 ? { visibility: 'unlisted' } : {}));
    await reply(alice, 'for followers', { visibility: 'private' });
    await reply(alice, '@robo only you', { visibility: 'direct' });
    const gone = await reply(alice, 'deleted');
    expect((await ours.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${gone.id}`, headers: bearer(alice.token) })).statusCode).toBe(200);
    const roboReply = await reply(robo, 'nice thread');
    await reply(robo, 'just followers', { visibility: 'private' });
    // A reply from another server, delivered to us.
    const gusNote = `${peer.actorId('gus')}/statuses/1`;
    expect(await peer.send('gus', `${ours.url}/inbox`, {
      '@context': AS, id: `${gusNote}/activity`, type: 'Create', actor: peer.actorId('gus'), to: [`${AS}#Public`],
      object: { id: gusNote, type: 'Note', attributedTo: peer.actorId('gus'), content: '<p>from afar</p>', inReplyTo: noteUri(alice, parent), to: [`${AS}#Public`], published: new Date().toISOString() },
    })).toBe(202);
    await until(async () => (await api(alice, 'GET', `/api/v1/statuses/${parent.id}/context`)).descendants.length, (n) => n >= 10, 'the remote reply stored');

    const collection = `${noteUri(alice, parent)}/replies`;
    const note = await pageOf(noteUri(alice, parent));
    expect(note.replies).toEqual({
      id: collection, type: 'Collection',
      first: { type: 'CollectionPage', partOf: collection, next: `${collection}?cursor=author%3A${own[4]!.id}`, items: own.slice(0, 5).map((s) => noteUri(alice, s)) },
    });

    const served = await pageOf(collection);
    expect(served).toMatchObject({ id: collection, type: 'Collection', first: `${collection}?cursor=author%3A` });
    const rest = await pageOf(note.replies.first.next);
    // One item is compacted to a single value by JSON-LD, as readers of Fedify's documents expect.
    expect(rest).toMatchObject({ type: 'CollectionPage', partOf: collection, items: noteUri(alice, own[5]!), next: `${collection}?cursor=others%3A` });
    const others = await pageOf(rest.next);
    expect(others.items).toEqual([noteUri(robo, roboReply), gusNote]);
    expect(others.next).toBeUndefined();
    // From the start, the author's pages list the same replies the Note inlines, and more.
    expect((await pageOf(served.first)).items).toEqual(own.map((s) => noteUri(alice, s)));
    expect((await peer.signedGet('gus', `${collection}?cursor=nonsense`)).status).toBe(404);
    // No one's replies for a status that is not there.
    expect((await peer.signedGet('gus', `${noteUri(alice, gone)}/replies`)).status).toBe(404);
    expect((await peer.signedGet('gus', `${actorOf(robo)}/statuses/${parent.id}/replies`)).status).toBe(404);
  });

  it('serves the replies of a followers-only post only to whom the post itself may be shown', async () => {
    const parent = await post(alice, 'followers only', { visibility: 'private' });
    const collection = `${noteUri(alice, parent)}/replies`;
    expect((await peer.unsignedGet(collection)).status).toBe(404);
    expect((await peer.unsignedGet(`${collection}?cursor=author%3A`)).status).toBe(404);
    // gus follows alice: his server holds the post.
    expect((await pageOf(collection)).type).toBe('Collection');
    expect((await pageOf(`${collection}?cursor=author%3A`)).type).toBe('CollectionPage');
  });
});
