import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient, csrfOf } from '../helpers/web.ts';
import { multipart } from '../helpers/multipart.ts';
import { until } from '../helpers/instances.ts';
import { expectEntity } from '../helpers/schema.ts';

// /settings/migration: aliases and moving between two accounts of one server, through the pages and the API.
let s: TestServer;
let olde: TestUser, newe: TestUser, fan: TestUser, hater: TestUser, safe: TestUser;
let mover: TestUser, locky: TestUser, reader: TestUser, reader2: TestUser;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

beforeAll(async () => {
  s = await startTestServer();
  [olde, newe, fan, hater, safe, mover, locky, reader, reader2] = await registerUsers(s.app, 'olde', 'newe', 'fan', 'hater', 'safe', 'mover', 'locky', 'reader', 'reader2');
});
afterAll(async () => s?.close());

const api = async (user: TestUser, method: 'GET' | 'POST', url: string, payload?: object, status = 200): Promise<any> => {
  const res = await s.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(status);
  return res.json();
};
// One signed-in browser per person (signing in hashes a password: slow on purpose).
const browsers = new Map<string, WebClient>();
const browserOf = async (user: TestUser) => {
  const known = browsers.get(user.id);
  if (known) return known;
  const browser = new WebClient(s.app);
  const res = await browser.signIn(user.email, user.password);
  expect(res.statusCode, res.body).toBe(303);
  browsers.set(user.id, browser);
  return browser;
};
const actorDoc = async (username: string) => {
  const res = await s.app.inject({ method: 'GET', url: `/users/${username}`, headers: { accept: 'application/activity+json' } });
  expect(res.statusCode).toBe(200);
  return res.json() as Json;
};
const relationship = async (user: TestUser, id: string) => ((await api(user, 'GET', `/api/v1/accounts/relationships?id[]=${id}`)) as Json[])[0]!;
const uriOf = (user: TestUser) => `${s.config.publicUrl}/users/${user.username}`;

describe('moving an account from /settings/migration', () => {
  it('asks to sign in first', async () => {
    const res = await new WebClient(s.app).get('/settings/migration');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toContain('/auth/sign_in');
  });

  it('adds and removes aliases, published as alsoKnownAs; refuses unknown accounts and itself', async () => {
    const browser = await browserOf(newe);
    const page = await browser.get('/settings/migration');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Moving here from another account');

    const unknown = await browser.submit('/settings/migration', '/settings/migration/aliases', { acct: 'nobody-here' });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.body).toContain('No account was found');
    const self = await browser.submit('/settings/migration', '/settings/migration/aliases', { acct: `@newe@${s.config.localDomain}` });
    expect(self.statusCode).toBe(422);

    for (const acct of ['@olde', 'hater']) {
      const added = await browser.submit('/settings/migration', '/settings/migration/aliases', { acct });
      expect(added.statusCode, added.body).toBe(303);
    }
    const again = await browser.submit('/settings/migration', '/settings/migration/aliases', { acct: 'olde' });
    expect(again.body).toContain('already an alias');
    expect((await actorDoc('newe')).alsoKnownAs).toEqual([uriOf(olde), uriOf(hater)]);
    const listed = await browser.get('/settings/migration');
    expect(listed.body).toContain(`olde@${s.config.localDomain}`);

    const removed = await browser.submit('/settings/migration', '/settings/migration/aliases/remove', { uri: uriOf(hater) });
    expect(removed.statusCode).toBe(303);
    expect((await actorDoc('newe')).alsoKnownAs).toEqual(uriOf(olde));
  });

  it('refuses a move without the password, or to an account that does not list this one', async () => {
    const browser = await browserOf(olde);
    const wrong = await browser.submit('/settings/migration', '/settings/migration', { acct: 'newe', current_password: 'not it' });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain('The current password is wrong.');
    const noAlias = await browser.submit('/settings/migration', '/settings/migration', { acct: 'fan', current_password: olde.password });
    expect(noAlias.statusCode).toBe(422);
    expect(noAlias.body).toContain('does not list this one as an alias');
    const toSelf = await browser.submit('/settings/migration', '/settings/migration', { acct: 'olde', current_password: olde.password });
    expect(toSelf.statusCode).toBe(422);
    expect((await api(olde, 'GET', `/api/v1/accounts/${olde.id}`)).moved).toBeUndefined();
  });

  it('moves: followers follow the new account (options and lists kept), mutes carried over, the old one read-only and pointing there', async () => {
    await api(fan, 'POST', `/api/v1/accounts/${olde.id}/follow`, { reblogs: false, notify: true });
    const list = await api(fan, 'POST', '/api/v1/lists', { title: 'friends' });
    await api(fan, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [olde.id] });
    await api(hater, 'POST', `/api/v1/accounts/${olde.id}/mute`, { notifications: false });
    await api(olde, 'POST', '/api/v1/statuses', { status: 'before the move' });
    // Notes on the old account go to the new one, before a note already there (Mastodon's copy_account_notes!).
    await api(fan, 'POST', `/api/v1/accounts/${olde.id}/note`, { comment: 'met at the conference' });
    await api(hater, 'POST', `/api/v1/accounts/${olde.id}/note`, { comment: 'old grudge' });
    await api(hater, 'POST', `/api/v1/accounts/${newe.id}/note`, { comment: 'new grudge' });

    const browser = await browserOf(olde);
    const moved = await browser.submit('/settings/migration', '/settings/migration', { acct: `newe@${s.config.localDomain}`, current_password: olde.password });
    expect(moved.statusCode, moved.body).toBe(303);
    expect(moved.headers.location).toBe('/settings/migration?notice=moved');

    const r = await until(() => relationship(fan, newe.id), (x) => x.following === true, 'fan follows newe');
    expect(r).toMatchObject({ showing_reblogs: false, notifying: true });
    await until(() => relationship(fan, olde.id), (x) => x.following === false, 'fan no longer follows olde');
    expect(((await api(fan, 'GET', `/api/v1/lists/${list.id}/accounts`)) as Json[]).map((a) => a.id)).toEqual([newe.id]);
    await until(() => relationship(hater, newe.id), (x) => x.muting === true, 'the mute is carried over');
    expect(await relationship(hater, newe.id)).toMatchObject({ muting_notifications: false });
    const fanNote = (await until(() => relationship(fan, newe.id), (x) => x.note !== '', 'the note is copied')).note as string;
    expect(fanNote).toContain(`@olde@${s.config.localDomain}`);
    expect(fanNote).toMatch(/met at the conference$/);
    const haterNote = (await relationship(hater, newe.id)).note as string;
    expect(haterNote.indexOf('old grudge')).toBeGreaterThan(-1);
    expect(haterNote.indexOf('old grudge')).toBeLessThan(haterNote.indexOf('new grudge'));
    expect((await relationship(hater, olde.id)).note).toBe('old grudge');

    const account = await api(fan, 'GET', `/api/v1/accounts/${olde.id}`);
    expectEntity('Account', account);
    expect(account.moved).toMatchObject({ id: newe.id, acct: 'newe' });
    expect((await api(fan, 'GET', `/api/v1/accounts/${newe.id}`)).moved).toBeUndefined();
    expect((await actorDoc('olde')).movedTo).toBe(uriOf(newe));

    // As Mastodon's require_user! (a moved user is not `functional?`): every call needing a user is refused, although
    // olde's token was cached as usable by the post above; public routes still answer it.
    const refused = await api(olde, 'POST', '/api/v1/statuses', { status: 'after the move' }, 403);
    expect(refused).toEqual({ error: 'Your login is currently disabled' });
    expect(await api(olde, 'GET', '/api/v1/accounts/verify_credentials', undefined, 403)).toEqual({ error: 'Your login is currently disabled' });
    await api(olde, 'GET', '/api/v1/timelines/home', undefined, 403);
    await api(olde, 'POST', `/api/v1/accounts/${safe.id}/follow`, {}, 403);
    expect((await api(olde, 'GET', `/api/v1/accounts/${newe.id}`)).id).toBe(newe.id);

    const profile = await s.app.inject({ method: 'GET', url: '/@olde', headers: { accept: 'text/html' } });
    expect(profile.statusCode).toBe(200);
    expect(profile.body).toContain('has moved');
    expect(profile.body).toContain(`href="${s.config.publicUrl}/@newe"`);

    const page = await browser.get('/settings/migration');
    expect(page.body).toContain('This account has moved');
    // Its settings stay open (its data may be exported); importing, which follows and blocks, is not (as Mastodon).
    expect((await browser.get('/settings/exports/follows.csv')).statusCode).toBe(200);
    const importPage = await browser.get('/settings/import');
    expect(importPage.statusCode).toBe(200);
    const upload = await multipart({ _csrf: csrfOf(importPage.body), type: 'following', mode: 'merge', data: { data: Buffer.from('fan\n'), filename: 'f.csv', type: 'text/csv' } });
    const imported = await s.app.inject({ method: 'POST', url: '/settings/import', payload: upload.payload, headers: { ...upload.headers, accept: 'text/html', cookie: browser.jar.header() } });
    expect(imported.statusCode).toBe(422);
    expect(imported.body).toContain('This account has moved');
    // One move a month, as Mastodon.
    const soon = await browser.submit('/settings/migration', '/settings/migration', { acct: 'fan', current_password: olde.password });
    expect(soon.statusCode).toBe(422);
    expect(soon.body).toContain('moved this account recently');
  });

  it('moving back: the old account lists the new one, the new one moves there and the old one is usable again', async () => {
    const oldBrowser = await browserOf(olde);
    expect((await oldBrowser.submit('/settings/migration', '/settings/migration/aliases', { acct: 'newe' })).statusCode).toBe(303);
    const newBrowser = await browserOf(newe);
    const back = await newBrowser.submit('/settings/migration', '/settings/migration', { acct: 'olde', current_password: newe.password });
    expect(back.statusCode, back.body).toBe(303);
    await until(() => relationship(fan, olde.id), (x) => x.following === true, 'fan follows olde again');
    await until(() => relationship(fan, newe.id), (x) => x.following === false, 'fan no longer follows newe');
    expect((await api(fan, 'GET', `/api/v1/accounts/${olde.id}`)).moved).toBeUndefined();
    expect((await api(fan, 'GET', `/api/v1/accounts/${newe.id}`)).moved).toMatchObject({ id: olde.id });
    await api(olde, 'POST', '/api/v1/statuses', { status: 'back again' });
    await api(newe, 'POST', '/api/v1/statuses', { status: 'I moved' }, 403);
    // Cancelling the redirect makes the account usable again.
    expect((await newBrowser.submit('/settings/migration', '/settings/migration/cancel', {})).statusCode).toBe(303);
    await api(newe, 'POST', '/api/v1/statuses', { status: 'here again' });
    await api(newe, 'GET', '/api/v1/accounts/verify_credentials');
  });

  it('moving to a locked account: lists hold it on the follow request, keep it when accepted and drop it when rejected', async () => {
    const locked = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(locky.token), payload: { locked: true } });
    expect(locked.statusCode, locked.body).toBe(200);
    expect((await (await browserOf(locky)).submit('/settings/migration', '/settings/migration/aliases', { acct: 'mover' })).statusCode).toBe(303);
    const lists: Json[] = [];
    for (const r of [reader, reader2]) {
      await api(r, 'POST', `/api/v1/accounts/${mover.id}/follow`);
      const list = await api(r, 'POST', '/api/v1/lists', { title: 'watching' });
      await api(r, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [mover.id] });
      lists.push(list);
    }
    const members = async (r: TestUser, list: Json) => ((await api(r, 'GET', `/api/v1/lists/${list.id}/accounts`)) as Json[]).map((a) => a.id);

    const moved = await (await browserOf(mover)).submit('/settings/migration', '/settings/migration', { acct: 'locky', current_password: mover.password });
    expect(moved.statusCode, moved.body).toBe(303);
    for (const r of [reader, reader2]) {
      await until(() => relationship(r, locky.id), (x) => x.requested === true && x.following === false, 'a request to locky');
      await until(() => relationship(r, mover.id), (x) => x.following === false, 'no longer following mover');
    }
    expect(await members(reader, lists[0]!)).toEqual([locky.id]);
    expect(await members(reader2, lists[1]!)).toEqual([locky.id]);
    expect(((await api(reader, 'GET', `/api/v1/accounts/${locky.id}/lists`)) as Json[]).map((l) => l.id)).toEqual([lists[0]!.id]);
    // Until the request is accepted, the list feed gets none of locky's posts (as Mastodon's lists_for_local_distribution).
    const early = await api(locky, 'POST', '/api/v1/statuses', { status: 'not followed yet' });
    await until(() => api(locky, 'GET', '/api/v1/timelines/home'), (xs: Json[]) => xs.some((x) => x.id === early.id), 'fan-out done');
    expect(((await api(reader2, 'GET', `/api/v1/timelines/list/${lists[1]!.id}`)) as Json[]).map((x) => x.id)).not.toContain(early.id);

    await api(locky, 'POST', `/api/v1/follow_requests/${reader.id}/authorize`);
    await api(locky, 'POST', `/api/v1/follow_requests/${reader2.id}/reject`);
    expect((await relationship(reader, locky.id)).following).toBe(true);
    expect(await members(reader, lists[0]!)).toEqual([locky.id]);
    expect(await members(reader2, lists[1]!)).toEqual([]);
    const later = await api(locky, 'POST', '/api/v1/statuses', { status: 'followed now' });
    await until(() => api(reader, 'GET', `/api/v1/timelines/list/${lists[0]!.id}`), (xs: Json[]) => xs.some((x) => x.id === later.id), 'in the list feed once accepted');
    // The membership now rests on the follow: it ends with it.
    await api(reader, 'POST', `/api/v1/accounts/${locky.id}/unfollow`);
    expect(await members(reader, lists[0]!)).toEqual([]);
  });

  it('asks for the two-factor code when two-factor sign-in is on', async () => {
    const browser = await browserOf(safe);
    await browser.submit('/settings/two_factor', '/settings/two_factor/new', {});
    const setup = await browser.get('/settings/two_factor');
    const secret = /id="otp-secret">([A-Z2-7]+)</.exec(setup.body)![1]!;
    const { generate } = await import('otplib');
    expect((await browser.post('/settings/two_factor', { code: await generate({ secret }), current_password: safe.password }, setup.body)).statusCode).toBe(303);
    const on = await browser.get('/settings/two_factor');
    const recovery = /<ul class="codes" id="recovery-codes">\s*<li>([0-9a-f]+)</.exec(on.body)![1]!;
    // fan lists safe, so only the second factor stands in the way.
    const fanBrowser = await browserOf(fan);
    expect((await fanBrowser.submit('/settings/migration', '/settings/migration/aliases', { acct: 'safe' })).statusCode).toBe(303);
    const page = await browser.get('/settings/migration');
    expect(page.body).toContain('name="otp_attempt"');
    const missing = await browser.post('/settings/migration', { acct: 'fan', current_password: safe.password, otp_attempt: '000000' }, page.body);
    expect(missing.statusCode).toBe(422);
    expect(missing.body).toContain('Invalid two-factor code');
    const ok = await browser.post('/settings/migration', { acct: 'fan', current_password: safe.password, otp_attempt: recovery }, page.body);
    expect(ok.statusCode, ok.body).toBe(303);
    expect((await api(fan, 'GET', `/api/v1/accounts/${safe.id}`)).moved).toMatchObject({ id: fan.id });
  });
});
