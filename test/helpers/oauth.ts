import { expect } from 'vitest';
import type { App } from '../../http/app.ts';
import { pkcePair } from './server.ts';
import { WebClient } from './web.ts';

export const REDIRECT_URI = 'https://app.example/callback';

export interface RegisteredApp {
  client_id: string;
  client_secret: string;
  id: string;
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export async function createApp(app: App, scopes = 'read write follow push'): Promise<RegisteredApp> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/apps',
    payload: { client_name: 'Test app', redirect_uris: `${REDIRECT_URI} urn:ietf:wg:oauth:2.0:oob`, scopes, website: 'https://app.example' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

export async function appToken(app: App, client: RegisteredApp, scope = 'read write follow push'): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().access_token;
}

function decodeEntities(s: string): string {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** The hidden fields of the authorize page's form (the CSRF token included), as a browser would submit them. */
export function hiddenFields(html: string): Record<string, string> {
  return Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, decodeEntities(m[2]!)]),
  );
}

/**
 * What a person does in the browser: opens the authorize page, is sent to sign in, signs in, comes back and approves
 * (or denies). Returns the last answer: the sign-in form's when signing in fails, else the decision's.
 */
export async function submitAuthorizeForm(app: App, query: Record<string, string>, email: string, password: string, decision = 'approve') {
  const browser = new WebClient(app);
  const authorizeUrl = `/oauth/authorize?${new URLSearchParams(query)}`;
  const first = await browser.get(authorizeUrl);
  expect(first.statusCode, first.body).toBe(302);
  const signInUrl = first.headers.location as string;
  expect(signInUrl).toMatch(/^\/auth\/sign_in\?return_to=/);
  const returnTo = new URL(signInUrl, 'http://x').searchParams.get('return_to')!;
  const signedIn = await browser.signIn(email, password, returnTo);
  if (signedIn.statusCode !== 303) return signedIn;
  const page = await browser.get(signedIn.headers.location as string);
  expect(page.statusCode, page.body).toBe(200);
  return browser.post('/oauth/authorize', { ...hiddenFields(page.body), decision });
}

/** The browser flow: open the authorize page, sign in, approve, take the code from the redirect, redeem it with PKCE. */
export async function authorizationCodeToken(app: App, client: RegisteredApp, email: string, password: string, scope = 'read write follow push'): Promise<string> {
  const { verifier, challenge } = pkcePair();
  const approved = await submitAuthorizeForm(app, {
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope,
    state: 'xyz',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }, email, password);
  expect(approved.statusCode, approved.body).toBe(302);
  const location = new URL(approved.headers.location as string);
  expect(location.searchParams.get('state')).toBe('xyz');
  const code = location.searchParams.get('code');
  expect(code).toBeTruthy();
  const token = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: client.client_id,
      client_secret: client.client_secret,
      code_verifier: verifier,
    },
  });
  expect(token.statusCode, token.body).toBe(200);
  return token.json().access_token;
}

export interface TestUser {
  id: string;
  username: string;
  email: string;
  password: string;
  token: string;
}

const sameScopes = (a: string, b: string) => a.split(/\s+/).filter(Boolean).sort().join(' ') === b.split(/\s+/).filter(Boolean).sort().join(' ');

/**
 * Registers through POST /api/v1/accounts. Its answer is a user token with the scopes the app registered: when those
 * are the scopes asked for (the common case) that token is the user's, and verify_credentials gives the account's id.
 * Otherwise (other scopes, or an account that may not use its token yet) the user signs in through the browser's
 * authorization-code flow with PKCE (test/http/oauth.test.ts tests that flow itself), as Mastodon clients do.
 */
export async function registerUser(app: App, client: RegisteredApp, username: string, scope = 'read write follow push'): Promise<TestUser> {
  const email = `${username}@example.com`;
  const password = `pw-${username}-secret`;
  const token = await appToken(app, client);
  const reg = await app.inject({
    method: 'POST',
    url: '/api/v1/accounts',
    headers: bearer(token),
    payload: { username, email, password, agreement: true, locale: 'en' },
  });
  expect(reg.statusCode, reg.body).toBe(200);
  const registered = reg.json() as { access_token: string; scope: string };
  if (sameScopes(registered.scope, scope)) {
    const me = await app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(registered.access_token) });
    if (me.statusCode === 200) {
      expect(me.json().username).toBe(username);
      return { id: me.json().id, username, email, password, token: registered.access_token };
    }
  }
  const userToken = await authorizationCodeToken(app, client, email, password, scope);
  const me = await app.inject({ method: 'GET', url: `/api/v1/accounts/lookup?acct=${username}` });
  expect(me.statusCode, me.body).toBe(200);
  return { id: me.json().id, username, email, password, token: userToken };
}

/** Registers several users through one app, in parallel. */
export async function registerUsers<const N extends readonly string[]>(app: App, ...usernames: N): Promise<{ [K in keyof N]: TestUser }> {
  const client = await createApp(app);
  return Promise.all(usernames.map((u) => registerUser(app, client, u))) as Promise<{ [K in keyof N]: TestUser }>;
}
