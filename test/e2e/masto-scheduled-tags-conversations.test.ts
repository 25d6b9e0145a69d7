// Scheduled posts, followed hashtags and direct conversations as a Mastodon app uses them through masto, with raw
// answers checked against the schema, error paths, and a scheduled post published on time across a worker restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { Redis } from 'ioredis';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';
import { loadConfig } from '../../config.ts';
import { streamChannels } from '../../services/stream-events.ts';
import { multipart } from '../helpers/multipart.ts';
import { workSettled } from '../helpers/work-settled.ts';

let s: TestServer & { url: string };
let lia: mastodon.rest.Client;
let max: mastodon.rest.Client;
let ned: mastodon.rest.Client;
const id: Record<string, string> = {};
const token: Record<string, string> = {};

beforeAll(async () => {
  // Posts may be scheduled one second ahead here (Mastodon's five minutes are the default: checked below).
  s = await startListeningServer({ SCHEDULED_STATUS_MIN_DELAY_SECONDS: '1' });
  ({ lia, max, ned } = (await mastoAccounts(s.url, 'masto scheduled', 'lia', 'max', 'ned')) as Record<'lia' | 'max' | 'ned', mastodon.rest.Client>);
  for (const [name, c] of Object.entries({ lia, max, ned })) {
    id[name] = (await c.v1.accounts.verifyCredentials()).id;
    token[name] = tokenOf(c);
  }
  await lia.v1.timelines.home.list(); // lia's home feed exists, so fan-out fills it
});
afterAll(async () => s?.close());

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const raw = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, who: string | undefined, payload?: object) =>
  s.app.inject({ method, url, headers: who ? { authorization: `Bearer ${token[who]}` } : {}, ...(payload ? { payload } : {}) });
const until = async <T>(read: () => PromiseLike<T>, ok: (v: T) => boolean, timeoutMs = 5000) => {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await read();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  return read();
};
/** Waits until the jobs that could still change something have run: no outbox row due (a poll's end far off aside)
 * and no fan-out job due within a minute (test/helpers/work-settled.ts). */
const settled = () => until(() => workSettled(s.ctx, { outbox: 'due' }), (idle) => idle, 10_000);
const inHome = async (who: string, statusId: string) => ((await raw('GET', '/api/v1/timelines/home?limit=40', who)).json() as Json[]).some((st) => st.id === statusId);
const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();

describe('scheduled posts', () => {
  it('schedules a post instead of posting it, lists, shows, moves and cancels it', async () => {
    expect(loadConfig({}).scheduledStatusMinDelaySeconds).toBe(300);
    const later = await lia.v1.statuses.create({ status: 'see you later', visibility: 'unlisted', scheduledAt: ahead(3_600_000) });
    expect(later).toMatchObject({ params: { text: 'see you later', visibility: 'unlisted' } });
    const sid = later.id;
    const res = await raw('GET', `/api/v1/scheduled_statuses/${sid}`, 'lia');
    expectEntity('ScheduledStatus', res.json());
    expect((await lia.v1.scheduledStatuses.list()).map((x) => x.id)).toEqual([sid]);
    expect((await lia.v1.scheduledStatuses.$select(sid).fetch()).params.text).toBe('see you later');

    const moved = await lia.v1.scheduledStatuses.$select(sid).update({ scheduledAt: ahead(7_200_000) });
    expect(Date.parse(moved.scheduledAt) - Date.now()).toBeGreaterThan(7_000_000);
    // Not posted meanwhile, and nobody else's to see.
    expect((await lia.v1.accounts.$select(id.lia!).statuses.list()).map((st) => st.content)).not.toContain('<p>see you later</p>');
    expect((await raw('GET', `/api/v1/scheduled_statuses/${sid}`, 'max')).statusCode).toBe(404);
    expect((await raw('DELETE', `/api/v1/scheduled_statuses/${sid}`, 'max')).statusCode).toBe(404);

    await lia.v1.scheduledStatuses.$select(sid).remove();
    expect(await lia.v1.scheduledStatuses.list()).toEqual([]);
    expect((await raw('GET', `/api/v1/scheduled_statuses/${sid}`, 'lia')).statusCode).toBe(404);
  });

  it('refuses a time too soon, a date that is not one, and a bad poll; a time passed posts now', async () => {
    const soon = await raw('POST', '/api/v1/statuses', 'lia', { status: 'too soon', scheduled_at: ahead(300) });
    expect(soon.statusCode).toBe(422);
    expect(soon.json().error).toMatch(/must be in the future/);
    expect((await raw('POST', '/api/v1/statuses', 'lia', { status: 'when?', scheduled_at: 'next tuesday' })).statusCode).toBe(422);
    const poll = await raw('POST', '/api/v1/statuses', 'lia', { status: 'vote later', scheduled_at: ahead(3_600_000), poll: { options: ['only one'], expires_in: 3600 } });
    expect(poll.statusCode).toBe(422);
    expect(poll.json().error).toMatch(/at least 2 options/);
    expect((await raw('POST', '/api/v1/statuses', 'lia', { status: '', scheduled_at: ahead(3_600_000) })).statusCode).toBe(422);
    expect((await raw('POST', '/api/v1/statuses', 'lia', { status: 'reply', in_reply_to_id: '1', scheduled_at: ahead(3_600_000) })).statusCode).toBe(404);
    const past = await raw('POST', '/api/v1/statuses', 'lia', { status: 'posted at once', scheduled_at: new Date(Date.now() - 60_000).toISOString() });
    expect(past.statusCode).toBe(200);
    expectEntity('Status', past.json());
    expect(await lia.v1.scheduledStatuses.list()).toEqual([]);
    const moveSoon = await lia.v1.statuses.create({ status: 'movable', scheduledAt: ahead(3_600_000) });
    expect((await raw('PUT', `/api/v1/scheduled_statuses/${moveSoon.id}`, 'lia', { scheduled_at: ahead(100) })).statusCode).toBe(422);
    expect((await raw('PUT', `/api/v1/scheduled_statuses/${moveSoon.id}`, 'lia', { scheduled_at: 'soon' })).statusCode).toBe(422);
    await lia.v1.scheduledStatuses.$select(moveSoon.id).remove();
    // Forms and multipart bodies schedule as JSON does.
    const form = await multipart({ status: 'by form', scheduled_at: '2099-01-01T00:00:00Z' });
    const byForm = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: { authorization: `Bearer ${token.lia}`, ...form.headers }, payload: form.payload });
    expect(byForm.json()).toMatchObject({ scheduled_at: '2099-01-01T00:00:00.000Z', params: { text: 'by form' } });
    await lia.v1.scheduledStatuses.$select(byForm.json().id).remove();
  });

  it('allows 25 scheduled posts a day (422 after), pages them with Link', async () => {
    const day = Date.now() + 3 * 86_400_000;
    const at = (i: number) => new Date(Math.floor(day / 86_400_000) * 86_400_000 + 3_600_000 + i * 60_000).toISOString();
    for (let i = 0; i < 25; i++) expect((await raw('POST', '/api/v1/statuses', 'ned', { status: `n${i}`, scheduled_at: at(i) })).statusCode).toBe(200);
    const over = await raw('POST', '/api/v1/statuses', 'ned', { status: 'one too many', scheduled_at: at(30) });
    expect(over.statusCode).toBe(422);
    expect(over.json().error).toMatch(/limit of 25 scheduled posts for today/);
    const page = await raw('GET', '/api/v1/scheduled_statuses?limit=10', 'ned');
    expect(page.json()).toHaveLength(10);
    expect(page.headers.link).toMatch(/max_id=\d+>; rel="next"/);
    let all: mastodon.v1.ScheduledStatus[] = [];
    for await (const p of ned.v1.scheduledStatuses.list({ limit: 10 })) all = all.concat(p);
    expect(all).toHaveLength(25);
    // Another day has room.
    expect((await raw('POST', '/api/v1/statuses', 'ned', { status: 'next day', scheduled_at: new Date(Date.parse(at(0)) + 86_400_000).toISOString() })).statusCode).toBe(200);
  });

  it('holds its media, then publishes on time through a worker stopped and started around that moment, once', async () => {
    const { default: sharp } = await import('sharp');
    const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#36a' } }).jpeg().toBuffer();
    const media = await lia.v2.media.create({ file: new Blob([new Uint8Array(jpeg)], { type: 'image/jpeg' }), description: 'a blue square' });
    const scheduled = await lia.v1.statuses.create({ status: 'on time', mediaIds: [media.id], scheduledAt: ahead(2_000) });
    expect((scheduled as mastodon.v1.ScheduledStatus).mediaAttachments.map((m) => m.id)).toEqual([media.id]);
    // Its media are its own until then.
    const taken = await raw('POST', '/api/v1/statuses', 'lia', { status: 'steal', media_ids: [media.id] });
    expect(taken.statusCode).toBe(422);

    await s.stopWorkers();
    // Moved while no worker runs: its job moves with it.
    const target = Date.now() + 2_000;
    await lia.v1.scheduledStatuses.$select(scheduled.id).update({ scheduledAt: new Date(target).toISOString() });
    await new Promise((r) => setTimeout(r, target + 100 - Date.now()));
    // Its time has passed with no worker: its job is still delayed (a running worker would have taken it at its time).
    const publishJobs = async () => (await s.ctx.jobs.fanout.getJobs(['delayed'])).filter((j) => j?.data.kind === 'publishScheduledStatus' && j.data.scheduledStatusId === scheduled.id);
    expect(await publishJobs()).toHaveLength(1);
    const published = () => lia.v1.accounts.$select(id.lia!).statuses.list().then((l) => l.filter((st) => st.content === '<p>on time</p>'));
    expect(await published()).toEqual([]);
    s.startWorkers();
    const [status] = await until(published, (l) => l.length > 0);
    expect(status).toBeDefined();
    expect(status!.mediaAttachments.map((m) => [m.id, m.description])).toEqual([[media.id, 'a blue square']]);
    // Posted from the app that scheduled it, which its author sees (and everyone, by default).
    expect(status!.application).toEqual({ name: 'masto scheduled', website: null });
    expect(await inHome('lia', status!.id)).toBe(true);
    expect(await lia.v1.scheduledStatuses.list()).toEqual([]);
    // Nothing more comes of the old time's job, nor of the sweeper, once every job due has run.
    await settled();
    expect(await published()).toHaveLength(1);
  });
});

describe('scheduled polls', () => {
  it('keeps a poll with the scheduled post, and it lasts from when the post is published', async () => {
    const res = await raw('POST', '/api/v1/statuses', 'lia', { status: 'vote when it is out', scheduled_at: ahead(1_500), poll: { options: ['yes', 'no'], expires_in: 3600, multiple: true } });
    expect(res.statusCode).toBe(200);
    expectEntity('ScheduledStatus', res.json());
    expect(res.json().params.poll).toEqual({ options: ['yes', 'no'], expires_in: 3600, multiple: true, hide_totals: false });
    const published = () => lia.v1.accounts.$select(id.lia!).statuses.list().then((l) => l.filter((st) => st.content === '<p>vote when it is out</p>'));
    const [status] = await until(published, (l) => l.length > 0);
    expect(status!.poll).toMatchObject({ multiple: true, options: [{ title: 'yes' }, { title: 'no' }] });
    expect(Date.parse(status!.poll!.expiresAt!) - Date.parse(status!.createdAt)).toBeGreaterThan(3_590_000);
  });
});

describe('followed hashtags', () => {
  it('follows and unfollows a tag, shows it with `following` and its history, lists the followed ones', async () => {
    const tag = await lia.v1.tags.$select('Cats').follow();
    expect(tag).toMatchObject({ name: 'cats', following: true });
    expect(tag.history).toHaveLength(7);
    await lia.v1.tags.$select('cats').follow(); // idempotent
    await lia.v1.tags.$select('dogs').follow();
    expectEntity('Tag', (await raw('GET', '/api/v1/tags/cats', 'lia')).json());
    expect((await lia.v1.tags.$select('cats').fetch()).following).toBe(true);
    expect((await max.v1.tags.$select('cats').fetch()).following).toBe(false);
    const anonymous = (await raw('GET', '/api/v1/tags/cats', undefined)).json();
    expectEntity('Tag', anonymous);
    expect(anonymous.following).toBeUndefined();
    expectEntity('Tag', (await raw('GET', '/api/v1/tags/nobodyusedthisyet', 'lia')).json());

    const followed = await raw('GET', '/api/v1/followed_tags?limit=1', 'lia');
    expect(followed.json().map((t: Json) => t.name)).toEqual(['dogs']);
    expect(followed.headers.link).toMatch(/rel="next"/);
    for (const t of followed.json()) expectEntity('Tag', t);
    let names: string[] = [];
    for await (const p of lia.v1.followedTags.list({ limit: 1 })) names = names.concat(p.map((t) => t.name));
    expect(names).toEqual(['dogs', 'cats']);
    // Search results and trends say whether the viewer follows each tag.
    const search = (await raw('GET', '/api/v2/search?q=%23cat&type=hashtags', 'lia')).json();
    expect(search.hashtags.map((t: Json) => [t.name, t.following])).toEqual([['cats', true]]);
    expect((await raw('GET', '/api/v2/search?q=%23cat&type=hashtags', 'max')).json().hashtags[0].following).toBe(false);
    for (const t of (await raw('GET', '/api/v1/trends/tags', 'lia')).json()) expect(typeof t.following).toBe('boolean');
    expect((await lia.v1.tags.$select('dogs').unfollow()).following).toBe(false);
    expect((await lia.v1.followedTags.list()).map((t) => t.name)).toEqual(['cats']);

    expect((await raw('GET', '/api/v1/tags/no-such-tag', 'lia')).statusCode).toBe(404);
    expect((await raw('POST', '/api/v1/tags/123/follow', 'lia')).statusCode).toBe(422);
    expect((await raw('POST', '/api/v1/tags/cats/follow', undefined)).statusCode).toBe(401);
  });

  it("puts public posts with a followed tag in home, not others', and keeps them through a feed rebuild", async () => {
    // lia follows #cats (above) but not max.
    const tagged = await max.v1.statuses.create({ status: 'look at my #Cats' });
    const unlisted = await max.v1.statuses.create({ status: 'quiet #cats', visibility: 'unlisted' });
    const other = await max.v1.statuses.create({ status: 'about #dogs' });
    expect(await until(() => inHome('lia', tagged.id), (v) => v)).toBe(true);
    const marker = await max.v1.statuses.create({ status: 'marker #cats' });
    await until(() => inHome('lia', marker.id), (v) => v);
    expect(await inHome('lia', unlisted.id)).toBe(false);
    expect(await inHome('lia', other.id)).toBe(false);

    // A lost feed is rebuilt from PostgreSQL with them.
    await s.ctx.feeds.drop(id.lia!);
    const home = (await raw('GET', '/api/v1/timelines/home?limit=40', 'lia')).json() as Json[];
    expect(home.map((st) => st.id)).toEqual(expect.arrayContaining([tagged.id, marker.id]));
    expect(home.map((st) => st.id)).not.toContain(unlisted.id);

    // Blocks apply when home is read.
    await lia.v1.accounts.$select(id.max!).block();
    expect(await inHome('lia', tagged.id)).toBe(false);
    await lia.v1.accounts.$select(id.max!).unblock();
  });
});

describe('conversations', () => {
  it('groups direct posts by participants, with unread for recipients, read and removal, and streams them', async () => {
    const sub = new Redis(s.config.redisUrl);
    const events: string[] = [];
    await sub.subscribe(s.ctx.events.channelName(streamChannels.direct(id.max!)));
    sub.on('message', (_c, m) => events.push(m));

    const first = await lia.v1.statuses.create({ status: '@max psst', visibility: 'direct' });
    const maxList = await until(() => max.v1.conversations.list(), (l) => l.length === 1);
    expect(maxList[0]).toMatchObject({ unread: true, lastStatus: { id: first.id } });
    expect(maxList[0]!.accounts.map((a) => a.id)).toEqual([id.lia]);
    const rawList = await raw('GET', '/api/v1/conversations', 'max');
    for (const c of rawList.json()) expectEntity('Conversation', c);
    const liaList = await until(() => lia.v1.conversations.list(), (l) => l.length === 1);
    expect(liaList[0]).toMatchObject({ unread: false, accounts: [{ id: id.max }] });
    await until(async () => events.length, (n) => n > 0);
    expect(JSON.parse(events[0]!)).toEqual({ event: 'conversation', conversationId: maxList[0]!.id });

    const read = await max.v1.conversations.$select(maxList[0]!.id).read();
    expect(read.unread).toBe(false);
    expectEntity('Conversation', (await raw('POST', `/api/v1/conversations/${maxList[0]!.id}/read`, 'max')).json());

    // A reply joins the same conversation; now lia has it unread.
    const reply = await max.v1.statuses.create({ status: '@lia what?', visibility: 'direct', inReplyToId: first.id });
    const liaAgain = await until(() => lia.v1.conversations.list(), (l) => l[0]?.lastStatus?.id === reply.id);
    expect(liaAgain).toHaveLength(1);
    expect(liaAgain[0]).toMatchObject({ id: liaList[0]!.id, unread: true });

    // Another set of participants is another conversation, listed first (newest activity), with Link paging.
    const group = await lia.v1.statuses.create({ status: '@max @ned all of us', visibility: 'direct' });
    const both = await until(() => raw('GET', '/api/v1/conversations?limit=1', 'lia'), (r) => r.json()[0]?.last_status?.id === group.id);
    expect(both.json()[0].accounts.map((a: Json) => a.id).sort()).toEqual([id.max, id.ned].sort());
    expect(both.headers.link).toMatch(new RegExp(`max_id=${group.id}>; rel="next"`));
    expect((await lia.v1.conversations.list()).length).toBe(2);
    expect((await until(() => ned.v1.conversations.list(), (l) => l.length === 1))[0]!.unread).toBe(true);

    // Deleting the last status falls back to the one before; removing the conversation hides it until a new post.
    await max.v1.statuses.$select(reply.id).remove();
    await until(() => lia.v1.conversations.list(), (l) => l.some((c) => c.lastStatus?.id === first.id));
    await lia.v1.conversations.$select(liaList[0]!.id).remove();
    expect((await lia.v1.conversations.list()).map((c) => c.id)).toEqual([expect.any(String)]);
    expect((await raw('DELETE', `/api/v1/conversations/${liaList[0]!.id}`, 'lia')).statusCode).toBe(404);
    expect((await raw('POST', `/api/v1/conversations/${liaList[0]!.id}/read`, 'lia')).statusCode).toBe(404);
    expect((await raw('POST', `/api/v1/conversations/${both.json()[0].id}/read`, 'max')).statusCode).toBe(404);
    expect((await raw('GET', '/api/v1/conversations', undefined)).statusCode).toBe(401);
    // Non-direct posts make no conversation.
    await lia.v1.statuses.create({ status: '@max in public' });
    await settled();
    expect((await lia.v1.conversations.list()).length).toBe(1);
    sub.disconnect();
  });

  it('answers GET /api/v1/timelines/direct as Mastodon since 3.0: not found', async () => {
    const res = await raw('GET', '/api/v1/timelines/direct', 'lia');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toHaveProperty('error');
  });
});
