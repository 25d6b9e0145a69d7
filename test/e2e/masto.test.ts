// An app's whole sign-up and profile story told through the `masto` client over a real socket: register the app,
// get an app token, create accounts, sign in through the authorize page with PKCE, edit the profile with an avatar,
// follow and unfollow. Every entity masto receives is also checked, as it came over the wire, against Mastodon's
// OpenAPI schema (masto hands entities back camelCased, so the raw JSON is what the schema can judge).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { createOAuthAPIClient, createRestAPIClient, MastoHttpError, type mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import { pkcePair, type TestServer } from '../helpers/server.ts';
import { hiddenFields } from '../helpers/oauth.ts';
import { CookieJar, csrfOf } from '../helpers/web.ts';
import { expectEntity } from '../helpers/schema.ts';

const REDIRECT = 'https://app.example/callback';
const SCOPES = 'read write follow';

let s: TestServer & { url: string };

// A recording tap on fetch: every request still goes to the real server unchanged; the JSON answers are kept so
// the tests can check exactly what masto was given.
interface Exchange { method: string; path: string; status: number; body: unknown }
const wire: Exchange[] = [];
const realFetch = globalThis.fetch;

function tappedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = input instanceof Request ? input.method : (init?.method ?? 'GET');
  return realFetch(input, init).then(async (res) => {
    if (res.headers.get('content-type')?.includes('application/json')) {
      wire.push({ method, path: url.pathname, status: res.status, body: await res.clone().json() });
    }
    return res;
  });
}

/** The JSON body of the latest `method path` exchange. */
function lastBody(method: string, path: string): unknown {
  const hit = wire.findLast((e) => e.method === method && e.path === path);
  expect(hit, `no ${method} ${path} was made`).toBeDefined();
  expect(hit!.status, JSON.stringify(hit!.body)).toBe(200);
  return hit!.body;
}

beforeAll(async () => {
  globalThis.fetch = tappedFetch as typeof fetch;
  s = await startListeningServer();
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await s?.close();
});

/** A person in a browser: open the authorize page, fill in the form, approve; the code comes back on the redirect. */
async function authorizeInBrowser(clientId: string, email: string, password: string, challenge: string): Promise<string> {
  const query = new URLSearchParams({
    client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', scope: SCOPES, state: 'st4te',
    code_challenge: challenge, code_challenge_method: 'S256',
  });
  // Not signed in: the authorize page sends the browser to sign in first, then back.
  const jar = new CookieJar();
  const go = async (url: string, init: RequestInit = {}) => {
    const res = await fetch(new URL(url, s.url), { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: jar.header() } });
    jar.take(res.headers.getSetCookie());
    return res;
  };
  const first = await go(`/oauth/authorize?${query}`);
  expect(first.status).toBe(302);
  const signInPage = await go(first.headers.get('location')!);
  const signInHtml = await signInPage.text();
  const returnTo = new URL(first.headers.get('location')!, s.url).searchParams.get('return_to')!;
  const signedIn = await go('/auth/sign_in', { method: 'POST', body: new URLSearchParams({ _csrf: csrfOf(signInHtml), email, password, return_to: returnTo }) });
  expect(signedIn.status).toBe(303);
  const page = await go(signedIn.headers.get('location')!);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await page.text();
  const hidden = hiddenFields(html);
  expect(hidden.code_challenge).toBe(challenge);
  const submitted = await go('/oauth/authorize', { method: 'POST', body: new URLSearchParams({ ...hidden, decision: 'approve' }) });
  expect(submitted.status).toBe(302);
  const location = new URL(submitted.headers.get('location')!);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  expect(location.searchParams.get('state')).toBe('st4te');
  const code = location.searchParams.get('code');
  expect(code).toMatch(/^[\w-]{20,}$/);
  return code!;
}

/** masto's token params have no field for PKCE; its serializer snake-cases whatever it is given. */
type CodeParams = Extract<Parameters<mastodon.oauth.Client['token']['create']>[0], { grantType: 'authorization_code' }>;
const withVerifier = (params: CodeParams, codeVerifier?: string): CodeParams => (codeVerifier === undefined ? params : Object.assign({ codeVerifier }, params));

async function expectHttpError(promise: Promise<unknown>, statusCode: number): Promise<MastoHttpError> {
  const err = await promise.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(MastoHttpError);
  expect((err as MastoHttpError).statusCode).toBe(statusCode);
  return err as MastoHttpError;
}

describe('a Mastodon app driving the server with masto', () => {
  const oauth = () => createOAuthAPIClient({ url: s.url });
  let app: mastodon.v1.Client;
  let appToken: string;
  let mia: { id: string; token: string };
  let bob: { id: string; token: string };
  const miaPassword = 'correct horse battery staple';

  it('registers an application and gets an app token with client credentials', async () => {
    const anonymous = createRestAPIClient({ url: s.url });
    app = await anonymous.v1.apps.create({ clientName: 'masto e2e', redirectUris: [REDIRECT, 'urn:ietf:wg:oauth:2.0:oob'], scopes: SCOPES, website: 'https://app.example' });
    const created = lastBody('POST', '/api/v1/apps');
    expectEntity('CredentialApplication', created);
    expectEntity('Application', created);
    expect(app.name).toBe('masto e2e');
    expect(app.website).toBe('https://app.example');
    expect(app.redirectUris).toEqual([REDIRECT, 'urn:ietf:wg:oauth:2.0:oob']);
    expect(app.scopes).toEqual(['read', 'write', 'follow']);
    expect(app.clientId).toBeTruthy();
    expect(app.clientSecret).toBeTruthy();

    const token = await oauth().token.create({ grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: REDIRECT, scope: SCOPES });
    expectEntity('Token', lastBody('POST', '/oauth/token'));
    expect(token.tokenType).toBe('Bearer');
    expect(token.scope).toBe(SCOPES);
    appToken = token.accessToken;

    // The app token identifies the app, and the answer never repeats the secret.
    const verified = await createRestAPIClient({ url: s.url, accessToken: appToken }).v1.apps.verifyCredentials();
    const raw = lastBody('GET', '/api/v1/apps/verify_credentials') as Record<string, unknown>;
    expectEntity('Application', raw);
    expect(verified.name).toBe('masto e2e');
    expect(raw.client_secret).toBeUndefined();

    // A wrong secret is refused through masto's own error type.
    await expectHttpError(oauth().token.create({ grantType: 'client_credentials', clientId: app.clientId!, clientSecret: 'wrong', redirectUri: REDIRECT }), 401);
  });

  it('registers accounts with the app token', async () => {
    const asApp = createRestAPIClient({ url: s.url, accessToken: appToken });
    const miaReg = await asApp.v1.accounts.create({ username: 'mia', email: 'mia@example.com', password: miaPassword, agreement: true, locale: 'en' });
    expectEntity('Token', lastBody('POST', '/api/v1/accounts'));
    expect(miaReg.scope).toBe(SCOPES);
    const bobReg = await asApp.v1.accounts.create({ username: 'bob', email: 'bob@example.com', password: 'another good passphrase', agreement: true, locale: 'en' });
    expectEntity('Token', lastBody('POST', '/api/v1/accounts'));
    expect(bobReg.accessToken).not.toBe(miaReg.accessToken);

    // Bob stays signed in with the token registration gave him.
    const bobMe = await createRestAPIClient({ url: s.url, accessToken: bobReg.accessToken }).v1.accounts.verifyCredentials();
    expect(bobMe.username).toBe('bob');
    bob = { id: bobMe.id, token: bobReg.accessToken };

    // A taken username is a validation error, not a second account.
    await expectHttpError(asApp.v1.accounts.create({ username: 'mia', email: 'mia2@example.com', password: miaPassword, agreement: true, locale: 'en' }), 422);
    // Without an app token, nobody registers.
    await expectHttpError(createRestAPIClient({ url: s.url }).v1.accounts.create({ username: 'eve', email: 'eve@example.com', password: miaPassword, agreement: true, locale: 'en' }), 401);
  });

  it('signs Mia in through the authorize page with PKCE', async () => {
    const base = { grantType: 'authorization_code', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: REDIRECT, scope: SCOPES } as const;

    // A code bound to a challenge is worthless without the verifier, or with another one.
    const first = pkcePair();
    const code1 = await authorizeInBrowser(app.clientId!, 'mia@example.com', miaPassword, first.challenge);
    const missing = await expectHttpError(oauth().token.create(withVerifier({ ...base, code: code1 })), 400);
    expect(missing.message).toBe('invalid_grant');
    expect(missing.description).toMatch(/code_verifier/);
    const second = pkcePair();
    const code2 = await authorizeInBrowser(app.clientId!, 'mia@example.com', miaPassword, second.challenge);
    const wrong = await expectHttpError(oauth().token.create(withVerifier({ ...base, code: code2 }, first.verifier)), 400);
    expect(wrong.message).toBe('invalid_grant');

    const { verifier, challenge } = pkcePair();
    const code = await authorizeInBrowser(app.clientId!, 'mia@example.com', miaPassword, challenge);
    const token = await oauth().token.create(withVerifier({ ...base, code }, verifier));
    expectEntity('Token', lastBody('POST', '/oauth/token'));
    expect(token.scope).toBe(SCOPES);
    // A code is good once.
    await expectHttpError(oauth().token.create(withVerifier({ ...base, code }, verifier)), 400);

    const me = await createRestAPIClient({ url: s.url, accessToken: token.accessToken }).v1.accounts.verifyCredentials();
    expectEntity('CredentialAccount', lastBody('GET', '/api/v1/accounts/verify_credentials'));
    expect(me.username).toBe('mia');
    expect(me.acct).toBe('mia');
    expect(me.url).toBe(`${s.url}/@mia`);
    expect(me.source.privacy).toBe('public');
    expect(me.avatar).toBe(`${s.url}/avatars/original/missing.png`);
    mia = { id: me.id, token: token.accessToken };
  });

  it('updates the profile with an avatar, which is served back as a 400×400 image', async () => {
    const client = createRestAPIClient({ url: s.url, accessToken: mia.token });
    // Not square, so the server has to crop as well as scale.
    const png = await sharp({ create: { width: 640, height: 480, channels: 4, background: { r: 40, g: 160, b: 120, alpha: 1 } } }).png().toBuffer();
    const updated = await client.v1.accounts.updateCredentials({
      displayName: 'Mia M.',
      note: 'Hello, I am Mia.',
      avatar: new Blob([new Uint8Array(png)], { type: 'image/png' }),
    });
    expectEntity('CredentialAccount', lastBody('PATCH', '/api/v1/accounts/update_credentials'));
    expect(updated.displayName).toBe('Mia M.');
    expect(updated.note).toBe('<p>Hello, I am Mia.</p>');
    expect(updated.source.note).toBe('Hello, I am Mia.');
    expect(updated.avatar.startsWith(`${s.url}/system/`)).toBe(true);
    expect(updated.avatarStatic).toBe(updated.avatar);

    const res = await fetch(updated.avatar);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 400, 400]);

    // Everyone else sees the new avatar on the public account.
    const seen = await createRestAPIClient({ url: s.url }).v1.accounts.$select(mia.id).fetch();
    expectEntity('Account', lastBody('GET', `/api/v1/accounts/${mia.id}`));
    expect(seen.avatar).toBe(updated.avatar);
    expect(seen.displayName).toBe('Mia M.');

    // A replacement in another format gets a new address; the old file is gone.
    const jpeg = await sharp({ create: { width: 300, height: 900, channels: 3, background: '#a33' } }).jpeg().toBuffer();
    const replaced = await client.v1.accounts.updateCredentials({ avatar: new Blob([new Uint8Array(jpeg)], { type: 'image/jpeg' }) });
    expect(replaced.avatar).not.toBe(updated.avatar);
    expect(replaced.displayName).toBe('Mia M.');
    const newer = await fetch(replaced.avatar);
    expect(newer.headers.get('content-type')).toBe('image/jpeg');
    const newMeta = await sharp(Buffer.from(await newer.arrayBuffer())).metadata();
    expect([newMeta.format, newMeta.width, newMeta.height]).toEqual(['jpeg', 400, 400]);
    expect((await fetch(updated.avatar)).status).toBe(404);

    // Bytes that are not an image are refused, and nothing changes.
    await expectHttpError(client.v1.accounts.updateCredentials({
      displayName: 'Should not stick',
      avatar: new Blob([new TextEncoder().encode('not an image at all')], { type: 'image/png' }),
    }), 422);
    const after = await client.v1.accounts.verifyCredentials();
    expect(after.avatar).toBe(replaced.avatar);
    expect(after.displayName).toBe('Mia M.');
  });

  it('follows Bob, reads relationships from both sides, and unfollows', async () => {
    const miaClient = createRestAPIClient({ url: s.url, accessToken: mia.token });
    const bobClient = createRestAPIClient({ url: s.url, accessToken: bob.token });

    const followed = await miaClient.v1.accounts.$select(bob.id).follow();
    expectEntity('Relationship', lastBody('POST', `/api/v1/accounts/${bob.id}/follow`));
    expect(followed.id).toBe(bob.id);
    expect(followed.following).toBe(true);
    expect(followed.requested).toBe(false);
    expect(followed.showingReblogs).toBe(true);

    const [toBob, toSelf] = await miaClient.v1.accounts.relationships.fetch({ id: [bob.id, mia.id] });
    for (const entity of lastBody('GET', '/api/v1/accounts/relationships') as unknown[]) expectEntity('Relationship', entity);
    expect(toBob).toMatchObject({ id: bob.id, following: true, followedBy: false });
    expect(toSelf).toMatchObject({ id: mia.id, following: false, followedBy: false });
    const [toMia] = await bobClient.v1.accounts.relationships.fetch({ id: [mia.id] });
    expect(toMia).toMatchObject({ id: mia.id, following: false, followedBy: true });

    const bobAccount = await miaClient.v1.accounts.$select(bob.id).fetch();
    expectEntity('Account', lastBody('GET', `/api/v1/accounts/${bob.id}`));
    expect(bobAccount.followersCount).toBe(1);
    expect((await miaClient.v1.accounts.verifyCredentials()).followingCount).toBe(1);

    const unfollowed = await miaClient.v1.accounts.$select(bob.id).unfollow();
    expectEntity('Relationship', lastBody('POST', `/api/v1/accounts/${bob.id}/unfollow`));
    expect(unfollowed).toMatchObject({ id: bob.id, following: false });
    const [afterBob] = await miaClient.v1.accounts.relationships.fetch({ id: [bob.id] });
    expect(afterBob!.following).toBe(false);
    const [afterMia] = await bobClient.v1.accounts.relationships.fetch({ id: [mia.id] });
    expect(afterMia!.followedBy).toBe(false);
    expect((await miaClient.v1.accounts.$select(bob.id).fetch()).followersCount).toBe(0);
    expect((await miaClient.v1.accounts.verifyCredentials()).followingCount).toBe(0);

    // Following yourself is refused.
    await expectHttpError(miaClient.v1.accounts.$select(mia.id).follow(), 403);
  });
});
