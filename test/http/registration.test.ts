// POST /api/v1/accounts as Mastodon does it: an app token from client_credentials registers an account and gets back
// a Token for it; every refusal (validation, auth, closed or moderated registrations, races) writes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { appToken, authorizationCodeToken, bearer, createApp, registerUser, type RegisteredApp } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer;
let client: RegisteredApp;
let token: string;

beforeAll(async () => {
  s = await startTestServer();
  client = await createApp(s.app);
  token = await appToken(s.app, client);
});
afterAll(async () => s?.close());

type Payload = Record<string, unknown>;

const register = (server: TestServer, t: string | null, payload: Payload | string | Buffer, headers: Record<string, string> = {}) =>
  server.app.inject({ method: 'POST', url: '/api/v1/accounts', headers: { ...(t ? bearer(t) : {}), ...headers }, payload });
const form = { 'content-type': 'application/x-www-form-urlencoded' };
const valid = (username: string): Payload => ({ username, email: `${username}@example.com`, password: 'a fine password', agreement: true, locale: 'en' });
const verify = (server: TestServer, t: string) => server.app.inject({ method: 'GET', url: '/api/v1/accounts/verify_credentials', headers: bearer(t) });

async function rowCounts(server: TestServer): Promise<{ accounts: number; users: number }> {
  const { rows } = await server.ctx.db.query('SELECT (SELECT count(*) FROM accounts)::int AS accounts, (SELECT count(*) FROM users)::int AS users');
  return rows[0];
}

/** Runs `fn` and asserts it wrote no account and no user. */
async function writesNothing(server: TestServer, fn: () => Promise<void>): Promise<void> {
  const before = await rowCounts(server);
  await fn();
  expect(await rowCounts(server)).toEqual(before);
}

/** A 422 whose `details` name the field with the given Mastodon error code. */
function expectFieldError(res: { statusCode: number; body: string; json(): any }, field: string, code?: string, label = '') {
  expect(res.statusCode, `${label} ${res.body}`).toBe(422);
  const body = res.json();
  expect(typeof body.error, label).toBe('string');
  expect(body.error, label).toMatch(/^Validation failed/);
  expect(body.details?.[field]?.length, `${label}: details.${field} in ${res.body}`).toBeGreaterThan(0);
  if (code) expect(body.details[field][0].error, label).toBe(code);
  expect(typeof body.details[field][0].description, label).toBe('string');
}

describe('a successful registration', () => {
  it('returns a Token that works at once, for a CredentialAccount with source and role', async () => {
    const before = await rowCounts(s);
    const res = await register(s, token, valid('gwen'));
    expect(res.statusCode, res.body).toBe(200);
    const tok = res.json();
    expectEntity('Token', tok);
    expect(tok.token_type).toBe('Bearer');
    expect(tok.scope).toBe('read write follow push');
    expect(tok.access_token).not.toBe(token);
    expect(Math.abs(tok.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(await rowCounts(s)).toEqual({ accounts: before.accounts + 1, users: before.users + 1 });

    const me = await verify(s, tok.access_token);
    expect(me.statusCode, me.body).toBe(200);
    const account = me.json();
    expectEntity('CredentialAccount', account);
    expectEntity('Role', account.role);
    expect(account).toMatchObject({
      username: 'gwen', acct: 'gwen', display_name: '', note: '', locked: false, bot: false, fields: [],
      url: 'http://test.local/@gwen', followers_count: 0, following_count: 0, statuses_count: 0,
      role: { id: '-99', name: '' },
      source: { privacy: 'public', sensitive: false, note: '', fields: [], follow_requests_count: 0 },
    });

    const { rows } = await s.ctx.db.query(
      `SELECT u.email, u.locale, u.approved, u.role_id IS NOT NULL AS admin, u.agreement_at, u.password_hash, u.created_by_application_id::text AS app_id, a.username, a.domain
         FROM users u JOIN accounts a ON a.id = u.account_id WHERE a.id = $1`, [account.id]);
    expect(rows[0]).toMatchObject({ email: 'gwen@example.com', locale: 'en', approved: true, admin: false, username: 'gwen', domain: null, app_id: client.id });
    expect(rows[0].agreement_at).toBeInstanceOf(Date);
    expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
    // The password chosen at registration signs in through the browser flow.
    const signedIn = await authorizationCodeToken(s.app, client, 'gwen@example.com', 'a fine password', 'read');
    expect((await verify(s, signedIn)).json().id).toBe(account.id);
  });

  it('accepts form-urlencoded and multipart bodies', async () => {
    const viaForm = await register(s, token, 'username=hal&email=hal%40example.com&password=a+fine+password&agreement=true&locale=en', form);
    expect(viaForm.statusCode, viaForm.body).toBe(200);
    expect((await verify(s, viaForm.json().access_token)).json().username).toBe('hal');
    const body = await multipart({ username: 'ida', email: 'ida@example.com', password: 'a fine password', agreement: '1', locale: 'en' });
    const viaMultipart = await register(s, token, body.payload, body.headers);
    expect(viaMultipart.statusCode, viaMultipart.body).toBe(200);
    expect((await verify(s, viaMultipart.json().access_token)).json().username).toBe('ida');
  });

  it('gives the new token the scopes the app registered, even from a narrower app token (as Mastodon does)', async () => {
    const narrow = await appToken(s.app, client, 'write:accounts');
    const res = await register(s, narrow, valid('jon'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().scope).toBe('read write follow push');
    const me = await verify(s, res.json().access_token);
    expect(me.statusCode, me.body).toBe(200);
    expect(me.json().username).toBe('jon');
  });
});

describe('usernames', () => {
  it('accepts letters, digits and underscores, up to 30 characters, as Mastodon does for local accounts', async () => {
    for (const username of ['k', 'K_2', '_under_', '9lives', 'x'.repeat(30)]) {
      const res = await register(s, token, valid(username));
      expect(res.statusCode, `${username}: ${res.body}`).toBe(200);
      expect((await verify(s, res.json().access_token)).json().username, username).toBe(username);
    }
  });

  it('refuses anything else with 422 naming the username, writing nothing', async () => {
    await writesNothing(s, async () => {
      const cases: [string, string][] = [
        ['', 'ERR_BLANK'], [' ', 'ERR_BLANK'], ['dot.ted', 'ERR_INVALID'], ['dash-ed', 'ERR_INVALID'], ['has space', 'ERR_INVALID'], ['.lead', 'ERR_INVALID'], ['trail.', 'ERR_INVALID'],
        ['-lead', 'ERR_INVALID'], ['trail-', 'ERR_INVALID'], ['ünï', 'ERR_INVALID'], ['ſam', 'ERR_INVALID'], ['kelvin\u212a', 'ERR_INVALID'],
        ['new\nline', 'ERR_INVALID'], ['line\n', 'ERR_INVALID'], ['at@sign', 'ERR_INVALID'], ['lee@test.local', 'ERR_INVALID'],
        ['<script>', 'ERR_INVALID'], ['slash/es', 'ERR_INVALID'], ['x'.repeat(31), 'ERR_TOO_LONG'], ['admin', 'ERR_RESERVED'], ['Root', 'ERR_RESERVED'],
      ];
      for (const [username, code] of cases) {
        const res = await register(s, token, { ...valid('ok'), username, email: 'fresh@example.com' });
        expectFieldError(res, 'username', code, JSON.stringify(username));
      }
    });
  });

  it('treats usernames case-insensitively: Alice after alice is taken', async () => {
    expect((await register(s, token, valid('alice'))).statusCode).toBe(200);
    await writesNothing(s, async () => {
      for (const username of ['Alice', 'ALICE', 'aLiCe']) {
        const res = await register(s, token, { ...valid(username), email: `${username}-other@example.com` });
        expectFieldError(res, 'username', 'ERR_TAKEN', username);
      }
    });
  });
});

describe('emails, passwords, agreement and locale', () => {
  it('refuses an email already used, whatever its case', async () => {
    expect((await register(s, token, valid('mel'))).statusCode).toBe(200);
    await writesNothing(s, async () => {
      for (const email of ['mel@example.com', 'MEL@Example.COM']) {
        expectFieldError(await register(s, token, { ...valid('mel2'), email }), 'email', 'ERR_TAKEN', email);
      }
      for (const email of ['not-an-email', 'two@@example.com', 'no@tld', ' spaced@example.com']) {
        expectFieldError(await register(s, token, { ...valid('mel2'), email }), 'email', 'ERR_INVALID', JSON.stringify(email));
      }
    });
  });

  it('needs a password of 8 to 72 characters', async () => {
    await writesNothing(s, async () => {
      expectFieldError(await register(s, token, { ...valid('pam'), password: '1234567' }), 'password', 'ERR_TOO_SHORT', 'seven');
      expectFieldError(await register(s, token, { ...valid('pam'), password: 'x'.repeat(73) }), 'password', 'ERR_TOO_LONG', '73');
    });
    expect((await register(s, token, { ...valid('pam'), password: '12345678' })).statusCode).toBe(200);
    expect((await register(s, token, { ...valid('pat'), password: 'y'.repeat(72) })).statusCode).toBe(200);
  });

  it('needs the agreement accepted: missing, false, "false", "0" and "maybe" are 422; "true" and "1" are accepted', async () => {
    await writesNothing(s, async () => {
      const { agreement: _, ...withoutAgreement } = valid('quin');
      const missing = await register(s, token, withoutAgreement);
      expect(missing.statusCode).toBe(422);
      expect(missing.json().error).toContain('agreement');
      for (const agreement of [false, 'false', '0', 0]) {
        expectFieldError(await register(s, token, { ...valid('quin'), agreement }), 'agreement', 'ERR_ACCEPTED', JSON.stringify(agreement));
      }
      for (const agreement of ['maybe', '', null, 'yes please', { a: 1 }]) {
        const res = await register(s, token, { ...valid('quin'), agreement });
        expect(res.statusCode, JSON.stringify(agreement)).toBe(422);
        expect(res.json().error, JSON.stringify(agreement)).toContain('agreement');
      }
      // And from a form.
      for (const agreement of ['false', '0', 'maybe']) {
        const res = await register(s, token, `username=quin&email=quin%40example.com&password=a+fine+password&locale=en&agreement=${agreement}`, form);
        expect(res.statusCode, agreement).toBe(422);
      }
      const noAgreementForm = await register(s, token, 'username=quin&email=quin%40example.com&password=a+fine+password&locale=en', form);
      expect(noAgreementForm.statusCode).toBe(422);
    });
    expect((await register(s, token, { ...valid('quin'), agreement: 'true' })).statusCode).toBe(200);
    expect((await register(s, token, 'username=rae&email=rae%40example.com&password=a+fine+password&agreement=1&locale=en', form)).statusCode).toBe(200);
  });

  it('names blank fields and a refused agreement with Mastodon\'s error codes', async () => {
    const blank = { error: 'ERR_BLANK', description: "can't be blank" };
    const accepted = { error: 'ERR_ACCEPTED', description: 'must be accepted' };
    await writesNothing(s, async () => {
      const res = await register(s, token, { username: '', email: '', password: '', agreement: false, locale: 'en' });
      expect(res.statusCode, res.body).toBe(422);
      const body = res.json();
      expect(body.error).toMatch(/^Validation failed: /);
      expect(body.details).toEqual({
        username: [blank],
        email: [blank, { error: 'ERR_INVALID', description: 'is invalid' }],
        password: [blank],
        agreement: [accepted],
      });
      // A username of spaces is blank and, being a change, also fails the format; missing fields are blank.
      expect((await register(s, token, { ...valid('vic'), username: '  ' })).json().details.username.map((e: { error: string }) => e.error)).toEqual(['ERR_BLANK', 'ERR_INVALID']);
      const { username: _u, password: _p, agreement: _a, ...rest } = valid('vic');
      const missing = (await register(s, token, rest)).json();
      expect(missing.details).toEqual({ username: [blank], password: [blank], agreement: [accepted] });
      const viaForm = await register(s, token, 'username=&email=&password=&locale=en', form);
      expect(viaForm.statusCode, viaForm.body).toBe(422);
      expect(viaForm.json().details).toEqual(body.details);
    });
  });

  it('needs a locale', async () => {
    await writesNothing(s, async () => {
      const { locale: _, ...withoutLocale } = valid('sam');
      const res = await register(s, token, withoutLocale);
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toContain('locale');
      const viaForm = await register(s, token, 'username=sam&email=sam%40example.com&password=a+fine+password&agreement=true', form);
      expect(viaForm.statusCode).toBe(422);
      expect(viaForm.json().error).toContain('locale');
    });
  });

  it('refuses missing fields, malformed and mistyped bodies with a 4xx error entity, never a 500', async () => {
    await writesNothing(s, async () => {
      for (const field of ['username', 'email', 'password']) {
        const payload = valid('tia');
        delete payload[field];
        const res = await register(s, token, payload);
        expect(res.statusCode, field).toBe(422);
        expect(res.json().error, field).toContain(field);
      }
      const malformed = await register(s, token, '{"username": "tia", ', { 'content-type': 'application/json' });
      expect(malformed.statusCode).toBe(400);
      expect(typeof malformed.json().error).toBe('string');
      for (const payload of ['[]', '"tia"', 'null', '42', '{"username": {"a": 1}, "email": "tia@example.com", "password": "a fine password", "agreement": true, "locale": "en"}']) {
        const res = await register(s, token, payload, { 'content-type': 'application/json' });
        expect(res.statusCode, payload).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, payload).toBeLessThan(500);
        expect(typeof res.json().error, payload).toBe('string');
      }
      const brokenMultipart = await register(s, token, '--x\r\nContent-Disposition: form-data; name="username"\r\n\r\ntia', { 'content-type': 'multipart/form-data; boundary=x' });
      expect(brokenMultipart.statusCode).toBe(400);
      expect(typeof brokenMultipart.json().error).toBe('string');
    });
  });
});

describe('who may register', () => {
  it('needs a token: none or an unknown one is 401', async () => {
    await writesNothing(s, async () => {
      const none = await register(s, null, valid('uma'));
      expect(none.statusCode).toBe(401);
      expect(none.json()).toEqual({ error: 'The access token is invalid' });
      expect((await register(s, 'not-a-token', valid('uma'))).statusCode).toBe(401);
      expect((await register(s, null, valid('uma'), { authorization: 'Basic dXNlcjpwYXNz' })).statusCode).toBe(401);
    });
  });

  it('needs write:accounts: an app or user token without it is 403', async () => {
    const reader = await registerUser(s.app, client, 'reader', 'read');
    const readOnlyApp = await appToken(s.app, client, 'read');
    await writesNothing(s, async () => {
      for (const t of [reader.token, readOnlyApp]) {
        const res = await register(s, t, valid('uma'));
        expect(res.statusCode).toBe(403);
        expect(res.json().error).toBe('This action is outside the authorized scopes');
      }
    });
  });

  it('is for app tokens: a signed-in user\'s token, even with write:accounts, is 403 (Mastodon\'s require_client_credentials!)', async () => {
    const writer = await registerUser(s.app, client, 'writer', 'write:accounts read');
    await writesNothing(s, async () => {
      const res = await register(s, writer.token, valid('uma'));
      expect(res.statusCode, res.body).toBe(403);
      expect(typeof res.json().error).toBe('string');
    });
  });
});

describe('registration modes', () => {
  it('refuses everyone with 403 when registrations are closed, before looking at the body', async () => {
    const closed = await startTestServer({ REGISTRATIONS_MODE: 'none' });
    try {
      const c = await createApp(closed.app);
      const t = await appToken(closed.app, c);
      await writesNothing(closed, async () => {
        for (const payload of [valid('vic'), { ...valid('vic'), reason: 'please' }, {}, { username: 'x' }]) {
          const res = await register(closed, t, payload);
          expect(res.statusCode, JSON.stringify(payload)).toBe(403);
          expect(typeof res.json().error).toBe('string');
        }
        // Auth still comes first.
        expect((await register(closed, null, valid('vic'))).statusCode).toBe(401);
      });
      expect(await rowCounts(closed)).toEqual({ accounts: 0, users: 0 });
      expect((await closed.app.inject({ method: 'GET', url: '/api/v2/instance' })).json().registrations.enabled).toBe(false);
    } finally {
      await closed.close();
    }
  });

  it('needs a reason when registrations need approval, and holds the account until approved', async () => {
    const moderated = await startTestServer({ REGISTRATIONS_MODE: 'approved' });
    try {
      const c = await createApp(moderated.app);
      const t = await appToken(moderated.app, c);
      await writesNothing(moderated, async () => {
        for (const reason of [undefined, '', '   ', '\n\t']) {
          const res = await register(moderated, t, reason === undefined ? valid('wes') : { ...valid('wes'), reason });
          expect(res.statusCode, JSON.stringify(reason)).toBe(422);
          expect(res.json().error, JSON.stringify(reason)).toContain('reason');
        }
        // The other rules still apply when a reason is given.
        expectFieldError(await register(moderated, t, { ...valid('wes'), password: 'short', reason: 'hello' }), 'password', 'ERR_TOO_SHORT');
      });

      const res = await register(moderated, t, { ...valid('wes'), reason: 'I would like to join' });
      expect(res.statusCode, res.body).toBe(200);
      expectEntity('Token', res.json());
      expect(await rowCounts(moderated)).toEqual({ accounts: 1, users: 1 });
      const pending = await verify(moderated, res.json().access_token);
      expect(pending.statusCode).toBe(403);
      expect(pending.json().error).toBe('Your login is currently pending approval');
      const { rows } = await moderated.ctx.db.query('SELECT approved, reason FROM users WHERE email = $1', ['wes@example.com']);
      expect(rows[0]).toEqual({ approved: false, reason: 'I would like to join' });
      expect((await moderated.app.inject({ method: 'GET', url: '/api/v2/instance' })).json().registrations).toMatchObject({ enabled: true, approval_required: true });
    } finally {
      await moderated.close();
    }
  });
});

describe('races', () => {
  it('lets exactly one of two simultaneous registrations of a username win; the other is 422 ERR_TAKEN', async () => {
    for (const [a, b] of [['yan', 'yan'], ['zed', 'ZED'], ['ora', 'Ora']] as const) {
      const before = await rowCounts(s);
      const results = await Promise.all([
        register(s, token, { ...valid(a), email: `${a}-1@example.com` }),
        register(s, token, { ...valid(b), email: `${b}-2@example.com` }),
      ]);
      expect(results.map((r) => r.statusCode).sort(), results.map((r) => r.body).join(' ')).toEqual([200, 422]);
      expectFieldError(results.find((r) => r.statusCode === 422)!, 'username', 'ERR_TAKEN');
      expect(await rowCounts(s)).toEqual({ accounts: before.accounts + 1, users: before.users + 1 });
      const winner = results.find((r) => r.statusCode === 200)!;
      expect((await verify(s, winner.json().access_token)).statusCode).toBe(200);
    }
  });

  it('lets exactly one of two simultaneous registrations of an email win', async () => {
    const before = await rowCounts(s);
    const results = await Promise.all([
      register(s, token, { ...valid('bea'), email: 'shared@example.com' }),
      register(s, token, { ...valid('cal'), email: 'SHARED@example.com' }),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 422]);
    expectFieldError(results.find((r) => r.statusCode === 422)!, 'email', 'ERR_TAKEN');
    expect(await rowCounts(s)).toEqual({ accounts: before.accounts + 1, users: before.users + 1 });
  });
});
