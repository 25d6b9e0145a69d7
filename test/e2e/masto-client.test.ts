// A Mastodon app's view: the `masto` client drives the server over real HTTP, from app registration to relationships.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { createOAuthAPIClient, createRestAPIClient, type mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import { pkcePair, type TestServer } from '../helpers/server.ts';
import { hiddenFields } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

const REDIRECT = 'https://app.example/callback';
let s: TestServer & { url: string };

beforeAll(async () => {
  s = await startListeningServer();
});
afterAll(async () => s?.close());

/** What a browser does on the authorize page: open it, fill it in, submit, follow the redirect to the app. */
async function signInThroughBrowser(clientId: string, email: string, password: string, challenge: string): Promise<string> {
  const query = new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', scope: 'read write follow', code_challenge: challenge, code_challenge_method: 'S256' });
  const page = await fetch(`${s.url}/oauth/authorize?${query}`);
  expect(page.status).toBe(200);
  const form = new URLSearchParams({ ...hiddenFields(await page.text()), email, password, decision: 'approve' });
  const submitted = await fetch(`${s.url}/oauth/authorize`, { method: 'POST', body: form, redirect: 'manual' });
  expect(submitted.status).toBe(302);
  const location = new URL(submitted.headers.get('location')!);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  return location.searchParams.get('code')!;
}

describe('a Mastodon app using masto', () => {
  let app: mastodon.v1.Client;
  let userToken: string;
  let me: mastodon.v1.CredentialAccount;
  let other: mastodon.v1.Account;

  it('creates an app, registers, and signs in with PKCE', async () => {
    const anonymous = createRestAPIClient({ url: s.url });
    app = await anonymous.v1.apps.create({ clientName: 'masto test', redirectUris: REDIRECT, scopes: 'read write follow', website: 'https://app.example' });
    // masto hands entities back camelCased; the raw wire format is schema-checked in test/http/oauth.test.ts.
    expect(app.clientId).toBeTruthy();
    expect(app.clientSecret).toBeTruthy();

    const oauth = createOAuthAPIClient({ url: s.url });
    const appToken = await oauth.token.create({ grantType: 'client_credentials', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: REDIRECT, scope: 'read write follow' });
    const asApp = createRestAPIClient({ url: s.url, accessToken: appToken.accessToken });
    const registered = await asApp.v1.accounts.create({ username: 'mia', email: 'mia@example.com', password: 'correct horse battery', agreement: true, locale: 'en' });
    expect(registered.accessToken).toBeTruthy();
    // A second person, who stays signed in with the registration token.
    const bobToken = await asApp.v1.accounts.create({ username: 'bob', email: 'bob@example.com', password: 'another good pass', agreement: true, locale: 'en' });
    other = await createRestAPIClient({ url: s.url, accessToken: bobToken.accessToken }).v1.accounts.verifyCredentials();

    const { verifier, challenge } = pkcePair();
    const code = await signInThroughBrowser(app.clientId!, 'mia@example.com', 'correct horse battery', challenge);
    const token = await oauth.token.create({
      grantType: 'authorization_code', clientId: app.clientId!, clientSecret: app.clientSecret!, redirectUri: REDIRECT, code,
      codeVerifier: verifier,
    } as Parameters<typeof oauth.token.create>[0]);
    expectEntity('Token', { access_token: token.accessToken, token_type: token.tokenType, scope: token.scope, created_at: token.createdAt });
    userToken = token.accessToken;
  });

  it('verifies credentials', async () => {
    const client = createRestAPIClient({ url: s.url, accessToken: userToken });
    me = await client.v1.accounts.verifyCredentials();
    expect(me.username).toBe('mia');
    expect(me.acct).toBe('mia');
    expect(me.source.privacy).toBe('public');
    const raw = await fetch(`${s.url}/api/v1/accounts/verify_credentials`, { headers: { authorization: `Bearer ${userToken}` } });
    expectEntity('CredentialAccount', await raw.json());
  });

  it('updates the profile with an avatar and serves it back', async () => {
    const client = createRestAPIClient({ url: s.url, accessToken: userToken });
    const image = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#3a7' } }).png().toBuffer();
    const updated = await client.v1.accounts.updateCredentials({
      displayName: 'Mia M.',
      note: 'Hello, I am Mia.',
      locked: false,
      bot: false,
      avatar: new Blob([new Uint8Array(image)], { type: 'image/png' }),
      fieldsAttributes: [{ name: 'Site', value: 'https://mia.example' }],
    });
    expect(updated.displayName).toBe('Mia M.');
    expect(updated.note).toBe('<p>Hello, I am Mia.</p>');
    expect(updated.fields[0]!.name).toBe('Site');
    expect(updated.fields[0]!.value).toContain('href="https://mia.example"');
    expect(updated.avatar.startsWith(`${s.url}/system/`)).toBe(true);

    const res = await fetch(updated.avatar);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.width, meta.height, meta.format]).toEqual([400, 400, 'png']);
  });

  it('follows, reads relationships, and unfollows', async () => {
    const client = createRestAPIClient({ url: s.url, accessToken: userToken });
    const followed = await client.v1.accounts.$select(other.id).follow({ reblogs: false });
    expect(followed.following).toBe(true);
    expect(followed.showingReblogs).toBe(false);

    const [rel, self] = await client.v1.accounts.relationships.fetch({ id: [other.id, me.id] });
    expect(rel!.id).toBe(other.id);
    expect(rel!.following).toBe(true);
    expect(self!.id).toBe(me.id);
    expect(self!.following).toBe(false);
    const raw = await fetch(`${s.url}/api/v1/accounts/relationships?id[]=${other.id}`, { headers: { authorization: `Bearer ${userToken}` } });
    for (const entity of (await raw.json()) as unknown[]) expectEntity('Relationship', entity);

    const bob = await client.v1.accounts.$select(other.id).fetch();
    expect(bob.followersCount).toBe(1);
    const unfollowed = await client.v1.accounts.$select(other.id).unfollow();
    expect(unfollowed.following).toBe(false);
    expect((await client.v1.accounts.$select(other.id).fetch()).followersCount).toBe(0);
  });

  it('reads the instance the way apps do on start', async () => {
    const client = createRestAPIClient({ url: s.url });
    const v2 = await client.v2.instance.fetch();
    expect(v2.domain).toBe(s.config.localDomain);
    expect(v2.configuration.statuses.maxCharacters).toBe(500);
    expect(v2.registrations.enabled).toBe(true);
  });

  it('revokes its token when signing out', async () => {
    const oauth = createOAuthAPIClient({ url: s.url });
    await oauth.revoke({ clientId: app.clientId!, clientSecret: app.clientSecret!, token: userToken });
    const client = createRestAPIClient({ url: s.url, accessToken: userToken });
    await expect(client.v1.accounts.verifyCredentials()).rejects.toMatchObject({ statusCode: 401 });
  });
});
