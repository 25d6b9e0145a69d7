// GET /api/v2/search finding statuses by their words: PostgreSQL full-text search (storage/search.ts, services/status-search.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { createRestAPIClient } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectEntity } from '../helpers/schema.ts';
import type { Queryable } from '../../storage/db.ts';
import { searchStatusIds, statusSearchQuery, type StatusSearch } from '../../storage/search.ts';
import { updateRemoteStatus } from '../../storage/statuses.ts';
import { updateMediaDetails } from '../../storage/media.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

let s: TestServer & { url: string };
// ida and kay let their posts be found (indexable); jon does not. kay follows jon.
let ida: TestUser;
let jon: TestUser;
let kay: TestUser;

const call = async (user: TestUser | null, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: user ? bearer(user.token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Json };
};
const post = async (user: TestUser, payload: object) => {
  const res = await call(user, 'POST', '/api/v1/statuses', payload);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; url: string };
};
const search = async (user: TestUser | null, q: string, extra = '') => {
  const res = await call(user, 'GET', `/api/v2/search?type=statuses&q=${encodeURIComponent(q)}${extra}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.statuses as Json[]).map((x) => x.id as string);
};

beforeAll(async () => {
  s = await startListeningServer();
  [ida, jon, kay] = await registerUsers(s.app, 'ida', 'jon', 'kay');
  const setUp = await Promise.all([
    ...[ida, kay].map((u) => call(u, 'PATCH', '/api/v1/accounts/update_credentials', { indexable: true })),
    call(kay, 'POST', `/api/v1/accounts/${jon.id}/follow`),
  ]);
  for (const res of setUp) expect(res.status, JSON.stringify(res.body)).toBe(200);
});
afterAll(async () => s?.close());

describe('words', () => {
  it('stems in the status language and the searcher\'s, and also matches words as written', async () => {
    const en = await post(ida, { status: 'She runs along the river every morning', language: 'en' });
    // No language given: the author's locale (en, from registration) stems it.
    const bare = await post(ida, { status: 'The kittens were jumping over fences' });
    const de = await post(ida, { status: 'Die alten Häuser am Hafen', language: 'de' });
    expect(await search(kay, 'running')).toEqual([en.id]);
    expect(await search(kay, 'jump kitten')).toEqual([bare.id]);
    // kay searches in English: the German word matches as written, and stemmed in German with language:de.
    expect(await search(kay, 'häuser')).toEqual([de.id]);
    expect(await search(kay, 'haus language:de')).toEqual([de.id]);
    expect(await search(kay, 'häuser language:en')).toEqual([]);
    // The content warning counts, and HTML does not make words.
    const cw = await post(ida, { status: 'details inside', spoiler_text: 'Marmalade recipe' });
    expect(await search(kay, 'marmalade')).toEqual([cw.id]);
    expect(await search(kay, 'href')).toEqual([]);
  });

  it('honours quoted phrases and -exclusions', async () => {
    const a = await post(ida, { status: 'The quick brown fox', language: 'en' });
    const b = await post(ida, { status: 'A brown and quick fox', language: 'en' });
    expect(await search(kay, 'quick fox')).toEqual([b.id, a.id]);
    expect(await search(kay, '"quick brown"')).toEqual([a.id]);
    expect(await search(kay, 'fox -"quick brown"')).toEqual([b.id]);
    expect(await search(kay, 'fox -and')).toEqual([a.id]);
    expect(await search(kay, '-fox')).toEqual([]); // nothing to look for
  });

  it('filters by from:, account_id, is:, language:, dates and in:', async () => {
    const mine = await post(kay, { status: 'Lighthouse keeper diary', language: 'en' });
    const hers = await post(ida, { status: 'Lighthouse at dusk', language: 'en', sensitive: true });
    const reply = await post(ida, { status: '@kay lighthouse reply', in_reply_to_id: mine.id, language: 'en' });
    expect(await search(kay, 'lighthouse')).toEqual([reply.id, hers.id, mine.id]);
    expect(await search(kay, 'lighthouse from:me')).toEqual([mine.id]);
    expect(await search(kay, 'lighthouse from:ida')).toEqual([reply.id, hers.id]);
    expect(await search(kay, `lighthouse from:@ida@${s.ctx.config.localDomain}`)).toEqual([reply.id, hers.id]);
    expect(await search(kay, 'lighthouse -from:ida')).toEqual([mine.id]);
    expect(await search(kay, 'lighthouse from:nobody@elsewhere.example')).toEqual([]);
    expect(await search(kay, 'from:me')).toEqual(expect.arrayContaining([mine.id]));
    expect(await search(kay, 'lighthouse', `&account_id=${ida.id}`)).toEqual([reply.id, hers.id]);
    expect(await search(kay, 'lighthouse is:reply')).toEqual([reply.id]);
    expect(await search(kay, 'lighthouse -is:reply is:sensitive')).toEqual([hers.id]);
    expect(await search(kay, 'lighthouse language:fr')).toEqual([]);
    expect(await search(kay, 'lighthouse before:2000-01-01')).toEqual([]);
    expect(await search(kay, 'lighthouse after:2000-01')).toHaveLength(3);
    expect(await search(kay, `lighthouse during:${new Date().toISOString().slice(0, 10)}`)).toHaveLength(3);
    expect(await search(kay, 'lighthouse in:library')).toEqual([reply.id, mine.id]); // own, and the reply that mentions kay
    expect(await search(kay, 'lighthouse in:public')).toEqual([reply.id, hers.id, mine.id]);
    for (const bad of ['lighthouse is:bogus', 'lighthouse before:yesterday', 'lighthouse -in:library', 'lighthouse has:link']) {
      const res = await call(kay, 'GET', `/api/v2/search?q=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(422);
      expect(res.body.error).toEqual(expect.any(String));
    }
  });

  it('finds media descriptions, and has:media; edits and deletions reach the index', async () => {
    const image = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#48c' } }).png().toBuffer();
    const form = await multipart({ description: 'A walrus on a rock', file: { data: image, filename: 'w.png', type: 'image/png' } });
    const up = await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(ida.token), ...form.headers }, payload: form.payload });
    expect(up.statusCode, up.body).toBe(202);
    for (let i = 0; i < 200 && (await call(ida, 'GET', `/api/v1/media/${up.json().id}`)).status === 206; i++) await new Promise((r) => setTimeout(r, 25));
    const withMedia = await post(ida, { status: 'Look at this seaside animal', media_ids: [up.json().id] });
    const without = await post(ida, { status: 'No seaside picture today' });
    expect(await search(kay, 'walrus')).toEqual([withMedia.id]);
    expect(await search(kay, 'seaside has:media')).toEqual([withMedia.id]);
    expect(await search(kay, 'seaside -has:media')).toEqual([without.id]);
    expect(await search(kay, 'seaside has:video')).toEqual([]);
    // A description changed after posting (as a status edit will).
    expect(await updateMediaDetails(s.ctx.db, up.json().id, ida.id, { description: 'A seal on a rock' })).not.toBeNull();
    expect(await search(kay, 'walrus')).toEqual([]);
    expect(await search(kay, 'seal')).toEqual([withMedia.id]);
    // An edit (as one arriving from another server) and a deletion.
    await updateRemoteStatus(s.ctx.db, without.id, { content: '<p>No albatross today</p>', spoilerText: '', sensitive: false, editedAt: new Date() });
    expect(await search(kay, 'albatross')).toEqual([without.id]);
    expect((await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${without.id}`, headers: bearer(ida.token) })).statusCode).toBe(200);
    expect(await search(kay, 'albatross')).toEqual([]);
  });

  it("indexes each status (new, edited, with media) as status_search_document makes its document", async () => {
    // The insert trigger computes the document itself (migration 1766300000000); the media triggers and the backfill
    // use status_search_document. Both must give the same words.
    await post(kay, { status: 'Plain words, no language given' });
    await post(kay, { status: 'Ein Satz auf Deutsch', language: 'de', spoiler_text: 'Vorsicht' });
    const { rows } = await s.ctx.db.query<{ n: string; differ: string }>(
      `SELECT count(*)::text AS n,
              count(*) FILTER (WHERE search_vector IS DISTINCT FROM status_search_document(id, account_id, language, content, spoiler_text))::text AS differ
         FROM statuses WHERE reblog_of_id IS NULL`,
    );
    expect(Number(rows[0]!.n)).toBeGreaterThan(8);
    expect(rows[0]!.differ).toBe('0');
  });

  it('pages with limit, offset, max_id and min_id, newest first', async () => {
    const posted: string[] = [];
    for (let i = 0; i < 5; i++) posted.push((await post(ida, { status: `pagination marmot ${i}` })).id);
    const newest = [...posted].reverse();
    expect(await search(kay, 'marmot')).toEqual(newest);
    expect(await search(kay, 'marmot', '&limit=2')).toEqual(newest.slice(0, 2));
    expect(await search(kay, 'marmot', '&limit=2&offset=2')).toEqual(newest.slice(2, 4));
    expect(await search(kay, 'marmot', `&max_id=${newest[1]}`)).toEqual(newest.slice(2));
    expect(await search(kay, 'marmot', `&min_id=${newest[4]}&limit=2`)).toEqual(newest.slice(2, 4));
  });
});

describe('who finds what', () => {
  it("finds one's own posts, public ones of indexable authors, and others only after interacting with them", async () => {
    const secret = await post(jon, { status: 'Secret pineapple plans', visibility: 'private' });
    const direct = await post(jon, { status: '@ida direct pineapple note', visibility: 'direct' });
    const open = await post(jon, { status: 'Public pineapple, but jon is not indexable' });
    // jon finds everything of his own.
    expect(await search(jon, 'pineapple')).toEqual([open.id, direct.id, secret.id]);
    // ida: a stranger to the private post, mentioned in the direct one; jon's public post is not indexable.
    expect(await search(ida, 'pineapple')).toEqual([direct.id]);
    // kay follows jon, and may see the private post, but finds it only once she has interacted with it.
    expect(await search(kay, 'pineapple')).toEqual([]);
    expect((await call(kay, 'POST', `/api/v1/statuses/${secret.id}/favourite`)).status).toBe(200);
    expect((await call(kay, 'POST', `/api/v1/statuses/${open.id}/reblog`)).status).toBe(200);
    expect(await search(kay, 'pineapple')).toEqual([open.id, secret.id]);
    // Having favourited it no longer counts once she stops following: what she may see is checked again.
    expect((await call(kay, 'POST', `/api/v1/accounts/${jon.id}/unfollow`)).status).toBe(200);
    expect(await search(kay, 'pineapple')).toEqual([open.id]);
    // Once jon is indexable, his public post is found by anyone signed in.
    expect((await call(jon, 'PATCH', '/api/v1/accounts/update_credentials', { indexable: true })).status).toBe(200);
    expect(await search(ida, 'pineapple')).toEqual([open.id, direct.id]);
  });

  it('gives anonymous callers no statuses for words, and leaves #tags and handles to the other searches', async () => {
    await post(ida, { status: 'Gooseberry jam #preserves' });
    expect(await search(null, 'gooseberry')).toEqual([]);
    expect(await search(kay, '#preserves')).toEqual([]);
    const all = await call(kay, 'GET', '/api/v2/search?q=%23preserves');
    expect(all.body.hashtags.map((t: Json) => t.name)).toEqual(['preserves']);
    expect(all.body.statuses).toEqual([]);
    const both = await call(kay, 'GET', '/api/v2/search?q=ida');
    expectEntity('Search', both.body);
    expect(both.body.accounts.map((a: Json) => a.acct)).toEqual(['ida']);
  });

  it('through masto: Status entities as Mastodon describes them', async () => {
    const masto = createRestAPIClient({ url: s.url, accessToken: kay.token });
    const mine = await masto.v1.statuses.create({ status: 'Searching with masto for quinces', language: 'en' });
    const found = await masto.v2.search.list({ q: 'quince', type: 'statuses' });
    expect(found.statuses.map((x) => x.id)).toEqual([mine.id]);
    expect(found.statuses[0]).toMatchObject({ account: { acct: 'kay' }, language: 'en', visibility: 'public' });
    // masto hands entities back camelCased: the same answer, as sent, against Mastodon's schema.
    const raw = await call(kay, 'GET', '/api/v2/search?q=quince&type=statuses');
    expectEntity('Search', raw.body);
    expect(raw.body.statuses.map((x: Json) => x.id)).toEqual([mine.id]);
    for (const st of raw.body.statuses) expectEntity('Status', st);
  });
});

const WORDS = ['apple', 'river', 'garden', 'winter', 'music', 'coffee', 'bicycle', 'mountain', 'library', 'window',
  'sunset', 'harbor', 'thunder', 'pepper', 'violin', 'meadow', 'castle', 'pencil', 'rocket', 'forest'];

/** n statuses by one author in a single INSERT … SELECT (the trigger indexes each row as it goes in), then ANALYZE. */
async function seedStatuses(db: Queryable, accountId: string, n: number): Promise<void> {
  await db.query(
    `INSERT INTO statuses (account_id, content, visibility, language, created_at)
     SELECT $1, '<p>seeded post ' || i || ' about the ' || ($3::text[])[1 + i % 20] || ' and a ' || ($3::text[])[1 + (i * 7) % 23 % 20]
                || CASE WHEN i % 2500 = 1 THEN ' zanzibar' ELSE '' END || '</p>',
            CASE WHEN i % 10 = 0 THEN 'private' ELSE 'public' END, 'en', now() - i * interval '1 second'
       FROM generate_series(1, $2::int) AS i`,
    [accountId, n, WORDS],
  );
  await db.query('ANALYZE statuses');
}

function planNodes(plan: Json): Json[] {
  return [plan, ...((plan.Plans as Json[] | undefined) ?? []).flatMap(planNodes)];
}

describe('with 10,000 statuses', () => {
  it('answers from the GIN index, and quickly', async () => {
    const [bulk] = await registerUsers(s.app, 'bulk');
    await call(bulk, 'PATCH', '/api/v1/accounts/update_credentials', { indexable: true });
    await seedStatuses(s.ctx.db, bulk.id, 10_000);

    const query = (words: string[]): StatusSearch => ({
      viewerId: kay.id, language: 'en', words, phrases: [], excludedWords: [], excludedPhrases: [], scope: 'all', filters: [], page: { limit: 20 }, offset: 0,
    });
    const explain = async (words: string[]) => {
      const { text, values } = statusSearchQuery(query(words));
      const { rows } = await s.ctx.db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
      return planNodes(rows[0]['QUERY PLAN'][0].Plan);
    };
    for (const words of [['zanzibar'], ['violin', 'castles']]) {
      const nodes = await explain(words);
      expect(nodes.map((n) => n['Index Name']), words.join(' ')).toContain('statuses_search');
      expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'statuses'), words.join(' ')).toEqual([]);
    }
    // A word in every post: the public statuses are walked newest first until enough match, never scanned whole.
    const common = await explain(['seeded']);
    expect(common.map((n) => n['Index Name'])).toContain('statuses_public');
    expect(common.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'statuses')).toEqual([]);

    expect(await searchStatusIds(s.ctx.db, query(['zanzibar']))).toHaveLength(4);
    const timings: string[] = [];
    for (const words of [['zanzibar'], ['violin', 'castles'], ['music'], ['seeded']]) {
      const ms: number[] = [];
      for (let i = 0; i < 25; i++) {
        const t0 = performance.now();
        await searchStatusIds(s.ctx.db, query(words));
        ms.push(performance.now() - t0);
      }
      ms.sort((a, b) => a - b);
      timings.push(`"${words.join(' ')}" median ${ms[12]!.toFixed(2)} ms, max ${ms[24]!.toFixed(2)} ms`);
    }
    const t0 = performance.now();
    expect(await search(kay, 'music', '&limit=40')).toHaveLength(40);
    timings.push(`HTTP "music" (40 rendered) ${(performance.now() - t0).toFixed(1)} ms`);
    console.log(`status search over 10,000 statuses: ${timings.join('; ')}`);
  });
});

describe('accounts in /api/v2/search', () => {
  it('finds accounts by display-name words for a signed-in person, and only followed ones with following', async () => {
    const [ned, ozzy, pam] = await registerUsers(s.app, 'ned', 'ozzy', 'pam');
    expect((await call(ozzy, 'PATCH', '/api/v1/accounts/update_credentials', { display_name: 'Ozymandias Fernwood' })).status).toBe(200);
    expect((await call(pam, 'PATCH', '/api/v1/accounts/update_credentials', { display_name: 'Fernwood Pam' })).status).toBe(200);
    expect((await call(ned, 'POST', `/api/v1/accounts/${ozzy.id}/follow`)).status).toBe(200);
    const accounts = async (user: TestUser | null, q: string, extra = '') =>
      ((await call(user, 'GET', `/api/v2/search?type=accounts&q=${encodeURIComponent(q)}${extra}`)).body.accounts as Json[]).map((a) => a.username as string);
    expect((await accounts(ned, 'fernwood')).sort()).toEqual(['ozzy', 'pam']);
    expect(await accounts(ned, 'fernwood', '&following=true')).toEqual(['ozzy']);
    expect(await accounts(ned, 'ozyman')).toEqual(['ozzy']);
    // Without signing in, handles and username prefixes only, as before.
    expect(await accounts(null, 'fernwood')).toEqual([]);
    expect(await accounts(null, 'oz')).toEqual(['ozzy']);
  });
});
