// Follow suggestions (GET /api/v2/suggestions, /api/v1/suggestions, DELETE /api/v1/suggestions/:id), featured accounts
// through the operator's command line, and account search (GET /api/v1/accounts/search), against one small world:
//
//   vera follows bea, cal and hide, and has asked to follow lock (locked)
//   bea follows dora, eve, finn, vera, susi (suspended), pend (not approved); cal follows dora and bea
//   hide (hides its collections) follows gus; gus follows dora
//   everyone is discoverable but finn (never said) and nope (said no); star's post is favourited and reblogged
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startHttpsInstance, type Instance } from '../helpers/instances.ts';
import { authorizationCodeToken, bearer, createApp, registerUser, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { forgetGlobalSuggestions } from '../../services/suggestions.ts';

type Json = Record<string, any>;

let s: Instance;
let u: Record<'vera' | 'bea' | 'cal' | 'dora' | 'eve' | 'finn' | 'gus' | 'hide' | 'lock' | 'susi' | 'pend' | 'star' | 'nope' | 'newbie', TestUser>;

async function api(user: TestUser | string | null, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  const token = typeof user === 'string' ? user : user?.token;
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : undefined } as { status: number; body: any };
}

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what));
  return lines;
}

async function ok(user: TestUser, method: 'POST' | 'PATCH', url: string, payload?: object) {
  const res = await api(user, method, url, payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const follow = (from: TestUser, to: TestUser) => ok(from, 'POST', `/api/v1/accounts/${to.id}/follow`);
const profile = (user: TestUser, changes: object) => ok(user, 'PATCH', '/api/v1/accounts/update_credentials', changes);

/** v2 suggestions for a user, each checked against Mastodon's schema. */
async function suggestions(user: TestUser, query = ''): Promise<Json[]> {
  const res = await api(user, 'GET', `/api/v2/suggestions${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  for (const suggestion of res.body) expectEntity('Suggestion', suggestion);
  return res.body;
}

const byName = (list: Json[]) => Object.fromEntries(list.map((x) => [x.account.acct, x.sources]));
const accts = (list: Json[]) => list.map((x) => x.acct);

beforeAll(async () => {
  s = await startHttpsInstance();
  u = Object.fromEntries(
    (await registerUsers(s.app, 'vera', 'bea', 'cal', 'dora', 'eve', 'finn', 'gus', 'hide', 'lock', 'susi', 'pend', 'star', 'nope', 'newbie'))
      .map((user) => [user.username, user]),
  ) as typeof u;
  for (const name of ['vera', 'bea', 'cal', 'dora', 'eve', 'gus', 'hide', 'lock', 'susi', 'pend', 'star', 'newbie'] as const) {
    await profile(u[name], { discoverable: true });
  }
  await profile(u.nope, { discoverable: false });
  await profile(u.hide, { hide_collections: true });
  await profile(u.lock, { locked: true });
  await profile(u.bea, { display_name: 'Beatrice Quill' });
  await profile(u.dora, { display_name: 'Dora Quill-Smith' });

  for (const target of [u.bea, u.cal, u.hide, u.lock]) await follow(u.vera, target);
  for (const target of [u.dora, u.eve, u.finn, u.vera, u.susi, u.pend, u.nope]) await follow(u.bea, target);
  await follow(u.cal, u.dora);
  await follow(u.cal, u.bea);
  await follow(u.hide, u.gus);
  await follow(u.gus, u.dora);

  // star's post is favourited by two and reblogged by one (and favourited by star, which does not count).
  const post = await ok(u.star, 'POST', '/api/v1/statuses', { status: 'worth a look' });
  for (const fan of [u.bea, u.cal, u.star]) await ok(fan, 'POST', `/api/v1/statuses/${post.id}/favourite`);
  await ok(u.dora, 'POST', `/api/v1/statuses/${post.id}/reblog`);
  // finn's post too, but finn has not opted in to discovery.
  const finnPost = await ok(u.finn, 'POST', '/api/v1/statuses', { status: 'me too' });
  for (const fan of [u.bea, u.cal, u.dora]) await ok(fan, 'POST', `/api/v1/statuses/${finnPost.id}/favourite`);

  await s.ctx.db.query(`UPDATE accounts SET suspended_at = now() WHERE id = $1`, [u.susi.id]);
  await s.ctx.db.query(`UPDATE users SET approved = false WHERE account_id = $1`, [u.pend.id]);
  // An account of another server, known here.
  await s.ctx.db.query(
    `INSERT INTO accounts (username, domain, display_name, uri, discoverable) VALUES ('beau', 'remote.example', 'Beau Remote', 'https://remote.example/users/beau', true)`,
  );
});
afterAll(async () => s?.close());
// The server-wide lists are kept in Redis for minutes; each test sees the world as it is.
beforeEach(async () => { if (s) await forgetGlobalSuggestions(s.ctx); });

describe('GET /api/v2/suggestions', () => {
  it('offers friends of friends (most shared first) and the most followed and most interacted-with local accounts', async () => {
    const list = await suggestions(u.vera);
    const sources = byName(list);
    // dora is followed by two of vera's follows, eve by one.
    expect(sources.dora).toEqual(['friends_of_friends', 'most_followed']);
    expect(sources.eve).toEqual(['friends_of_friends', 'most_followed']);
    expect(list.findIndex((x) => x.account.acct === 'dora')).toBeLessThan(list.findIndex((x) => x.account.acct === 'eve'));
    // gus is followed only by hide, whose follows are hidden: he is not a friend of a friend, only followed.
    expect(sources.gus).toEqual(['most_followed']);
    // Favourited by two and reblogged by one, but followed by nobody.
    expect(sources.star).toEqual(['most_interactions']);
    const star = list.find((x) => x.account.acct === 'star')!;
    expect(star.source).toBe('global');
    expect(list.find((x) => x.account.acct === 'dora')!.source).toBe('past_interactions');
  });

  it('never offers yourself, anyone you follow or asked to follow, suspended, unapproved or undiscoverable accounts', async () => {
    const names = Object.keys(byName(await suggestions(u.vera, '?limit=80')));
    for (const excluded of ['vera', 'bea', 'cal', 'hide', 'lock', 'susi', 'pend', 'finn', 'nope']) expect(names).not.toContain(excluded);
    expect(names.sort()).toEqual(['dora', 'eve', 'gus', 'star']);
    // Someone who follows nobody gets the server-wide lists.
    const fresh = byName(await suggestions(u.newbie));
    expect(fresh.bea).toEqual(['most_followed']);
    expect(fresh.star).toEqual(['most_interactions']);
    expect(Object.keys(fresh)).not.toContain('newbie');
    expect(Object.keys(fresh)).not.toContain('finn');
    // The suggestion goes once followed.
    await follow(u.newbie, u.star);
    expect(Object.keys(byName(await suggestions(u.newbie)))).not.toContain('star');
    await ok(u.newbie, 'POST', `/api/v1/accounts/${u.star.id}/unfollow`);
    expect(Object.keys(byName(await suggestions(u.newbie)))).toContain('star');
  });

  it('bounds limit: 40 by default, at most 80, at least 1', async () => {
    // 85 discoverable accounts of another server, featured.
    await s.ctx.db.query(
      `WITH made AS (
         INSERT INTO accounts (username, domain, uri, discoverable)
         SELECT 'many' || n, 'many.example', 'https://many.example/users/many' || n, true FROM generate_series(1, 85) n
         RETURNING id)
       INSERT INTO featured_suggestions (account_id) SELECT id FROM made`,
    );
    try {
      expect(await suggestions(u.newbie)).toHaveLength(40);
      expect(await suggestions(u.newbie, '?limit=100')).toHaveLength(80);
      expect(await suggestions(u.newbie, '?limit=80')).toHaveLength(80);
      expect(await suggestions(u.newbie, '?limit=3')).toHaveLength(3);
      const v1 = await api(u.newbie, 'GET', '/api/v1/suggestions?limit=1000');
      expect(v1.body).toHaveLength(80);
      for (const bad of ['0', '-1', 'many']) {
        const res = await api(u.newbie, 'GET', `/api/v2/suggestions?limit=${bad}`);
        expect(res.status, bad).toBe(422);
        expect(res.body.error).toEqual(expect.any(String));
      }
    } finally {
      await s.ctx.db.query(`DELETE FROM accounts WHERE domain = 'many.example'`);
    }
  });
});

describe('GET /api/v1/suggestions', () => {
  it('lists the same accounts, as plain Account entities', async () => {
    const v2 = await suggestions(u.vera);
    const res = await api(u.vera, 'GET', '/api/v1/suggestions');
    expect(res.status).toBe(200);
    for (const account of res.body) expectEntity('Account', account);
    expect(accts(res.body)).toEqual(v2.map((x) => x.account.acct));
    expect(accts((await api(u.vera, 'GET', '/api/v1/suggestions?limit=2')).body)).toEqual(v2.slice(0, 2).map((x) => x.account.acct));
  });
});

describe('featured accounts, through the command line', () => {
  it('suggestions feature/unfeature/list: featured accounts come first, as "featured" (source "staff")', async () => {
    expect(await cli('suggestions', 'list')).toEqual([]);
    expect(await cli('suggestions', 'feature', 'finn')).toEqual(['finn is featured in suggestions']);
    expect(await cli('suggestions', 'feature', 'finn')).toEqual(['finn was already featured']);
    expect(await cli('suggestions', 'feature', 'gus')).toEqual(['gus is featured in suggestions']);
    expect(await cli('suggestions', 'feature', 'lock')).toEqual(['lock is featured in suggestions']);
    expect(await cli('suggestions', 'feature', '@beau@remote.example')).toEqual(['beau@remote.example is featured in suggestions']);
    expect(await cli('suggestions', 'feature', 'nope')).toEqual([
      'nope is featured in suggestions', 'note: nope has opted out of discovery and will not be suggested',
    ]);
    expect(await cli('suggestions', 'feature', 'susi')).toEqual(['susi is featured in suggestions']);
    expect(await cli('suggestions', 'feature', 'pend')).toEqual(['pend is featured in suggestions']);
    expect(await cli('suggestions', 'list')).toEqual([
      'finn', 'gus', 'lock', 'beau@remote.example', 'nope (not suggested: opted out of discovery)', 'susi (not suggested: suspended)',
      'pend (not suggested: not approved)',
    ]);

    const list = await suggestions(u.newbie);
    // finn never opted in to discovery, but the operator chose him (he did not opt out).
    expect(list.slice(0, 4).map((x) => [x.account.acct, x.sources, x.source])).toEqual([
      ['finn', ['featured'], 'staff'],
      ['gus', ['featured', 'most_followed'], 'staff'],
      ['lock', ['featured'], 'staff'],
      ['beau@remote.example', ['featured'], 'staff'],
    ]);
    expect(Object.keys(byName(list))).not.toContain('nope');
    expect(Object.keys(byName(list))).not.toContain('susi');
    expect(Object.keys(byName(list))).not.toContain('pend');
    // vera asked to follow lock: never suggested to her, featured or not.
    expect(Object.keys(byName(await suggestions(u.vera)))).not.toContain('lock');

    expect(await cli('suggestions', 'unfeature', 'finn')).toEqual(['finn is no longer featured']);
    expect(await cli('suggestions', 'unfeature', 'finn')).toEqual(['finn was not featured']);
    for (const name of ['gus', 'lock', 'beau@remote.example', 'nope', 'susi', 'pend']) await cli('suggestions', 'unfeature', name);
    expect(await cli('suggestions', 'list')).toEqual([]);
    expect(Object.keys(byName(await suggestions(u.newbie)))).not.toContain('finn');
  });

  it('refuses unknown accounts and commands', async () => {
    await expect(cli('suggestions', 'feature', 'ghost')).rejects.toThrow(/no account named ghost/);
    await expect(cli('suggestions', 'feature', 'beau@elsewhere.example')).rejects.toThrow(/no account named/);
    await expect(cli('suggestions', 'feature')).rejects.toThrow(/account name is required/);
    await expect(cli('suggestions', 'frobnicate')).rejects.toThrow(/unknown command/);
    await expect(cli('suggestions')).rejects.toThrow(/unknown command/);
    expect(await cli('suggestions', 'list')).toEqual([]);
  });
});

describe('DELETE /api/v1/suggestions/:account_id', () => {
  it('hides an account from that user for good, and only from them', async () => {
    expect(Object.keys(byName(await suggestions(u.vera)))).toContain('dora');
    const res = await api(u.vera, 'DELETE', `/api/v1/suggestions/${u.dora.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(Object.keys(byName(await suggestions(u.vera)))).not.toContain('dora');
    expect(accts((await api(u.vera, 'GET', '/api/v1/suggestions')).body)).not.toContain('dora');
    // Again is fine; others still see dora; featuring her does not bring her back for vera.
    expect((await api(u.vera, 'DELETE', `/api/v1/suggestions/${u.dora.id}`)).status).toBe(200);
    expect(Object.keys(byName(await suggestions(u.newbie)))).toContain('dora');
    await cli('suggestions', 'feature', 'dora');
    try {
      expect(Object.keys(byName(await suggestions(u.vera)))).not.toContain('dora');
      expect(byName(await suggestions(u.newbie)).dora).toEqual(['featured', 'most_followed']);
    } finally {
      await cli('suggestions', 'unfeature', 'dora');
    }
  });

  it('answers 404 for an account that does not exist', async () => {
    for (const id of ['123456789', 'nope', '99999999999999999999']) {
      const res = await api(u.vera, 'DELETE', `/api/v1/suggestions/${id}`);
      expect(res.status, id).toBe(404);
      expect(res.body).toEqual({ error: 'Record not found' });
    }
  });
});

describe('scopes', () => {
  it('read or read:accounts to list, write or write:accounts to dismiss, and a user', async () => {
    const client = await createApp(s.app);
    const token = (scope: string) => authorizationCodeToken(s.app, client, u.eve.email, u.eve.password, scope);
    const [readAccounts, writeAccounts, readStatuses, read] = await Promise.all([
      token('read:accounts'), token('write:accounts'), token('read:statuses'), token('read'),
    ]);
    for (const path of ['/api/v2/suggestions', '/api/v1/suggestions', '/api/v1/accounts/search?q=bea']) {
      expect((await api(readAccounts, 'GET', path)).status, path).toBe(200);
      expect((await api(read, 'GET', path)).status, path).toBe(200);
      for (const t of [writeAccounts, readStatuses]) {
        const res = await api(t, 'GET', path);
        expect(res.status, path).toBe(403);
        expect(res.body).toEqual({ error: 'This action is outside the authorized scopes' });
      }
      const anonymous = await api(null, 'GET', path);
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.body).toEqual({ error: 'The access token is invalid' });
    }
    expect((await api(read, 'DELETE', `/api/v1/suggestions/${u.gus.id}`)).status).toBe(403);
    expect((await api(readAccounts, 'DELETE', `/api/v1/suggestions/${u.gus.id}`)).status).toBe(403);
    expect((await api(null, 'DELETE', `/api/v1/suggestions/${u.gus.id}`)).status).toBe(401);
    expect((await api(writeAccounts, 'DELETE', `/api/v1/suggestions/${u.gus.id}`)).status).toBe(200);
    expect(Object.keys(byName(await suggestions(u.eve)))).not.toContain('gus');

    // An app's own token is not a user.
    const appToken = await s.app.inject({
      method: 'POST', url: '/oauth/token',
      payload: { grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, scope: 'read write' },
    });
    for (const [method, path] of [['GET', '/api/v2/suggestions'], ['DELETE', `/api/v1/suggestions/${u.gus.id}`], ['GET', '/api/v1/accounts/search?q=a']] as const) {
      const res = await api(appToken.json().access_token, method, path);
      expect(res.status, path).toBe(422);
      expect(res.body).toEqual({ error: 'This method requires an authenticated user' });
    }
  });
});

describe('GET /api/v1/accounts/search', () => {
  const search = async (user: TestUser, query: string) => {
    const res = await api(user, 'GET', `/api/v1/accounts/search?${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    for (const account of res.body) expectEntity('Account', account);
    return accts(res.body);
  };

  it('finds accounts by username prefix, exact username first, local and remote', async () => {
    expect(await search(u.newbie, 'q=bea')).toEqual(['bea', 'beau@remote.example']);
    expect(await search(u.newbie, 'q=BEA')).toEqual(['bea', 'beau@remote.example']);
    expect(await search(u.newbie, 'q=%40beau')).toEqual(['beau@remote.example']);
    expect(await search(u.newbie, 'q=beau%40')).toEqual(['beau@remote.example']);
    expect(await search(u.newbie, 'q=zzz')).toEqual([]);
  });

  it('finds accounts by words of their display names', async () => {
    // dora has more followers (cal, bea, gus) than bea (vera, cal).
    expect(await search(u.newbie, 'q=quill')).toEqual(['dora', 'bea']);
    expect(await search(u.newbie, 'q=Qui')).toEqual(['dora', 'bea']);
    expect(await search(u.newbie, 'q=smi')).toEqual(['dora']);
    expect(await search(u.newbie, `q=${encodeURIComponent('dora quill')}`)).toEqual(['dora']);
    expect(await search(u.newbie, `q=${encodeURIComponent('Beatrice Q')}`)).toEqual(['bea']);
    expect(await search(u.newbie, `q=${encodeURIComponent('remote beau')}`)).toEqual(['beau@remote.example']);
    expect(await search(u.newbie, `q=${encodeURIComponent("quill' & !(:*")}`)).toEqual(['dora', 'bea']);
  });

  it('ranks accounts you follow first, and following=true keeps only them', async () => {
    expect(await search(u.vera, 'q=quill')).toEqual(['bea', 'dora']);
    expect(await search(u.vera, 'q=quill&following=true')).toEqual(['bea']);
    expect(await search(u.vera, 'q=bea&following=true')).toEqual(['bea']);
    expect(await search(u.newbie, 'q=quill&following=true')).toEqual([]);
    expect(await search(u.vera, 'q=beau%40remote.example&following=true')).toEqual([]);
  });

  it('finds handles: user@domain exactly first, this server\'s domain meaning local, a domain prefix', async () => {
    expect(await search(u.newbie, `q=bea%40${s.domain}`)).toEqual(['bea']);
    expect(await search(u.newbie, `q=%40bea%40${s.domain}`)).toEqual(['bea']);
    expect(await search(u.newbie, 'q=beau%40remote.example')).toEqual(['beau@remote.example']);
    expect(await search(u.newbie, 'q=bea%40remote.example')).toEqual(['beau@remote.example']);
    expect(await search(u.newbie, 'q=beau%40rem')).toEqual(['beau@remote.example']);
    expect(await search(u.newbie, 'q=beau%40elsewhere.example')).toEqual([]);
  });

  it('leaves out suspended and unapproved accounts', async () => {
    expect(await search(u.newbie, 'q=susi')).toEqual([]);
    expect(await search(u.newbie, 'q=pend')).toEqual([]);
    expect(await search(u.newbie, `q=susi%40${s.domain}`)).toEqual([]);
    expect(await search(u.newbie, `q=pend%40${s.domain}`)).toEqual([]);
  });

  it('pages with limit and offset; a blank query finds nothing; bad input is a 422', async () => {
    expect(await search(u.newbie, 'q=quill&limit=1')).toEqual(['dora']);
    expect(await search(u.newbie, 'q=quill&limit=1&offset=1')).toEqual(['bea']);
    expect(await search(u.newbie, 'q=quill&offset=2')).toEqual([]);
    expect(await search(u.newbie, `q=bea%40${s.domain}&limit=1`)).toEqual(['bea']);
    expect(await search(u.newbie, 'q=')).toEqual([]);
    expect(await search(u.newbie, 'q=%20%20')).toEqual([]);
    expect(await search(u.newbie, '')).toEqual([]);
    expect((await search(u.newbie, 'q=e&limit=500')).length).toBeLessThanOrEqual(80);
    for (const bad of ['q=a&limit=0', 'q=a&offset=-1', 'q=a&following=maybe', 'q=a&resolve=perhaps', `q=${'x'.repeat(501)}`]) {
      const res = await api(u.newbie, 'GET', `/api/v1/accounts/search?${bad}`);
      expect(res.status, bad).toBe(422);
      expect(res.body.error).toEqual(expect.any(String));
    }
  });
});

describe('GET /api/v1/accounts/search with resolve=true', () => {
  let other: Instance;
  beforeAll(async () => {
    // In secure mode: it answers only signed fetches, and keeps whoever signed them.
    other = await startHttpsInstance({ AUTHORIZED_FETCH: 'true' });
    await registerUser(other.app, await createApp(other.app), 'omar');
  });
  afterAll(async () => other?.close());

  it('looks up user@domain of another server by WebFinger, signing as the searcher', async () => {
    const handle = encodeURIComponent(`omar@${other.domain}`);
    expect((await api(u.vera, 'GET', `/api/v1/accounts/search?q=${handle}`)).body).toEqual([]);
    const res = await api(u.vera, 'GET', `/api/v1/accounts/search?q=${handle}&resolve=true`);
    expect(res.status).toBe(200);
    expect(accts(res.body)).toEqual([`omar@${other.domain}`]);
    expectEntity('Account', res.body[0]);
    // The other server met vera through her signature.
    const { rows } = await other.ctx.db.query(`SELECT 1 FROM accounts WHERE username = 'vera' AND domain = $1`, [s.domain]);
    expect(rows).toHaveLength(1);
    // Now known: found without resolving, by prefix too.
    expect(accts((await api(u.vera, 'GET', `/api/v1/accounts/search?q=oma%40${other.domain}`)).body)).toEqual([`omar@${other.domain}`]);
    // following=true: resolved, but vera does not follow omar.
    expect((await api(u.vera, 'GET', `/api/v1/accounts/search?q=${handle}&resolve=true&following=true`)).body).toEqual([]);
    // Nobody there: nothing, not an error.
    const missing = await api(u.vera, 'GET', `/api/v1/accounts/search?q=${encodeURIComponent(`nobody@${other.domain}`)}&resolve=true`);
    expect(missing.status).toBe(200);
    expect(missing.body).toEqual([]);
  });
});
