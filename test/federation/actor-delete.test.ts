import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { makeAdmin } from '../helpers/admin.ts';
import { WebClient } from '../helpers/web.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { rowsNaming } from '../helpers/leftovers.ts';

// Deleting accounts across servers: the Delete of a local actor goes out signed to every server that
// knows it, once per shared inbox, and a remote actor's own Delete removes what we hold of it but a tombstone.
let ours: Instance;
let peer: StrictPeer;
let local: TestUser, leaving: TestUser;
let rem: string, watcher: string, watcher2: string, bystander: string;
const AS = 'https://www.w3.org/ns/activitystreams';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  // The peer's actors (each with its key pairs to make) are added while our server starts and its users register.
  await Promise.all([
    startHttpsInstance().then(async (started) => {
      ours = started;
      [local, leaving] = await registerUsers(ours.app, 'local', 'leaving');
    }),
    startStrictPeer().then(async (started) => {
      peer = started;
      [rem, watcher, watcher2, bystander] = await Promise.all([peer.addActor('rem'), peer.addActor('watcher'), peer.addActor('watcher2'), peer.addActor('bystander')]);
    }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

const api = async (user: TestUser, method: 'GET' | 'POST', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await ours.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const resolve = async (user: TestUser, handle: string): Promise<Json> => {
  const found = await api(user, 'GET', `/api/v2/search?q=${encodeURIComponent(handle)}&resolve=true&type=accounts`);
  expect(found.status).toBe(200);
  expect(found.body.accounts).toHaveLength(1);
  return found.body.accounts[0];
};
const follow = async (user: TestUser, handle: string): Promise<Json> => {
  const account = await resolve(user, handle);
  expect((await api(user, 'POST', `/api/v1/accounts/${account.id}/follow`)).status).toBe(200);
  await until(async () => (await api(user, 'GET', `/api/v1/accounts/relationships?id[]=${account.id}`)).body[0], (r) => r.following === true, `${handle} accepted`);
  return account;
};
const accountByUri = async (uri: string) => (await ours.ctx.db.query(`SELECT * FROM accounts WHERE uri = $1`, [uri])).rows[0] as Json | undefined;
/** Waits until the work that could still change something has run (test/helpers/work-settled.ts). */
const quiet = () => until(() => workSettled(ours.ctx, { federation: true }), (idle) => idle, 'the queues are empty');

describe('a local account deleted', () => {
  it('is sent as a signed Delete of its actor to the servers that know it, once per shared inbox; its actor is 410', async () => {
    const leavingId = `${ours.url}/users/leaving`;
    await follow(leaving, `@watcher@${peer.domain}`);
    await follow(leaving, `@watcher2@${peer.domain}`);

    const browser = new WebClient(ours.app);
    expect((await browser.signIn(leaving.email, leaving.password)).statusCode).toBe(303);
    const page = await browser.get('/settings/delete');
    expect((await browser.post('/settings/delete', { current_password: leaving.password }, page.body)).headers.location).toBe('/auth/done/account_deleted');

    const del = await peer.waitFor((d) => d.activity.type === 'Delete' && d.activity.actor === leavingId);
    // Verified by the peer with the key it had from the Follows: the actor itself no longer answers.
    expect(del, JSON.stringify(del)).toMatchObject({ verified: true, spec: 'draft-cavage', inbox: '/inbox' });
    expect(del.activity).toMatchObject({ id: `${leavingId}#delete`, object: leavingId });
    expect(JSON.stringify(del.activity.to ?? del.activity.cc)).toContain('Public');
    const leavingRow = (await accountByUri(leavingId)) ?? (await ours.ctx.db.query(`SELECT * FROM accounts WHERE username = 'leaving' AND domain IS NULL`)).rows[0];
    await until(async () => Object.keys(await rowsNaming(ours.ctx.db, leavingRow.id)).length, (n) => n === 0, 'leaving is removed');
    expect(peer.received.filter((d) => d.activity.type === 'Delete' && d.activity.actor === leavingId)).toHaveLength(1);
    expect((await peer.signedGet('watcher', leavingId)).status).toBe(410);
  });
});

describe('a remote actor\'s Delete of itself', () => {
  let remHere: Json;
  let noteUri: string;

  it('is refused when someone else sends it, or signs it', async () => {
    // rem follows local, local follows rem, rem posts and local favourites it.
    expect(await peer.send('rem', `${ours.url}/users/local/inbox`, { '@context': AS, id: `${rem}/follows/1`, type: 'Follow', actor: rem, object: `${ours.url}/users/local` })).toBe(202);
    await until(async () => (await api(local, 'GET', `/api/v1/accounts/${local.id}/followers`)).body as Json[], (l) => l.length === 1, 'rem follows local');
    remHere = await follow(local, `@rem@${peer.domain}`);
    noteUri = `${rem}/statuses/1`;
    const note = { '@context': AS, id: noteUri, type: 'Note', attributedTo: rem, content: '<p>hello from rem</p>', published: new Date().toISOString(), to: [`${AS}#Public`], cc: [`${rem}/followers`] };
    peer.publish('rem', note);
    expect(await peer.send('rem', `${ours.url}/inbox`, { '@context': AS, id: `${noteUri}/activity`, type: 'Create', actor: rem, object: note, to: note.to, cc: note.cc })).toBe(202);
    const home = await until(async () => (await api(local, 'GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === noteUri), 'rem\'s note at home');
    expect((await api(local, 'POST', `/api/v1/statuses/${home.find((s) => s.uri === noteUri)!.id}/favourite`)).status).toBe(200);

    // Another actor naming rem as the object, and rem's Delete signed with another actor's key: neither counts.
    await peer.send('bystander', `${ours.url}/inbox`, { '@context': AS, id: `${bystander}#delete`, type: 'Delete', actor: bystander, object: rem });
    const forged = new Request(`${ours.url}/inbox`, {
      method: 'POST', body: JSON.stringify({ '@context': AS, id: `${rem}#delete`, type: 'Delete', actor: rem, object: rem }),
      headers: { 'content-type': 'application/activity+json', 'user-agent': peer.userAgent },
    });
    expect((await fetch(await peer.sign('bystander', forged))).status).not.toBe(202);
    // The bystander's Delete was taken (202) and is handled from the queue: once the queues are empty, it has been.
    await quiet();
    expect((await accountByUri(rem))!.deleted_at).toBeNull();
    expect((await api(local, 'GET', `/api/v1/accounts/${local.id}`)).body).toMatchObject({ followers_count: 1, following_count: 1 });
  });

  it('removes what we hold of the actor, keeping its row as a tombstone that stale deliveries do not bring back', async () => {
    expect(await peer.send('rem', `${ours.url}/inbox`, { '@context': AS, id: `${rem}#delete`, type: 'Delete', actor: rem, object: rem, to: [`${AS}#Public`] })).toBe(202);
    await until(async () => rowsNaming(ours.ctx.db, remHere.id), (left) => Object.keys(left).length === 0, 'rem\'s rows are gone');
    // The profile is emptied last, after the rows naming the account are gone (services/account-deletion.ts).
    const row = await until(async () => (await accountByUri(rem))!, (r) => r.display_name === '' && r.statuses_count === 0, 'rem\'s profile is emptied');
    expect(row.deleted_at).not.toBeNull();
    expect(row.suspended_at).not.toBeNull();
    expect(row).toMatchObject({ id: remHere.id, username: 'rem', display_name: '', followers_count: 0, statuses_count: 0 });
    expect((await api(local, 'GET', `/api/v1/accounts/${local.id}`)).body).toMatchObject({ followers_count: 0, following_count: 0 });
    const home = (await api(local, 'GET', '/api/v1/timelines/home')).body as Json[];
    expect(home.map((s) => s.uri)).not.toContain(noteUri);
    expect((await ours.ctx.db.query(`SELECT count(*)::int AS n FROM statuses WHERE uri = $1`, [noteUri])).rows[0].n).toBe(0);
    // Nothing was sent back for it (the actor's server deleted it).
    expect(peer.received.filter((d) => d.inbox.includes('/users/rem') && ['Reject', 'Undo'].includes(String(d.activity.type)))).toEqual([]);

    // A late Create and an Update of the actor change nothing; looking it up does not fetch it again.
    const late = { '@context': AS, id: `${rem}/statuses/2`, type: 'Note', attributedTo: rem, content: '<p>late</p>', published: new Date().toISOString(), to: [`${AS}#Public`] };
    await peer.send('rem', `${ours.url}/inbox`, { '@context': AS, id: `${late.id}/activity`, type: 'Create', actor: rem, object: late, to: late.to });
    await peer.send('rem', `${ours.url}/inbox`, { '@context': AS, id: `${rem}#update`, type: 'Update', actor: rem, object: { id: rem, type: 'Person', preferredUsername: 'rem', name: 'Back again', inbox: `${rem}/inbox` } });
    // Even when its row is old enough to be refreshed.
    await ours.ctx.db.query(`UPDATE accounts SET fetched_at = now() - interval '30 days' WHERE uri = $1`, [rem]);
    const fetchesBefore = peer.gets.filter((g) => g.path === '/users/rem').length;
    await api(local, 'GET', `/api/v2/search?q=${encodeURIComponent(`@rem@${peer.domain}`)}&resolve=true&type=accounts`);
    // The Create and the Update were taken (202) and are handled from the queue: once the queues are empty, they have
    // been. A refresh of a stale actor starts in the request, by taking its lock in Redis (federation/remote-accounts.ts)
    // before the answer: sent on the same connection after that, this read shows whether one began.
    await quiet();
    expect(await ours.ctx.redis.exists(`${ours.config.redisPrefix}actor-refresh:${rem}`)).toBe(0);
    expect((await ours.ctx.db.query(`SELECT count(*)::int AS n FROM statuses WHERE uri = $1`, [late.id])).rows[0].n).toBe(0);
    expect((await accountByUri(rem))!.display_name).toBe('');
    expect(peer.gets.filter((g) => g.path === '/users/rem').length).toBe(fetchesBefore);
  });
});

describe('an operator deleting a remote account', () => {
  it('rejects its follows of our accounts and undoes ours of it, at its server (as Mastodon\'s reject_follows!/undo_follows!)', async () => {
    const [spammer, mod] = await Promise.all([
      peer.addActor('spammer'),
      createApp(ours.app, 'read write follow push admin:read admin:write').then((app) => registerUser(ours.app, app, 'moddy', 'read write follow admin:read admin:write')),
    ]);
    await makeAdmin(ours, mod);
    const followId = `${spammer}/follows/1`;
    expect(await peer.send('spammer', `${ours.url}/users/local/inbox`, { '@context': AS, id: followId, type: 'Follow', actor: spammer, object: `${ours.url}/users/local` })).toBe(202);
    const here = await follow(local, `@spammer@${peer.domain}`);
    await until(async () => (await api(local, 'GET', `/api/v1/accounts/relationships?id[]=${here.id}`)).body[0], (r) => r.followed_by === true, 'spammer follows local');
    const ourFollowUri = (await ours.ctx.db.query(`SELECT uri FROM follows WHERE account_id = $1 AND target_account_id = $2`, [local.id, here.id])).rows[0].uri as string;

    const admin = async (method: 'POST' | 'DELETE', url: string, payload?: object) =>
      (await ours.app.inject({ method, url, headers: bearer(mod.token), ...(payload ? { payload } : {}) })).statusCode;
    expect(await admin('POST', `/api/v1/admin/accounts/${here.id}/action`, { type: 'suspend' })).toBe(200);
    expect(await admin('DELETE', `/api/v1/admin/accounts/${here.id}`)).toBe(200);

    const toSpammer = (type: string) => (d: { inbox: string; activity: Json }) => d.inbox === `${new URL(spammer).pathname}/inbox` && d.activity.type === type;
    const reject = await peer.waitFor(toSpammer('Reject'));
    expect(reject.verified, reject.reason).toBe(true);
    expect(reject.activity.actor).toBe(`${ours.url}/users/local`);
    expect(reject.activity.object).toMatchObject({ id: followId, type: 'Follow', actor: spammer });
    // For one inbox: the RSA signatures (HTTP, verified above, and Linked Data), no Object Integrity Proof.
    expect(reject.activity.signature).toMatchObject({ type: 'RsaSignature2017', creator: `${ours.url}/users/local#main-key` });
    expect(reject.activity.proof).toBeUndefined();
    const undo = await peer.waitFor(toSpammer('Undo'));
    expect(undo.verified, undo.reason).toBe(true);
    expect(undo.activity.object).toMatchObject({ id: ourFollowUri, type: 'Follow', actor: `${ours.url}/users/local`, object: spammer });
    await until(async () => (await accountByUri(spammer))!.display_name, (n) => n === '', 'spammer\'s profile is emptied');
  });
});
