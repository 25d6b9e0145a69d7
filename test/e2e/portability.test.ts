import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';

// Account portability across two servers over https: pat on a exports follows, lists, blocks, mutes and
// bookmarks as Mastodon's CSV files; pen on b imports them and ends with the same relations, to the same accounts.
let a: Instance;
let b: Instance;
let pat: TestUser, ann: TestUser, ben: TestUser, dee: TestUser; // on a
let pen: TestUser, cat: TestUser; // on b
let del: TestUser, fan: TestUser; // on a and b, for the deletion below

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  [a, b] = await Promise.all([startHttpsInstance(), startHttpsInstance()]);
  [[pat, ann, ben, dee, del], [pen, cat, fan]] = await Promise.all([registerUsers(a.app, 'pat', 'ann', 'ben', 'dee', 'del'), registerUsers(b.app, 'pen', 'cat', 'fan')]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const api = async (on: Instance, user: TestUser, method: 'GET' | 'POST', url: string, payload?: object, status = 200): Promise<any> => {
  const res = await on.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.json();
};
const lookup = async (on: Instance, user: TestUser, acct: string) => (await api(on, user, 'GET', `/api/v1/accounts/lookup?acct=${acct}`)) as Json;
const relationship = async (on: Instance, user: TestUser, id: string) => ((await api(on, user, 'GET', `/api/v1/accounts/relationships?id[]=${id}`)) as Json[])[0]!;
const browserOf = async (on: Instance, user: TestUser) => {
  const browser = new WebClient(on.app);
  expect((await browser.signIn(user.email, user.password)).statusCode).toBe(303);
  return browser;
};
const download = async (browser: WebClient, name: string) => {
  const res = await browser.get(`/settings/exports/${name}.csv`);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toContain('text/csv');
  return res.body;
};
/** Rows of a CSV file in a stable order, the header (when there is one) first. */
const rows = (csv: string, header: boolean) => {
  const lines = csv.split(/\r?\n/).filter((l) => l !== '');
  return header ? [lines[0], ...lines.slice(1).sort()] : lines.sort();
};
/** Uploads a file from b's import page, as a browser does, and waits for the job to finish it; returns its page. */
const importFile = async (browser: WebClient, type: string, csv: string) => {
  const page = await browser.get('/settings/import');
  const body = await multipart({ _csrf: csrfOf(page.body), type, mode: 'merge', data: { data: Buffer.from(csv), filename: `${type}.csv`, type: 'text/csv' } });
  const res = await browser.app.inject({ method: 'POST', url: '/settings/import', payload: body.payload, headers: { ...body.headers, accept: 'text/html', cookie: browser.jar.header() } });
  expect(res.statusCode, res.body.slice(0, 2000)).toBe(303);
  const done = await until(() => browser.get(String(res.headers.location)).then((r) => r.body), (html) => html.includes('<dd>Finished</dd>'), `import of ${type}`);
  expect(done, `${type}: ${done.slice(0, 3000)}`).not.toContain('class="import-failure"');
  return done;
};

describe('moving one\'s relations from one server to another with export and import', () => {
  it('exports on a, imports on b: the same follows (with their options), lists, blocks, mutes and bookmarks', async () => {
    // pat's relations on a: ann (a) and cat (b) followed and listed, ben blocked, dee muted, a post of each bookmarked.
    const catOnA = await lookup(a, pat, `cat@${b.domain}`);
    await api(a, pat, 'POST', `/api/v1/accounts/${ann.id}/follow`, { reblogs: false, notify: true, languages: ['en'] });
    await api(a, pat, 'POST', `/api/v1/accounts/${catOnA.id}/follow`);
    // While b's Accept travels: the relations that do not need it.
    const catAccepts = until(() => relationship(a, pat, catOnA.id), (r) => r.following === true, 'cat (b) accepts pat (a)');
    catAccepts.catch(() => {}); // awaited below
    await api(a, pat, 'POST', `/api/v1/accounts/${ben.id}/block`);
    await api(a, pat, 'POST', `/api/v1/accounts/${dee.id}/mute`, { notifications: false });
    const annPost = await api(a, ann, 'POST', '/api/v1/statuses', { status: 'worth keeping' });
    const catPost = await api(b, cat, 'POST', '/api/v1/statuses', { status: 'also worth keeping' });
    const catPostOnA = ((await api(a, pat, 'GET', `/api/v2/search?q=${encodeURIComponent(catPost.uri)}&resolve=true&type=statuses`)) as Json).statuses[0];
    expect(catPostOnA?.uri).toBe(catPost.uri);
    await api(a, pat, 'POST', `/api/v1/statuses/${annPost.id}/bookmark`);
    await api(a, pat, 'POST', `/api/v1/statuses/${catPostOnA.id}/bookmark`);
    await catAccepts;
    const list = await api(a, pat, 'POST', '/api/v1/lists', { title: 'Close friends' });
    await api(a, pat, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [ann.id, catOnA.id] });

    const patBrowser = await browserOf(a, pat);
    const exported = {
      follows: await download(patBrowser, 'follows'),
      lists: await download(patBrowser, 'lists'),
      blocks: await download(patBrowser, 'blocks'),
      mutes: await download(patBrowser, 'mutes'),
      bookmarks: await download(patBrowser, 'bookmarks'),
    };
    expect(rows(exported.follows, true)).toEqual([
      'Account address,Show boosts,Notify on new posts,Languages',
      `ann@${a.domain},false,true,en`,
      `cat@${b.domain},true,false,`,
    ]);

    // pen on b takes them in, follows first (as Mastodon's import page suggests), then what builds on them. A list
    // may be imported before a's Accept of the follow arrives: its member then rests on the request (as Mastodon 4.x).
    const penBrowser = await browserOf(b, pen);
    await importFile(penBrowser, 'following', exported.follows);
    await importFile(penBrowser, 'lists', exported.lists);
    const annOnB = await lookup(b, pen, `ann@${a.domain}`);
    const annAccepts = until(() => relationship(b, pen, annOnB.id), (r) => r.following === true, 'ann (a) accepts pen (b)');
    annAccepts.catch(() => {}); // awaited below
    await importFile(penBrowser, 'blocking', exported.blocks);
    await importFile(penBrowser, 'muting', exported.mutes);
    await importFile(penBrowser, 'bookmarks', exported.bookmarks);
    await annAccepts;

    // The same relations, read through b's API.
    expect(await relationship(b, pen, annOnB.id)).toMatchObject({ following: true, showing_reblogs: false, notifying: true, languages: ['en'] });
    expect(await relationship(b, pen, cat.id)).toMatchObject({ following: true, showing_reblogs: true, notifying: false });
    const benOnB = await lookup(b, pen, `ben@${a.domain}`);
    const deeOnB = await lookup(b, pen, `dee@${a.domain}`);
    expect(await relationship(b, pen, benOnB.id)).toMatchObject({ blocking: true, following: false });
    expect(await relationship(b, pen, deeOnB.id)).toMatchObject({ muting: true, muting_notifications: false });
    const lists = (await api(b, pen, 'GET', '/api/v1/lists')) as Json[];
    expect(lists.map((l) => l.title)).toEqual(['Close friends']);
    const members = (await api(b, pen, 'GET', `/api/v1/lists/${lists[0]!.id}/accounts`)) as Json[];
    expect(members.map((m) => m.id).sort()).toEqual([annOnB.id, cat.id].sort());
    const bookmarks = (await api(b, pen, 'GET', '/api/v1/bookmarks')) as Json[];
    expect(bookmarks.map((s) => s.uri).sort()).toEqual([annPost.uri, catPost.uri].sort());

    // b's own export of them matches a's, row for row (accounts are user@domain on both sides).
    expect(rows(await download(penBrowser, 'follows'), true)).toEqual(rows(exported.follows, true));
    expect(rows(await download(penBrowser, 'lists'), false)).toEqual(rows(exported.lists, false));
    expect(rows(await download(penBrowser, 'blocks'), false)).toEqual(rows(exported.blocks, false));
    expect(rows(await download(penBrowser, 'mutes'), true)).toEqual(rows(exported.mutes, true));
    expect(rows(await download(penBrowser, 'bookmarks'), false)).toEqual(rows(exported.bookmarks, false));
  });
});

describe('deleting an account that another server knows', () => {
  it('removes its posts from the other server\'s views once the Delete of its actor arrives there', async () => {
    const delOnB = await lookup(b, fan, `del@${a.domain}`);
    await api(b, fan, 'POST', `/api/v1/accounts/${delOnB.id}/follow`);
    await until(async () => relationship(b, fan, delOnB.id), (r) => r.following === true, 'b: fan follows del');
    const post = await api(a, del, 'POST', '/api/v1/statuses', { status: 'soon gone', visibility: 'public' });
    const seen = await until(async () => (await api(b, fan, 'GET', '/api/v1/timelines/home')) as Json[], (l) => l.some((s) => s.uri === post.uri), 'b: the post in fan\'s home');
    const copy = seen.find((s) => s.uri === post.uri)!;

    const browser = await browserOf(a, del);
    const res = await browser.submit('/settings/delete', '/settings/delete', { current_password: del.password });
    expect([res.statusCode, res.headers.location], res.body.slice(0, 1000)).toEqual([303, '/auth/done/account_deleted']);

    // b hears of it: the post leaves fan's home, the status and the account's posts are gone, the account suspended.
    await until(async () => (await api(b, fan, 'GET', '/api/v1/timelines/home')) as Json[], (l) => !l.some((s) => s.uri === post.uri), 'b: the post gone from fan\'s home', 30_000);
    const status = await b.app.inject({ method: 'GET', url: `/api/v1/statuses/${copy.id}`, headers: bearer(fan.token) });
    expect(status.statusCode).toBe(404);
    const statuses = await b.app.inject({ method: 'GET', url: `/api/v1/accounts/${delOnB.id}/statuses`, headers: bearer(fan.token) });
    expect(statuses.statusCode === 404 || (statuses.json() as Json[]).length === 0, statuses.body).toBe(true);
    expect((await api(b, fan, 'GET', '/api/v1/accounts/verify_credentials')).following_count).toBe(0);
    // And on a, only the reserved name is left: its actor answers 410.
    await until(async () => (await fetch(`${a.url}/users/del`, { headers: { accept: 'application/activity+json' } })).status, (s) => s === 410, 'a: the actor gone');
  });
});
