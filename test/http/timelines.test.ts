import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RedisClient } from '../../storage/redis.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { deleteKeysWithPrefix } from '../../storage/redis.ts';
import { renderStatus, renderStatusJson, renderStatusListJson } from '../../http/serializers/status.ts';
import { loadForViewer } from '../../http/serializers/statuses.ts';
import { cachedHomePage } from '../../http/home-timeline.ts';
import { createContext, closeContext } from '../../server.ts';
import { buildApp } from '../../http/app.ts';
import type { AppContext } from '../../context.ts';
import type { KeyTracking } from '../../storage/key-tracking.ts';
import sharp from 'sharp';
import { addLocalEmoji, setLocalEmojiEnabled } from '../../services/custom-emojis.ts';

let s: TestServer;
let ida: TestUser;
let jon: TestUser;
let kay: TestUser;
let lee: TestUser; // posts 100 statuses, read by no one else

beforeAll(async () => {
  s = await startTestServer();
  [ida, jon, kay, lee] = await registerUsers(s.app, 'ida', 'jon', 'kay', 'lee');
});
afterAll(async () => s?.close());

const post = async (user: TestUser, payload: object) => {
  const res = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(user.token), payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string };
};
const get = (url: string, user?: TestUser) => s.app.inject({ method: 'GET', url, headers: user ? bearer(user.token) : {} });
const ids = (res: { json(): unknown }) => (res.json() as { id: string }[]).map((x) => x.id);

/** Fan-out runs in a job: wait until the outbox is drained. */
async function fannedOut() {
  for (let i = 0; i < 200; i++) {
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM outbox');
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('fan-out did not finish');
}

function link(res: { headers: Record<string, unknown> }, rel: 'next' | 'prev'): string | undefined {
  const m = new RegExp(`<([^>]+)>; rel="${rel}"`).exec(String(res.headers.link ?? ''));
  return m ? new URL(m[1]!).pathname + new URL(m[1]!).search : undefined;
}

describe('home timeline', () => {
  it('shows own statuses and those of followed accounts, newest first, through fan-out', async () => {
    expect((await get('/api/v1/timelines/home', ida)).json()).toEqual([]); // builds ida's feed
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${jon.id}/follow`, headers: bearer(ida.token) });
    const a = await post(jon, { status: 'from jon' });
    const b = await post(kay, { status: 'from kay, not followed' });
    const c = await post(ida, { status: 'from ida' });
    const d = await post(jon, { status: 'jon, followers only', visibility: 'private' });
    await fannedOut();
    const home = await get('/api/v1/timelines/home', ida);
    expect(home.statusCode).toBe(200);
    for (const st of home.json()) expectEntity('Status', st);
    expect(ids(home)).toEqual([d.id, c.id, a.id]);
    expect(ids(home)).not.toContain(b.id);
  });

  it('reaches each follower\'s feed through that follower\'s actor', async () => {
    // Every message to an actor goes through the registry's `send` (ask and fan-out's batches alike).
    const asked = vi.spyOn(s.ctx.actors as unknown as { send: (...args: unknown[]) => void }, 'send');
    try {
      const st = await post(jon, { status: 'through the actors' });
      await fannedOut();
      expect(asked).toHaveBeenCalledWith(ida.id, { type: 'addToHomeFeed', statusIds: [st.id], accepting: true }, expect.any(Function));
      expect(ids(await get('/api/v1/timelines/home', ida))).toContain(st.id);
    } finally {
      asked.mockRestore();
    }
  });

  it('rebuilds a feed lost with Redis from PostgreSQL', async () => {
    const before = ids(await get('/api/v1/timelines/home', ida));
    await deleteKeysWithPrefix(s.ctx.redis, `${s.config.redisPrefix}feed:`);
    expect(ids(await get('/api/v1/timelines/home', ida))).toEqual(before);
  });

  it('adds recent statuses on follow and removes them on unfollow', async () => {
    const k = await post(kay, { status: 'kay again' });
    await fannedOut();
    expect(ids(await get('/api/v1/timelines/home', ida))).not.toContain(k.id);
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${kay.id}/follow`, headers: bearer(ida.token) });
    expect(ids(await get('/api/v1/timelines/home', ida))).toContain(k.id);
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${kay.id}/unfollow`, headers: bearer(ida.token) });
    expect(ids(await get('/api/v1/timelines/home', ida))).not.toContain(k.id);
  });

  it('shows reblogs of followed accounts and removes deleted statuses', async () => {
    const k = await post(kay, { status: 'worth a boost' });
    const boost = await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${k.id}/reblog`, headers: bearer(jon.token) });
    await fannedOut();
    const home = (await get('/api/v1/timelines/home', ida)).json();
    expect(home[0].id).toBe(boost.json().id);
    expect(home[0].reblog.id).toBe(k.id);
    await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${k.id}`, headers: bearer(kay.token) });
    await fannedOut();
    expect(ids(await get('/api/v1/timelines/home', ida))).not.toContain(boost.json().id);
    const { rows } = await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses WHERE id = $1 AND deleted_at IS NOT NULL', [boost.json().id]);
    expect(rows[0].n).toBe(1);
  });

  it('walks 100 statuses page by page forward and back by Link headers, each once, newest first', async () => {
    await get('/api/v1/timelines/home', lee);
    const posted: string[] = [];
    // Posted five at a time: within a batch the server orders them by id (the time each was made); across batches,
    // each batch's ids are all greater than the last one's.
    const byId = (x: string, y: string) => (BigInt(x) < BigInt(y) ? -1 : 1);
    for (let i = 0; i < 100; i += 5) {
      const batch = (await Promise.all([0, 1, 2, 3, 4].map((j) => post(lee, { status: `number ${i + j}` })))).map((x) => x.id).sort(byId);
      if (posted.length > 0) expect(byId(posted.at(-1)!, batch[0]!)).toBe(-1);
      posted.push(...batch);
    }
    const newestFirst = [...posted].reverse();

    const seen: string[] = [];
    const pages: string[] = [];
    let url: string | undefined = '/api/v1/timelines/home?limit=15';
    while (url) {
      const res = await get(url, lee);
      const page = ids(res);
      if (page.length === 0) break;
      pages.push(url);
      seen.push(...page);
      url = link(res, 'next');
    }
    expect(seen).toEqual(newestFirst);

    const back: string[][] = [];
    let prev: string | undefined = pages.at(-1);
    while (prev) {
      const res = await get(prev, lee);
      const page = ids(res);
      if (page.length === 0) break;
      back.unshift(page);
      prev = link(res, 'prev');
    }
    expect(back.flat()).toEqual(newestFirst);

    // min_id pages forward from an id, still newest first; since_id gives the newest after an id.
    const minPage = ids(await get(`/api/v1/timelines/home?min_id=${posted[10]}&limit=5`, lee));
    expect(minPage).toEqual(posted.slice(11, 16).reverse());
    const sincePage = ids(await get(`/api/v1/timelines/home?since_id=${posted[10]}&limit=5`, lee));
    expect(sincePage).toEqual(newestFirst.slice(0, 5));
    const account = ids(await get(`/api/v1/accounts/${lee.id}/statuses?limit=40&max_id=${posted[50]}`));
    expect(account).toEqual(posted.slice(10, 50).reverse());
  });

  it('refuses out-of-range paging and anonymous readers', async () => {
    for (const q of ['limit=0', 'limit=-5', 'limit=many']) {
      const res = await get(`/api/v1/timelines/home?${q}`, ida);
      expect(res.statusCode, q).toBe(422);
    }
    expect((await get('/api/v1/timelines/home?limit=1000', ida)).json().length).toBeLessThanOrEqual(40);
    expect((await get('/api/v1/timelines/home')).statusCode).toBe(401);
  });
});

describe('timeline rendering', () => {
  it('sends the same entities from cached JSON pieces as the object renderer builds', async () => {
    const st = await post(kay, { status: 'render me @ida #same' });
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/reblog`, headers: bearer(jon.token) });
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(ida.token) });
    await fannedOut();
    const ids = (await s.ctx.feeds.page(ida.id, { limit: 40 })).ids ?? [];
    for (const viewer of [ida.id, kay.id, null]) {
      for (let round = 0; round < 2; round++) { // the second round comes from the caches
        const { rows, bundle } = await s.ctx.statusLoader.load(viewer, ids);
        expect(rows.length).toBeGreaterThan(0);
        for (const row of rows) {
          expect(JSON.parse(Buffer.concat(renderStatusJson(s.ctx.render, bundle, row)).toString())).toEqual(JSON.parse(JSON.stringify(renderStatus(s.ctx.render, bundle, row))));
        }
      }
    }
    const home = await get('/api/v1/timelines/home', ida);
    expect(home.headers['content-type']).toBe('application/json; charset=utf-8');
    const boosted = home.json().find((x: { reblog: { id: string } | null }) => x.reblog?.id === st.id);
    expect(boosted.reblog).toMatchObject({ favourited: true, favourites_count: 1, reblogs_count: 1 });
    for (const x of home.json()) expectEntity('Status', x);
  });
});

describe('rendered home pages', () => {
  // The same page is read before and after each change: a page served again from the page cache must show it.
  it('show every change to what they contain at once: counts, own flags, profiles, deletions, new statuses', async () => {
    const find = async (id: string) => {
      const res = await get('/api/v1/timelines/home?limit=5', ida);
      expect(res.statusCode).toBe(200);
      return (res.json() as { id: string; favourited: boolean; favourites_count: number; reblogs_count: number; account: { display_name: string }; content: string }[]).find((x) => x.id === id);
    };
    const st = await post(jon, { status: 'cache me' });
    await fannedOut();
    expect(await find(st.id)).toMatchObject({ favourited: false, favourites_count: 0 });
    expect(await find(st.id)).toMatchObject({ favourited: false, favourites_count: 0 }); // from the cache

    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(ida.token) });
    expect(await find(st.id)).toMatchObject({ favourited: true, favourites_count: 1 });
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(kay.token) });
    expect(await find(st.id)).toMatchObject({ favourited: true, favourites_count: 2 });
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/unfavourite`, headers: bearer(ida.token) });
    expect(await find(st.id)).toMatchObject({ favourited: false, favourites_count: 1 });
    await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/reblog`, headers: bearer(kay.token) });
    expect(await find(st.id)).toMatchObject({ reblogs_count: 1 });

    const renamed = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(jon.token), payload: { display_name: 'Jon Renamed' } });
    expect(renamed.statusCode).toBe(200);
    expect((await find(st.id))?.account.display_name).toBe('Jon Renamed');

    const newer = await post(jon, { status: 'newer' });
    await fannedOut();
    expect(await find(newer.id)).toBeDefined();

    await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${newer.id}`, headers: bearer(jon.token) });
    expect(await find(newer.id)).toBeUndefined();
    expect(await find(st.id)).toBeDefined();

    // Another viewer's page of the same statuses is their own: kay's favourite flag, not ida's.
    await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${jon.id}/follow`, headers: bearer(kay.token) });
    const kays = (await get('/api/v1/timelines/home?limit=40', kay)).json() as { id: string; favourited: boolean }[];
    expect(kays.find((x) => x.id === st.id)).toMatchObject({ favourited: true });
  });

  it('asked for many times at once after a change, are rendered once, and each answer shows the change', async () => {
    const st = await post(jon, { status: 'asked for together' });
    await fannedOut();
    const misses = s.ctx.homePages.misses;
    const answers = await Promise.all(Array.from({ length: 8 }, () => get('/api/v1/timelines/home?limit=7', ida)));
    for (const res of answers) {
      expect(res.statusCode).toBe(200);
      expect((res.json() as { id: string }[])[0]?.id).toBe(st.id);
    }
    expect(s.ctx.homePages.misses - misses).toBe(1);
    // A change while they wait is shown too: the page rendered for the first is checked before it is given to the rest.
    const edited = await s.app.inject({ method: 'PUT', url: `/api/v1/statuses/${st.id}`, headers: bearer(jon.token), payload: { status: 'asked for together, edited' } });
    expect(edited.statusCode).toBe(200);
    const again = await Promise.all(Array.from({ length: 4 }, () => get('/api/v1/timelines/home?limit=7', ida)));
    for (const res of again) expect((res.json() as { content: string }[])[0]?.content).toContain('edited');
  });

  it('asked for while one rendering runs and changed under it, are answered by one more rendering, not one each', async () => {
    const st = await post(jon, { status: 'changed while rendered' });
    await fannedOut();
    const idaId = (await get('/api/v1/accounts/verify_credentials', ida)).json().id as string;
    const key = `herd-test/${idaId}`;
    const renders: string[] = [];
    let firstReadDone!: () => void;
    const firstRead = new Promise<void>((r) => { firstReadDone = r; });
    const render = async (ids: string[]) => {
      const { rows, bundle, versions, notAfter } = await loadForViewer(s.ctx, idaId, ids, 'home');
      renders.push(rows[0]?.content ?? '');
      if (renders.length === 1) {
        // The first rendering has read the feed and its statuses; the post is edited before it ends.
        firstReadDone();
        const edited = await s.app.inject({ method: 'PUT', url: `/api/v1/statuses/${st.id}`, headers: bearer(jon.token), payload: { status: 'changed while rendered, edited' } });
        expect(edited.statusCode).toBe(200);
      }
      return { body: renderStatusListJson(s.ctx.render, bundle, rows), versions, notAfter };
    };
    const page = () => cachedHomePage(s.ctx, s.ctx.homePages, key, idaId, { limit: 5 }, render);
    const first = page();
    await firstRead;
    // Eight requests come while the first rendering runs (before the edit is made).
    const waiting = Array.from({ length: 8 }, page);
    const answers = await Promise.all([first, ...waiting]);
    // The first request's page is the one rendered for it; every later one shows the edit, from one more rendering.
    expect(renders).toHaveLength(2);
    expect(renders[1]).toContain('edited');
    for (const answer of answers.slice(1)) expect(JSON.parse(answer.body.toString())[0].content).toContain('edited');
  });

  it('keep the query of the request in their Link headers, less the paging ids', async () => {
    const res = await get('/api/v1/timelines/home?limit=2&max_id=99999999999999999999&foo=a%20b', ida);
    expect(res.statusCode).toBe(200);
    const next = link(res, 'next')!;
    expect(next).toMatch(/^\/api\/v1\/timelines\/home\?limit=2&foo=a%20b&max_id=\d+$/);
    expect(link(res, 'prev')).toMatch(/^\/api\/v1\/timelines\/home\?limit=2&foo=a%20b&min_id=\d+$/);
  });
});

describe('rendered home pages served from memory', () => {
  // A second process on the same PostgreSQL and Redis (its own context: its own caches, connections and client
  // tracking). Pages B served from memory must show what was changed through A as soon as A has answered.
  let b: { app: Awaited<ReturnType<typeof buildApp>>; ctx: AppContext };
  beforeAll(async () => {
    const ctx = await createContext(s.config);
    b = { ctx, app: await buildApp(ctx, { logger: false }) };
    await b.app.ready();
  });
  afterAll(async () => {
    await b?.app.close();
    if (b) await closeContext(b.ctx);
  });

  const homeOnB = async (user: TestUser) => {
    const res = await b.app.inject({ method: 'GET', url: '/api/v1/timelines/home?limit=5', headers: bearer(user.token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { id: string; favourited: boolean; favourites_count: number; account: { display_name: string } }[];
  };

  it('are served again without reading the feed, and show changes made through another process at once', async () => {
    const follow = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${jon.id}/follow`, headers: bearer(ida.token) });
    expect(follow.statusCode).toBe(200);
    const st = await post(jon, { status: 'served from memory' });
    await fannedOut();
    expect((await homeOnB(ida)).find((x) => x.id === st.id)).toMatchObject({ favourites_count: 0 });
    const reads = vi.spyOn(b.ctx.feeds, 'page');
    try {
      for (let i = 0; i < 3; i++) expect((await homeOnB(ida))[0]!.id).toBe(st.id);
      expect(reads).not.toHaveBeenCalled();

      // Each change is made through A; B's next read must show it (no waiting, no retries).
      await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(kay.token) });
      expect((await homeOnB(ida)).find((x) => x.id === st.id)).toMatchObject({ favourited: false, favourites_count: 1 });
      await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(ida.token) });
      expect((await homeOnB(ida)).find((x) => x.id === st.id)).toMatchObject({ favourited: true, favourites_count: 2 });
      await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(jon.token), payload: { display_name: 'Jon Elsewhere' } });
      expect((await homeOnB(ida)).find((x) => x.id === st.id)?.account.display_name).toBe('Jon Elsewhere');
      const own = await post(ida, { status: 'my own, through A' });
      expect((await homeOnB(ida))[0]!.id).toBe(own.id);
      await s.app.inject({ method: 'DELETE', url: `/api/v1/statuses/${own.id}`, headers: bearer(ida.token) });
      expect((await homeOnB(ida))[0]!.id).toBe(st.id);
      expect(reads).toHaveBeenCalled();

      // Once the deletion's jobs are done and the page is read again, it is served from memory again.
      await fannedOut();
      await homeOnB(ida);
      reads.mockClear();
      await homeOnB(ida);
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
  });

  it('with custom emoji are served from memory too, and show an emoji disabled through another process at once', async () => {
    const deps = { db: s.ctx.db, fileHost: s.ctx.fileHost, versions: s.ctx.versions };
    const image = await sharp({ create: { width: 32, height: 32, channels: 4, background: '#f80' } }).png().toBuffer();
    for (const shortcode of ['tl_wave', 'tl_star']) {
      expect((await addLocalEmoji(deps, { shortcode, image, category: null, visibleInPicker: true, overwrite: true })).row).not.toBeNull();
    }
    const follow = await s.app.inject({ method: 'POST', url: `/api/v1/accounts/${jon.id}/follow`, headers: bearer(ida.token) });
    expect(follow.statusCode).toBe(200);
    const st = await post(jon, { status: 'hello :tl_wave: :tl_star:' });
    await fannedOut();
    const shortcodes = async () => ((await homeOnB(ida)).find((x) => x.id === st.id) as unknown as { emojis: { shortcode: string }[] }).emojis.map((e) => e.shortcode).sort();
    expect(await shortcodes()).toEqual(['tl_star', 'tl_wave']);
    const reads = vi.spyOn(b.ctx.feeds, 'page');
    try {
      // Rendered once more (the first read may have come before the page could be tracked), then kept.
      await homeOnB(ida);
      reads.mockClear();
      const tracked = b.ctx.homePages.trackedHits;
      for (let i = 0; i < 3; i++) expect(await shortcodes()).toEqual(['tl_star', 'tl_wave']);
      expect(reads).not.toHaveBeenCalled();
      expect(b.ctx.homePages.trackedHits - tracked).toBe(3);

      expect(await setLocalEmojiEnabled(deps, 'tl_star', false)).not.toBeNull();
      expect(await shortcodes()).toEqual(['tl_wave']);
      expect(reads).toHaveBeenCalled();
      reads.mockClear();
      expect(await shortcodes()).toEqual(['tl_wave']);
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
  });

  it('are checked against Redis while tracking is down, and served from memory again once it is back', async () => {
    const st = await post(jon, { status: 'while tracking is down' });
    await fannedOut();
    await homeOnB(ida);
    const reads = vi.spyOn(b.ctx.feeds, 'page');
    try {
      // Redis drops B's tracking listener: what B holds may have missed a change, so it is not trusted.
      await s.ctx.redis.client('KILL', 'ID', await clientIdOf(s.ctx.redis, b.ctx.tracking));
      await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${st.id}/favourite`, headers: bearer(kay.token) });
      expect((await homeOnB(ida)).find((x) => x.id === st.id)).toMatchObject({ favourites_count: 1 });
      expect(reads).toHaveBeenCalled();
      for (let i = 0; i < 100 && !b.ctx.tracking.active; i++) await new Promise((r) => setTimeout(r, 20));
      expect(b.ctx.tracking.active).toBe(true);
      await homeOnB(ida);
      reads.mockClear();
      await homeOnB(ida);
      expect(reads).not.toHaveBeenCalled();
    } finally {
      reads.mockRestore();
    }
  });
});

/** The Redis client id of a tracking listener: the connection its reader redirects invalidations to. */
async function clientIdOf(admin: RedisClient, tracking: KeyTracking): Promise<string> {
  const readerId = String(await tracking.reader.client('ID'));
  const line = String(await admin.client('LIST', 'ID', readerId));
  return /\bredir=(\d+)/.exec(line)![1]!;
}

describe('public and tag timelines', () => {
  it('shows only public statuses, and tagged ones by tag', async () => {
    const pub = await post(kay, { status: 'all about #Cats' });
    const unl = await post(kay, { status: 'unlisted #cats', visibility: 'unlisted' });
    const res = await get('/api/v1/timelines/public?limit=40');
    expect(res.statusCode).toBe(200);
    expect(ids(res)).toContain(pub.id);
    expect(ids(res)).not.toContain(unl.id);
    for (const st of res.json()) expect(st.visibility).toBe('public');
    expect(ids(await get('/api/v1/timelines/public?local=true&limit=40'))).toContain(pub.id);
    expect(ids(await get('/api/v1/timelines/public?remote=true'))).toEqual([]);
    expect(ids(await get('/api/v1/timelines/tag/cats'))).toEqual([pub.id]);
    expect(ids(await get('/api/v1/timelines/tag/CATS'))).toEqual([pub.id]);
    expect(ids(await get('/api/v1/timelines/tag/dogs'))).toEqual([]);
    expect(ids(await get(`/api/v1/accounts/${kay.id}/statuses?tagged=cats`))).toEqual([unl.id, pub.id]);
  });
});
