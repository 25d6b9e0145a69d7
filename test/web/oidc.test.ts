import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error oidc-provider ships no types; the test uses its constructor and callback().
import Provider from 'oidc-provider';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken as clientToken, bearer, createApp, hiddenFields, registerUser, REDIRECT_URI } from '../helpers/oauth.ts';
import { CookieJar, WebClient } from '../helpers/web.ts';
import { pkcePair } from '../helpers/server.ts';
import { runCli } from '../../cli/admin.ts';
import { createUsernameBlock, removeUsernameBlock } from '../../services/username-blocks.ts';
import { freePort } from '../helpers/listen.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';

/**
 * A real OpenID Connect provider (oidc-provider) on loopback with our server registered as its client, driven as a
 * browser would: our sign-in page's button, the provider's login and consent forms, back to our callback; and once in
 * Chromium. The provider is reached through a pass-through proxy of the test's own, which can alter the ID token its
 * token endpoint answers (made expired, or signed with another key), as a broken or hostile provider would.
 */
const CALLBACK = 'http://test.local/auth/auth/openid_connect/callback';

/** The people the provider knows, by their id there (the login typed into its form). */
const PEOPLE: Record<string, Record<string, unknown>> = {
  'uid-ada': { email: 'ada@org.example', email_verified: true, preferred_username: 'ada.l', name: 'Ada L' },
  'uid-bo': { email: 'bo@org.example', email_verified: true, preferred_username: 'bo' },
  'uid-cy': { email: 'cy@org.example', email_verified: false, preferred_username: 'cy' },
  'uid-dee': { email: 'dee@example.com', email_verified: true, preferred_username: 'dee_sso' },
  'uid-eve': { email: 'eve@org.example', email_verified: true, preferred_username: 'eve' },
  'uid-fay': { email: 'fay@org.example', email_verified: true, preferred_username: 'fay' },
  'uid-gus': { email: 'gus@org.example', email_verified: true, preferred_username: 'gus' },
  'uid-hal': { email: 'hal@org.example', email_verified: true, preferred_username: 'hal' },
  'uid-ivy': { email: 'ivy@org.example', email_verified: true, preferred_username: 'ivy' },
  'uid-jo': { email: 'jo@org.example', email_verified: true, preferred_username: 'jo' },
  'uid-kit': { email: 'kit@org.example', email_verified: true, preferred_username: 'St4ff_kit' },
};

let providerServer: Server;
let front: Server;
let issuer: string;
let s: TestServer;
let signingKey: KeyObject;
/** The port our server listens on for Chromium (registered at the provider before either starts). */
let browserPort: number;
/** What the proxy does to the next ID tokens: nothing, make them expired, or sign them with a key not the provider's. */
let tamper: null | 'expired' | 'other-key' = null;
const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;

/** A JWT's claims, re-signed (RS256) with the provider's kid and the given key. */
function resign(jwt: string, key: KeyObject, change: (claims: Record<string, unknown>) => void): string {
  const [header, payload] = jwt.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(claims);
  const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** The proxy: everything passed to the provider as it is, except the token endpoint's ID token while `tamper` is set. */
function proxy(innerPort: number) {
  return (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: innerPort, method: req.method, path: req.url, headers: req.headers }, (up) => {
      if (!tamper || !req.url?.startsWith('/token')) {
        res.writeHead(up.statusCode!, up.headers);
        up.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, string>;
        if (body.id_token) {
          const now = Math.floor(Date.now() / 1000);
          body.id_token = tamper === 'expired'
            ? resign(body.id_token, signingKey, (c) => Object.assign(c, { iat: now - 3600, exp: now - 1800 }))
            : resign(body.id_token, otherKey, () => {});
        }
        const out = Buffer.from(JSON.stringify(body));
        res.writeHead(up.statusCode!, { ...up.headers, 'content-length': String(out.length) });
        res.end(out);
      });
    });
    req.pipe(upstream);
  };
}

beforeAll(async () => {
  providerServer = createServer();
  front = createServer();
  await new Promise<void>((resolve) => providerServer.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  front.on('request', proxy((providerServer.address() as AddressInfo).port));
  issuer = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  browserPort = await freePort();
  const jwk = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };
  signingKey = createPrivateKey({ key: jwk as never, format: 'jwk' });
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'fedi', client_secret: 'fedi-client-secret-at-the-provider', response_types: ['code'], grant_types: ['authorization_code'],
      redirect_uris: [CALLBACK, `http://localhost:${browserPort}/auth/auth/openid_connect/callback`],
    }],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username', 'name'] },
    cookies: { keys: ['provider-cookie-key-for-tests'] },
    // Its own signing key (the ID tokens' signatures are checked against its JWKS) and short lifetimes.
    jwks: { keys: [jwk] as never },
    ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    findAccount: (_ctx: unknown, sub: string) => (PEOPLE[sub] ? { accountId: sub, claims: () => ({ sub, ...PEOPLE[sub] }) } : undefined),
  });
  providerServer.on('request', provider.callback());
  s = await startTestServer({
    OIDC_ENABLED: 'true', OIDC_DISPLAY_NAME: 'Example ID', OIDC_ISSUER: issuer,
    OIDC_CLIENT_ID: 'fedi', OIDC_CLIENT_SECRET: 'fedi-client-secret-at-the-provider', OIDC_LINK_EXISTING: 'true',
  });
});
afterAll(async () => {
  await s?.close();
  for (const server of [front, providerServer]) {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  }
});

const count = async (sql: string, params: unknown[] = []) => Number((await s.ctx.db.query(sql, params)).rows[0].n);

/** The form of a provider's page: where it posts and its hidden fields. */
function formOf(html: string) {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error(`no form on the provider's page: ${html.slice(0, 300)}`);
  return { action: action.replace(/&amp;/g, '&'), fields: Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!])) };
}

/** A browser at the provider: logs in as `login`, consents, and returns the URL the provider sends it back to. */
async function atProvider(authorizationUrl: string, login: string): Promise<URL> {
  const jar = new CookieJar();
  let url = authorizationUrl;
  let body: string | undefined;
  for (let step = 0; step < 12; step++) {
    const res = await fetch(url, {
      method: body ? 'POST' : 'GET', redirect: 'manual', body,
      headers: { cookie: jar.header(), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    });
    jar.take(res.headers.getSetCookie());
    body = undefined;
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url);
      if (next.href.startsWith(CALLBACK)) return next;
      url = next.href;
      continue;
    }
    const html = await res.text();
    expect(res.status, html).toBe(200);
    const form = formOf(html);
    url = new URL(form.action, url).href;
    body = new URLSearchParams(html.includes('name="login"') ? { ...form.fields, login, password: 'anything' } : form.fields).toString();
  }
  throw new Error('the provider never sent the browser back');
}

/** Our sign-in page's button: the answer is a redirect to the provider's authorization endpoint. */
async function pressSsoButton(browser: WebClient, returnTo = '/'): Promise<URL> {
  const page = await browser.get(`/auth/sign_in?return_to=${encodeURIComponent(returnTo)}`);
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain('Sign in with Example ID');
  expect(page.headers['content-security-policy']).not.toContain('form-action');
  const start = await browser.post('/auth/auth/openid_connect', { return_to: returnTo }, page.body);
  expect(start.statusCode, start.body).toBe(303);
  const location = new URL(start.headers.location as string);
  expect(location.origin).toBe(issuer);
  return location;
}

const appTokenFor = async (server: TestServer) => clientToken(server.app, await createApp(server.app));

const pathOf = (url: URL) => `${url.pathname}${url.search}`;

async function ssoSignIn(browser: WebClient, login: string, returnTo = '/') {
  const callback = await atProvider((await pressSsoButton(browser, returnTo)).href, login);
  return { callback, res: await browser.get(pathOf(callback)) };
}

async function whoIsSignedIn(browser: WebClient): Promise<string | null> {
  const res = await browser.get('/settings/account');
  if (res.statusCode !== 200) return null;
  return /Your address: <strong>([^<]+)</.exec(res.body)?.[1] ?? null;
}

describe('single sign-on with an OpenID Connect provider', () => {
  it('asks the provider with PKCE, state and nonce, and a first sign-in creates the account', async () => {
    const browser = new WebClient(s.app);
    const authorization = await pressSsoButton(browser);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('state')).toBeTruthy();
    expect(authorization.searchParams.get('nonce')).toBeTruthy();
    expect(authorization.searchParams.get('scope')).toBe('openid profile email');
    expect(authorization.searchParams.get('redirect_uri')).toBe(CALLBACK);
    const callback = await atProvider(authorization.href, 'uid-ada');
    const res = await browser.get(pathOf(callback));
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/');
    expect(await whoIsSignedIn(browser)).toBe('ada@org.example');
    const { rows } = await s.ctx.db.query(
      `SELECT a.username, a.display_name, u.confirmed_at, i.provider, i.uid FROM user_identities i JOIN users u ON u.id = i.user_id JOIN accounts a ON a.id = u.account_id WHERE i.uid = 'uid-ada'`,
    );
    // The username from preferred_username, made valid as Mastodon does (letters, digits, underscores).
    expect(rows).toMatchObject([{ username: 'adal', display_name: 'Ada L', provider: 'openid_connect', uid: 'uid-ada' }]);
    expect(rows[0].confirmed_at).not.toBeNull();
  });

  it('signs a second sign-in of the same person into the same account', async () => {
    const before = await count('SELECT count(*) AS n FROM accounts');
    const browser = new WebClient(s.app);
    const { res } = await ssoSignIn(browser, 'uid-ada', '/settings/profile');
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/settings/profile');
    expect(await whoIsSignedIn(browser)).toBe('ada@org.example');
    expect(await count('SELECT count(*) AS n FROM accounts')).toBe(before);
  });

  it('links a first sign-in to the account with the same confirmed address (OIDC_LINK_EXISTING)', async () => {
    const dee = await registerUser(s.app, await createApp(s.app), 'dee');
    const browser = new WebClient(s.app);
    const { res } = await ssoSignIn(browser, 'uid-dee');
    expect(res.statusCode, res.body).toBe(303);
    expect(await whoIsSignedIn(browser)).toBe(dee.email);
    expect(await count(`SELECT count(*) AS n FROM user_identities i JOIN users u ON u.id = i.user_id WHERE i.uid = 'uid-dee' AND u.email = $1`, [dee.email])).toBe(1);
    expect(await count(`SELECT count(*) AS n FROM accounts WHERE username LIKE 'dee_sso%'`)).toBe(0);
  });

  it('refuses a wrong state, a replayed code and an unconfirmed address with a page, writing nothing', async () => {
    const accounts = await count('SELECT count(*) AS n FROM accounts');
    const identities = await count('SELECT count(*) AS n FROM user_identities');

    // A wrong state: the provider's answer is not for the sign-in this browser started.
    const wrongState = new WebClient(s.app);
    const callback = await atProvider((await pressSsoButton(wrongState)).href, 'uid-bo');
    callback.searchParams.set('state', 'not-the-state-we-sent');
    const refused = await wrongState.get(pathOf(callback));
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('could not be verified');
    expect(wrongState.jar.cookies.has('_session')).toBe(false);

    // A replayed code: the same callback again, and the used code with a fresh sign-in's state.
    const first = new WebClient(s.app);
    const used = await ssoSignIn(first, 'uid-ada');
    expect(used.res.statusCode).toBe(303);
    const again = await first.get(pathOf(used.callback));
    expect(again.statusCode).toBe(400);
    expect(again.body).toContain('was not started in this browser');
    const replay = new WebClient(s.app);
    const fresh = await pressSsoButton(replay);
    const replayed = new URL(used.callback);
    replayed.searchParams.set('state', fresh.searchParams.get('state')!);
    const replayRes = await replay.get(pathOf(replayed));
    expect(replayRes.statusCode).toBe(400);
    expect(replayRes.body).toContain('refused the sign-in (invalid_grant)');
    expect(replay.jar.cookies.has('_session')).toBe(false);

    // An address the provider does not say is verified: no account is made from it.
    const unconfirmed = new WebClient(s.app);
    const cy = await ssoSignIn(unconfirmed, 'uid-cy');
    expect(cy.res.statusCode).toBe(403);
    expect(cy.res.body).toContain('did not give a confirmed e-mail address');
    expect(unconfirmed.jar.cookies.has('_session')).toBe(false);

    // Someone whose address an account here already has, unverified at the provider: not linked, nothing made.
    await registerUser(s.app, await createApp(s.app), 'cyhere');
    PEOPLE['uid-cy']!.email = 'cyhere@example.com';
    const taken = await ssoSignIn(new WebClient(s.app), 'uid-cy');
    expect(taken.res.statusCode).toBe(409);
    expect(taken.res.body).toContain('Sign in with its password, then link Example ID');

    expect(await count('SELECT count(*) AS n FROM accounts')).toBe(accounts + 1); // cyhere, registered above
    expect(await count('SELECT count(*) AS n FROM user_identities')).toBe(identities);
  });

  it("refuses a first sign-in whose name meets the operators' username block, making nothing", async () => {
    const block = await createUsernameBlock(s.ctx.db, { username: 'staff', comparison: 'contains' });
    const accounts = await count('SELECT count(*) AS n FROM accounts');
    const browser = new WebClient(s.app);
    const { res } = await ssoSignIn(browser, 'uid-kit');
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('No account could be made for you here: username is reserved.');
    expect(browser.jar.cookies.has('_session')).toBe(false);
    expect(await count('SELECT count(*) AS n FROM accounts')).toBe(accounts);
    await removeUsernameBlock(s.ctx.db, block.id);
    expect((await ssoSignIn(new WebClient(s.app), 'uid-kit')).res.statusCode).toBe(303);
  });

  it('gives an OAuth app a token for a person who only exists at the provider', async () => {
    const app = await createApp(s.app);
    const { verifier, challenge } = pkcePair();
    const browser = new WebClient(s.app);
    const query = new URLSearchParams({ client_id: app.client_id, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'read write', state: 'app-state', code_challenge: challenge, code_challenge_method: 'S256' });
    const authorize = await browser.get(`/oauth/authorize?${query}`);
    expect(authorize.statusCode).toBe(302);
    const returnTo = new URL(authorize.headers.location as string, 'http://x').searchParams.get('return_to')!;
    const { res } = await ssoSignIn(browser, 'uid-eve', returnTo);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe(returnTo);
    const page = await browser.get(returnTo);
    expect(page.statusCode, page.body).toBe(200);
    const approved = await browser.post('/oauth/authorize', { ...hiddenFields(page.body), decision: 'approve' });
    expect(approved.statusCode, approved.body).toBe(302);
    const redirect = new URL(approved.headers.location as string);
    expect(redirect.searchParams.get('state')).toBe('app-state');
    const token = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'authorization_code', code: redirect.searchParams.get('code'), redirect_uri: REDIRECT_URI, client_id: app.client_id, client_secret: app.client_secret, code_verifier: verifier },
    });
    expect(token.statusCode, token.body).toBe(200);
    const me = await s.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(token.json().access_token) });
    expect(me.statusCode, me.body).toBe(200);
    expect(me.json().username).toBe('eve');
  });

  it('lets a person link the provider in settings, sign in with it, and unlink it with the password', async () => {
    const gil = await registerUser(s.app, await createApp(s.app), 'gil');
    const browser = new WebClient(s.app);
    expect((await browser.signIn(gil.email, gil.password)).statusCode).toBe(303);
    const settings = await browser.get('/settings/account');
    expect(settings.body).toContain('Link Example ID');
    const start = await browser.post('/auth/auth/openid_connect', { link: '1' }, settings.body);
    expect(start.statusCode).toBe(303);
    const callback = await atProvider(start.headers.location as string, 'uid-fay');
    const linked = await browser.get(pathOf(callback));
    expect(linked.statusCode, linked.body).toBe(303);
    expect(linked.headers.location).toBe('/settings/account?notice=oidc_linked');
    expect(await count(`SELECT count(*) AS n FROM accounts WHERE username = 'fay'`)).toBe(0);

    const elsewhere = new WebClient(s.app);
    expect((await ssoSignIn(elsewhere, 'uid-fay')).res.statusCode).toBe(303);
    expect(await whoIsSignedIn(elsewhere)).toBe(gil.email);

    // Another provider login cannot be linked while one is.
    const page = await browser.get('/settings/account');
    expect(page.body).toContain('Unlink Example ID');
    const wrong = await browser.post('/settings/account/identity/unlink', { current_password: 'not-it' }, page.body);
    expect(wrong.statusCode).toBe(422);
    expect(await count(`SELECT count(*) AS n FROM user_identities WHERE uid = 'uid-fay'`)).toBe(1);
    const unlinked = await browser.post('/settings/account/identity/unlink', { current_password: gil.password }, page.body);
    expect(unlinked.statusCode).toBe(303);
    expect(await count(`SELECT count(*) AS n FROM user_identities WHERE uid = 'uid-fay'`)).toBe(0);
  });
});

describe("operators' view of who signs in through the provider", () => {
  const cli = async (...args: string[]) => {
    const lines: string[] = [];
    await runCli(args, s.ctx.db, (l) => lines.push(l), async () => {});
    return lines;
  };

  it('lists the linked accounts, newest first, with the id the provider knows them by; only for operators who manage users', async () => {
    const lines = await cli('accounts', 'identities');
    const uids = lines.map((l) => l.split('\t')[2]);
    // Linked by the tests above: ada (made), dee (linked by address), eve (made); newest first.
    expect(uids.filter((u) => ['uid-ada', 'uid-dee', 'uid-eve'].includes(u!))).toEqual(['uid-eve', 'uid-dee', 'uid-ada']);
    expect(lines.find((l) => l.includes('uid-ada'))).toMatch(/^adal\topenid_connect\tuid-ada\tlinked \d{4}-\d{2}-\d{2}$/);
    expect(lines.find((l) => l.includes('uid-dee'))).toMatch(/^dee\topenid_connect\tuid-dee\t/);
    expect(await cli('accounts', 'identities', '--limit=1')).toHaveLength(1);
    await expect(cli('accounts', 'identities', '--limit=0')).rejects.toThrow(/--limit/);
    // Run for an operator, it needs manage_users: a Moderator has it, someone without a role has not.
    await cli('accounts', 'create', 'modsso', '--email', 'modsso@example.com', '--role', 'Moderator');
    expect(await cli('--as', 'modsso', 'accounts', 'identities')).toEqual(lines);
    await expect(cli('--as', 'adal', 'accounts', 'identities')).rejects.toThrow("not allowed: adal's role lacks manage_users");
  });
});

describe('ID tokens that must not be believed', () => {
  it.each([
    ['expired', 'expired half an hour ago'],
    ['other-key', 'signed with a key that is not the provider\'s'],
  ] as const)('refuses an ID token %s (%s) with a clear page, making no account and no session', async (mode, _why) => {
    const accounts = await count('SELECT count(*) AS n FROM accounts');
    const identities = await count('SELECT count(*) AS n FROM user_identities');
    const browser = new WebClient(s.app);
    tamper = mode;
    let res;
    try {
      res = (await ssoSignIn(browser, 'uid-ivy')).res;
    } finally {
      tamper = null;
    }
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('Sign-in failed');
    expect(res.body).toContain(`The answer from Example ID could not be verified (${mode === 'expired' ? 'its ID token has expired' : 'its ID token is not signed with the provider&#39;s key'}). Nobody was signed in: start again.`);
    expect(res.body).toContain('href="/auth/sign_in"');
    expect(browser.jar.cookies.has('_session')).toBe(false);
    expect(await whoIsSignedIn(browser)).toBeNull();
    expect(await count('SELECT count(*) AS n FROM accounts')).toBe(accounts);
    expect(await count('SELECT count(*) AS n FROM user_identities')).toBe(identities);
    expect(await count(`SELECT count(*) AS n FROM accounts WHERE username = 'ivy'`)).toBe(0);
  });

  it('then signs the same person in once the provider answers honestly', async () => {
    const browser = new WebClient(s.app);
    expect((await ssoSignIn(browser, 'uid-ivy')).res.statusCode).toBe(303);
    expect(await whoIsSignedIn(browser)).toBe('ivy@org.example');
  });
});

describe('the whole journey in Chromium', () => {
  let web: TestServer;
  let chromium: TestBrowser;
  const origin = () => `http://localhost:${browserPort}`;

  beforeAll(async () => {
    [web, chromium] = await Promise.all([
      startTestServer({
        LOCAL_DOMAIN: `localhost:${browserPort}`, OIDC_ENABLED: 'true', OIDC_DISPLAY_NAME: 'Example ID', OIDC_ISSUER: issuer,
        OIDC_CLIENT_ID: 'fedi', OIDC_CLIENT_SECRET: 'fedi-client-secret-at-the-provider',
      }),
      testBrowser(),
    ]);
    await web.app.listen({ port: browserPort, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await chromium?.close();
    await web?.close();
  });

  it("goes from our sign-in page to the provider's forms and back, signed in where it was going", async () => {
    const context = await chromium.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${origin()}/auth/sign_in?return_to=${encodeURIComponent('/settings/profile')}`);
    await expectAccessible(page, 'sign-in page with single sign-on');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(issuer)), page.click('button:has-text("Sign in with Example ID")')]);
    // The provider's own login form, then its consent form.
    await page.fill('input[name="login"]', 'uid-jo');
    await page.fill('input[name="password"]', 'anything');
    await Promise.all([page.waitForURL(/\/interaction\//), page.click('button[type="submit"]')]);
    await Promise.all([page.waitForURL(`${origin()}/settings/profile`), page.click('button[type="submit"]')]);
    await page.goto(`${origin()}/settings/account`);
    expect(await page.content()).toContain('Your address: <strong>jo@org.example</strong>');
    const { rows } = await web.ctx.db.query(`SELECT a.username FROM user_identities i JOIN users u ON u.id = i.user_id JOIN accounts a ON a.id = u.account_id WHERE i.uid = 'uid-jo'`);
    expect(rows).toEqual([{ username: 'jo' }]);
    await context.close();
  });
});

describe('single sign-on only (OMNIAUTH_ONLY), without accounts made on first sign-in', () => {
  let only: TestServer;
  beforeAll(async () => {
    only = await startTestServer({
      OIDC_ENABLED: 'true', OIDC_DISPLAY_NAME: 'Example ID', OIDC_ISSUER: issuer, OIDC_CLIENT_ID: 'fedi',
      OIDC_CLIENT_SECRET: 'fedi-client-secret-at-the-provider', OMNIAUTH_ONLY: 'true', OIDC_CREATE_ACCOUNTS: 'false',
    });
  });
  afterAll(async () => only?.close());

  it('offers no password sign-in or sign-up, and lets in only people already linked', async () => {
    const browser = new WebClient(only.app);
    const page = await browser.get('/auth/sign_in');
    expect(page.body).toContain('Sign in with Example ID');
    expect(page.body).not.toContain('name="password"');
    const password = await browser.post('/auth/sign_in', { email: 'x@example.com', password: 'whatever-it-is' }, page.body);
    expect(password.statusCode).toBe(403);
    expect((await browser.get('/auth/sign_up')).body).not.toContain('name="password"');
    const signUp = await browser.post('/auth/sign_up', { username: 'nope', email: 'nope@example.com', password: 'long-password', password_confirmation: 'long-password', agreement: '1' }, page.body);
    expect(signUp.statusCode).toBe(403);
    const appToken = await appTokenFor(only);
    const api = await only.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: bearer(appToken), payload: { username: 'nope', email: 'nope@example.com', password: 'long-password', agreement: true } });
    expect(api.statusCode).toBe(403);

    const start = await browser.post('/auth/auth/openid_connect', { return_to: '/' }, page.body);
    const res = await browser.get(pathOf(await atProvider(start.headers.location as string, 'uid-hal')));
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('No account here is linked to your Example ID login');
    expect(Number((await only.ctx.db.query(`SELECT count(*) AS n FROM accounts WHERE username = 'hal'`)).rows[0].n)).toBe(0);
  });
});
