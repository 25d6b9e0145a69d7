import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, pkcePair, type TestServer } from '../helpers/server.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, submitAuthorizeForm, REDIRECT_URI, type RegisteredApp, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let client: RegisteredApp;
let alice: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  alice = await registerUser(s.app, client, 'alice');
});
afterAll(async () => s?.close());

describe('apps', () => {
  it('creates an application with credentials and verifies it', async () => {
    const res = await s.app.inject({
      method: 'POST',
      url: '/api/v1/apps',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'client_name=Form+app&redirect_uris=urn:ietf:wg:oauth:2.0:oob&scopes=read+write:statuses',
    });
    expect(res.statusCode).toBe(200);
    const created = res.json();
    expectEntity('CredentialApplication', created);
    expect(created.scopes).toEqual(['read', 'write:statuses']);
    expect(created.redirect_uris).toEqual(['urn:ietf:wg:oauth:2.0:oob']);

    const token = await appToken(s.app, created, 'read');
    const verify = await s.app.inject({ method: 'GET', url: '/api/v1/apps/verify_credentials', headers: bearer(token) });
    expect(verify.statusCode).toBe(200);
    expectEntity('Application', verify.json());
    expect(verify.json().name).toBe('Form app');
    expect(verify.json().client_secret).toBeUndefined();
  });

  it('rejects bad applications with 422 and stores nothing', async () => {
    const before = await s.ctx.db.query('SELECT count(*)::int AS n FROM oauth_applications');
    for (const payload of [
      { client_name: 'x', redirect_uris: 'not a uri' },
      { client_name: 'x', redirect_uris: 'https://a.example/cb#frag' },
      { client_name: 'x', redirect_uris: 'https://a.example/cb', scopes: 'read bogus' },
      { client_name: '', redirect_uris: 'https://a.example/cb' },
      { redirect_uris: 'https://a.example/cb' },
      { client_name: 'x', redirect_uris: 'https://a.example/cb', website: 'javascript:alert(1)' },
    ]) {
      const res = await s.app.inject({ method: 'POST', url: '/api/v1/apps', payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(typeof res.json().error).toBe('string');
    }
    const malformed = await s.app.inject({ method: 'POST', url: '/api/v1/apps', headers: { 'content-type': 'application/json' }, payload: '{"client_name": ' });
    expect(malformed.statusCode).toBe(400);
    expect(typeof malformed.json().error).toBe('string');
    const after = await s.ctx.db.query('SELECT count(*)::int AS n FROM oauth_applications');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});

describe('authorization code flow', () => {
  it('issues a token through the browser page with PKCE, stored only as a hash', async () => {
    expect(alice.token).toMatch(/^[\w-]{20,}$/);
    const rows = await s.ctx.db.query('SELECT token_hash FROM oauth_access_tokens');
    for (const r of rows.rows) expect(r.token_hash).not.toBe(alice.token);
    const pw = await s.ctx.db.query('SELECT password_hash FROM users WHERE email = $1', [alice.email]);
    expect(pw.rows[0].password_hash).toMatch(/^\$argon2id\$/);
  });

  it('shows the code for out-of-band apps', async () => {
    const approved = await submitAuthorizeForm(s.app, { client_id: client.client_id, redirect_uri: 'urn:ietf:wg:oauth:2.0:oob', response_type: 'code', scope: 'read' }, alice.email, alice.password);
    expect(approved.statusCode).toBe(303);
    expect(approved.headers.location).toMatch(/^\/oauth\/authorize\/native\?code=/);
    const res = await s.app.inject({ method: 'GET', url: approved.headers.location as string, headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    const code = /<code id="code">([^<]+)<\/code>/.exec(res.body)?.[1];
    expect(code).toBeTruthy();
    const token = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'authorization_code', code, redirect_uri: 'urn:ietf:wg:oauth:2.0:oob', client_id: client.client_id, client_secret: client.client_secret },
    });
    expect(token.statusCode, token.body).toBe(200);
    expectEntity('Token', token.json());
    expect(token.json().scope).toBe('read');
    // A code is good once.
    const again = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'authorization_code', code, redirect_uri: 'urn:ietf:wg:oauth:2.0:oob', client_id: client.client_id, client_secret: client.client_secret },
    });
    expect(again.statusCode).toBe(400);
    expect(again.json().error).toBe('invalid_grant');
  });

  it('refuses a wrong PKCE verifier, a wrong password, and a denial', async () => {
    const { challenge } = pkcePair();
    const query = { client_id: client.client_id, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'read', code_challenge: challenge, code_challenge_method: 'S256' };
    const wrongPassword = await submitAuthorizeForm(s.app, query, alice.email, 'not-the-password');
    expect(wrongPassword.statusCode).toBe(401);
    expect(wrongPassword.body).toContain('Invalid e-mail address or password');

    const denied = await submitAuthorizeForm(s.app, query, alice.email, alice.password, 'deny');
    expect(denied.statusCode).toBe(302);
    expect(new URL(denied.headers.location as string).searchParams.get('error')).toBe('access_denied');

    const ok = await submitAuthorizeForm(s.app, query, alice.email, alice.password);
    const code = new URL(ok.headers.location as string).searchParams.get('code');
    const res = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: client.client_id, client_secret: client.client_secret, code_verifier: pkcePair().verifier },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
  });

  it('shows an error page, not a redirect, for an unknown client or unregistered redirect URI', async () => {
    const unknown = await s.app.inject({ method: 'GET', url: '/oauth/authorize?client_id=nope&response_type=code&redirect_uri=https://evil.example/' });
    expect(unknown.statusCode).toBe(400);
    const evil = await s.app.inject({ method: 'GET', url: `/oauth/authorize?client_id=${client.client_id}&response_type=code&redirect_uri=https://evil.example/` });
    expect(evil.statusCode).toBe(400);
    expect(evil.headers.location).toBeUndefined();
  });

  it('refuses scopes beyond the app\'s registration', async () => {
    const narrow = await createApp(s.app, 'read');
    const res = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: narrow.client_id, client_secret: narrow.client_secret, scope: 'write' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_scope');
  });

  it('rejects a bad client secret', async () => {
    const res = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: 'wrong' },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toBe('invalid_client');
  });

  it('offers no password or refresh-token grant, as Mastodon since 4.3: a right password gets no token', async () => {
    for (const payload of [
      { grant_type: 'password', username: alice.email, password: alice.password, scope: 'read' },
      { grant_type: 'refresh_token', refresh_token: 'anything' },
    ]) {
      const res = await s.app.inject({ method: 'POST', url: '/oauth/token', payload: { ...payload, client_id: client.client_id, client_secret: client.client_secret } });
      expect(res.statusCode, payload.grant_type).toBe(400);
      expect(res.json()).toMatchObject({ error: 'unsupported_grant_type' });
    }
  });
});

describe('scopes and tokens', () => {
  it('checks scopes on routes: 401 without a token, 403 without the scope', async () => {
    const none = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ error: 'The access token is invalid' });
    const bad = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer('garbage') });
    expect(bad.statusCode).toBe(401);

    const writeOnly = await registerUser(s.app, client, 'writer', 'write');
    const forbidden = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(writeOnly.token) });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error).toBe('This action is outside the authorized scopes');
  });

  it('accepts granular scopes and profile for verify_credentials', async () => {
    const granular = await createApp(s.app, 'read:accounts profile');
    const user = await registerUser(s.app, client, 'profiler');
    const token = await authorizationCodeToken(s.app, granular, user.email, user.password, 'profile');
    const me = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect(me.statusCode).toBe(200);
    expect(me.json().username).toBe('profiler');
    const rel = await s.app.inject({ method: 'GET', url: `/api/v1/accounts/relationships?id=${alice.id}`, headers: bearer(token) });
    expect(rel.statusCode).toBe(403);
  });

  it('an app token cannot act as a user', async () => {
    const token = await appToken(s.app, client);
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token) });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('This method requires an authenticated user');
  });

  it('revokes tokens', async () => {
    const user = await registerUser(s.app, client, 'revoker');
    const res = await s.app.inject({ method: 'POST', url: '/oauth/revoke', payload: { token: user.token, client_id: client.client_id, client_secret: client.client_secret } });
    expect(res.statusCode).toBe(200);
    const after = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(user.token) });
    expect(after.statusCode).toBe(401);
    const badClient = await s.app.inject({ method: 'POST', url: '/oauth/revoke', payload: { token: user.token, client_id: client.client_id, client_secret: 'nope' } });
    expect(badClient.statusCode).toBe(401);
  });

  it('publishes authorization server metadata', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
    expect(res.statusCode).toBe(200);
    expect(res.json().token_endpoint).toBe('http://test.local/oauth/token');
    expect(res.json().code_challenge_methods_supported).toEqual(['S256']);
  });
});

describe('userinfo', () => {
  it('tells an app with the profile (or read:accounts) scope who signed in, and refuses others', async () => {
    const profileApp = await createApp(s.app, 'profile');
    const token = await authorizationCodeToken(s.app, profileApp, alice.email, alice.password, 'profile');
    for (const method of ['GET', 'POST'] as const) {
      const res = await s.app.inject({ method, url: '/oauth/userinfo', headers: bearer(token) });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ iss: 'http://test.local/', sub: 'http://test.local/users/alice', preferred_username: 'alice', profile: 'http://test.local/@alice' });
      expect(res.json().picture).toMatch(/^http/);
    }
    const appOnly = await s.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: bearer(await appToken(s.app, client, 'read')) });
    expect(appOnly.statusCode).toBe(422);
    expect((await s.app.inject({ method: 'GET', url: '/oauth/userinfo' })).statusCode).toBe(401);
    const meta = (await s.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json();
    expect(meta.userinfo_endpoint).toBe('http://test.local/oauth/userinfo');
  });
});
