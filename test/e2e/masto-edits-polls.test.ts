// Edits and polls as a Mastodon app uses them through masto, raw answers checked against Mastodon's schema.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import WebSocket from 'ws';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';

let s: TestServer & { url: string };
let ana: mastodon.rest.Client;
let ben: mastodon.rest.Client;
let cy: mastodon.rest.Client;
const id: Record<string, string> = {};

beforeAll(async () => {
  s = await startListeningServer();
  ({ ana, ben, cy } = (await mastoAccounts(s.url, 'masto edits', 'ana', 'ben', 'cy')) as Record<'ana' | 'ben' | 'cy', mastodon.rest.Client>);
  for (const [name, c] of Object.entries({ ana, ben, cy })) id[name] = (await c.v1.accounts.verifyCredentials()).id;
  await ben.v1.accounts.$select(id.ana!).follow();
  await ben.v1.timelines.home.list();
});
afterAll(async () => s?.close());

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const raw = async (client: mastodon.rest.Client | null, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await s.app.inject({ method, url, headers: client ? { authorization: `Bearer ${tokenOf(client)}` } : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const until = async <T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000) => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
};
const notifications = async (client: mastodon.rest.Client, type: string) => (await raw(client, 'GET', `/api/v1/notifications?types[]=${type}`)).body as Json[];

describe('masto: edits', () => {
  it('edits a status, keeping its history, re-parsing tags and mentions, and notifying those who boosted it', async () => {
    const post = await ana.v1.statuses.create({ status: 'first words #alpha' });
    const plain = await ana.v1.statuses.create({ status: 'never edited' });
    await ben.v1.statuses.$select(post.id).reblog();

    // A never-edited status has one version, itself.
    const once = await raw(ana, 'GET', `/api/v1/statuses/${plain.id}/history`);
    expect(once.status).toBe(200);
    expect(once.body).toHaveLength(1);
    expectEntity('StatusEdit', once.body[0]);
    expect(once.body[0]).toMatchObject({ content: plain.content });

    const edited = await ana.v1.statuses.$select(post.id).update({ status: `second words #beta @cy`, spoilerText: 'cw', language: 'en' });
    expect(edited.editedAt).toEqual(expect.any(String));
    expect(edited.content).toContain('second words');
    expect(edited.spoilerText).toBe('cw');
    expect(edited.sensitive).toBe(true);
    expect(edited.tags.map((t) => t.name)).toEqual(['beta']);
    expect(edited.mentions.map((m) => m.id)).toEqual([id.cy]);
    const rawStatus = await raw(ana, 'GET', `/api/v1/statuses/${post.id}`);
    expectEntity('Status', rawStatus.body);
    expect(rawStatus.body.edited_at).toBe(edited.editedAt);

    const history = await ana.v1.statuses.$select(post.id).history.list();
    expect(history.map((h) => h.content)).toEqual([post.content, edited.content]);
    expect(history[1]!.spoilerText).toBe('cw');
    for (const h of (await raw(null, 'GET', `/api/v1/statuses/${post.id}/history`)).body as Json[]) expectEntity('StatusEdit', h);

    const source = await ana.v1.statuses.$select(post.id).source.fetch();
    expect(source).toEqual({ id: post.id, text: 'second words #beta @cy', spoilerText: 'cw' });
    expectEntity('StatusSource', (await raw(ana, 'GET', `/api/v1/statuses/${post.id}/source`)).body);

    // Tag timelines follow the edit.
    expect((await raw(null, 'GET', '/api/v1/timelines/tag/beta')).body.map((x: Json) => x.id)).toContain(post.id);
    expect((await raw(null, 'GET', '/api/v1/timelines/tag/alpha')).body.map((x: Json) => x.id)).not.toContain(post.id);

    // ben boosted it: an `update` notification; cy, newly mentioned, a `mention`.
    const updates = await until(() => notifications(ben, 'update'), (l) => l.length === 1);
    expect(updates[0]).toMatchObject({ type: 'update', status: { id: post.id }, account: { id: id.ana } });
    expectEntity('Notification', updates[0]);
    expect((await notifications(cy, 'mention')).map((n) => n.status.id)).toContain(post.id);

    // A second edit shows at once (the cached status is replaced) and notifies again.
    await ana.v1.statuses.$select(post.id).update({ status: 'third words' });
    expect((await ben.v1.statuses.$select(post.id).fetch()).content).toContain('third words');
    expect((await ana.v1.statuses.$select(post.id).history.list())).toHaveLength(3);
    expect(await until(() => notifications(ben, 'update'), (l) => l.length === 1 && l[0]!.status.content.includes('third'))).toHaveLength(1);
  });

  it('refuses edits of others\' statuses, and edits that posting would refuse', async () => {
    const post = await ana.v1.statuses.create({ status: 'mine' });
    expect((await raw(ben, 'PUT', `/api/v1/statuses/${post.id}`, { status: 'yours?' })).status).toBe(404);
    expect((await raw(ana, 'PUT', `/api/v1/statuses/${post.id}`, { status: 'x'.repeat(501) })).status).toBe(422);
    expect((await raw(ana, 'PUT', `/api/v1/statuses/${post.id}`, { status: '' })).status).toBe(422);
    expect((await raw(ana, 'PUT', `/api/v1/statuses/${post.id}`, { status: 'five', media_ids: ['1', '2', '3', '4', '5'] })).status).toBe(422);
    expect((await ana.v1.statuses.$select(post.id).history.list())).toHaveLength(1);
    expect((await ana.v1.statuses.$select(post.id).fetch()).editedAt).toBeNull();
  });

  it('changes attachments and their descriptions, the history keeping each version\'s', async () => {
    const { default: sharp } = await import('sharp');
    const image = async (bg: string) => new Blob([new Uint8Array(await sharp({ create: { width: 8, height: 8, channels: 3, background: bg } }).png().toBuffer())], { type: 'image/png' });
    const [one, two] = await Promise.all([ana.v2.media.create({ file: await image('red'), description: 'red square' }), ana.v2.media.create({ file: await image('blue') })]);
    const post = await ana.v1.statuses.create({ status: 'a picture', mediaIds: [one.id] });
    const edited = await ana.v1.statuses.$select(post.id).update({
      status: 'two pictures', mediaIds: [two.id, one.id], mediaAttributes: [{ id: one.id, description: 'a red square', focus: '0.5,-0.5' }, { id: two.id, description: 'blue' }],
    });
    expect(edited.mediaAttachments.map((m) => [m.id, m.description])).toEqual([[two.id, 'blue'], [one.id, 'a red square']]);
    expect(edited.mediaAttachments[1]!.meta?.focus).toEqual({ x: 0.5, y: -0.5 });
    const removed = await ana.v1.statuses.$select(post.id).update({ status: 'no pictures' });
    expect(removed.mediaAttachments).toEqual([]);
    const history = (await raw(ana, 'GET', `/api/v1/statuses/${post.id}/history`)).body as Json[];
    for (const h of history) expectEntity('StatusEdit', h);
    expect(history.map((h) => h.media_attachments.map((m: Json) => m.description))).toEqual([['red square'], ['blue', 'a red square'], []]);
    // Polls and media do not go together.
    expect((await raw(ana, 'PUT', `/api/v1/statuses/${post.id}`, { status: 'both', media_ids: [one.id], poll: { options: ['a', 'b'], expires_in: 600 } })).status).toBe(422);
  });

  it('tells open streams of an edit (status.update)', async () => {
    const post = await ana.v1.statuses.create({ status: 'streamed' });
    const ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/v1/streaming?stream=user`, { headers: { authorization: `Bearer ${tokenOf(ben)}` } });
    const events: Json[] = [];
    ws.on('message', (data) => events.push(JSON.parse(String(data))));
    await new Promise((resolve) => ws.on('open', resolve));
    await new Promise((r) => setTimeout(r, 200));
    await ana.v1.statuses.$select(post.id).update({ status: 'streamed, edited' });
    const got = await until(async () => events.filter((e) => e.event === 'status.update'), (l) => l.length > 0);
    ws.close();
    expect(got).toHaveLength(1);
    const payload = JSON.parse(got[0]!.payload);
    expect(payload).toMatchObject({ id: post.id, content: expect.stringContaining('edited') });
    expectEntity('Status', payload);
  });
});

describe('masto: polls', () => {
  it('posts a poll, shows it on the status and at /api/v1/polls/:id, and counts votes once per voter', async () => {
    const post = await ana.v1.statuses.create({ status: 'Which one?', poll: { options: ['tea', 'coffee', 'water'], expiresIn: 3600 } });
    expect(post.poll).toMatchObject({ multiple: false, votesCount: 0, votersCount: 0, expired: false, voted: true, ownVotes: [] });
    expect(post.poll!.options.map((o) => o.title)).toEqual(['tea', 'coffee', 'water']);
    const rawPost = await raw(ana, 'GET', `/api/v1/statuses/${post.id}`);
    expectEntity('Status', rawPost.body);
    expectEntity('Poll', rawPost.body.poll);
    const pollId = post.poll!.id;

    const anonymous = await raw(null, 'GET', `/api/v1/polls/${pollId}`);
    expectEntity('Poll', anonymous.body);
    expect(anonymous.body).not.toHaveProperty('voted');
    expect((await ben.v1.polls.$select(pollId).fetch())).toMatchObject({ voted: false, ownVotes: [] });

    const voted = await ben.v1.polls.$select(pollId).votes.create({ choices: [1] });
    expect(voted).toMatchObject({ voted: true, ownVotes: [1], votesCount: 1, votersCount: 1 });
    expect(voted.options.map((o) => o.votesCount)).toEqual([0, 1, 0]);
    // The status shows it at once, to the voter and to others.
    expect((await ben.v1.statuses.$select(post.id).fetch()).poll).toMatchObject({ voted: true, ownVotes: [1], votesCount: 1 });
    expect((await cy.v1.statuses.$select(post.id).fetch()).poll).toMatchObject({ voted: false, votesCount: 1 });
    expect((await raw(ben, 'GET', '/api/v1/timelines/home')).body.find((x: Json) => x.id === post.id)?.poll).toMatchObject({ own_votes: [1] });

    // Mastodon's errors: already voted, own poll, a choice that is not one, two choices on a single-choice poll.
    expect((await raw(ben, 'POST', `/api/v1/polls/${pollId}/votes`, { choices: [0] })).status).toBe(422);
    expect((await raw(ana, 'POST', `/api/v1/polls/${pollId}/votes`, { choices: [0] })).status).toBe(422);
    expect((await raw(cy, 'POST', `/api/v1/polls/${pollId}/votes`, { choices: [7] })).status).toBe(422);
    expect((await raw(cy, 'POST', `/api/v1/polls/${pollId}/votes`, { choices: [0, 1] })).status).toBe(422);
    expect((await raw(cy, 'POST', `/api/v1/polls/${pollId}/votes`, {})).status).toBe(422);
    expect((await raw(cy, 'POST', '/api/v1/polls/1/votes', { choices: [0] })).status).toBe(404);
    expect((await cy.v1.polls.$select(pollId).fetch()).votesCount).toBe(1);
  });

  it('takes multiple-choice polls with hidden totals, from forms too', async () => {
    const form = await s.app.inject({
      method: 'POST', url: '/api/v1/statuses', headers: { authorization: `Bearer ${tokenOf(ana)}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'status=pick&poll[options][]=a&poll[options][]=b&poll[expires_in]=600&poll[multiple]=true&poll[hide_totals]=true',
    });
    expect(form.statusCode, form.body).toBe(200);
    const poll = form.json().poll as Json;
    expectEntity('Poll', poll);
    expect(poll).toMatchObject({ multiple: true });
    const voted = await ben.v1.polls.$select(poll.id).votes.create({ choices: [0, 1] });
    expect(voted).toMatchObject({ votesCount: 2, votersCount: 1, ownVotes: [0, 1] });
    // Totals are hidden from others until it ends, not from its author.
    expect(voted.options.map((o) => o.votesCount)).toEqual([null, null]);
    expect((await ana.v1.polls.$select(poll.id).fetch()).options.map((o) => o.votesCount)).toEqual([1, 1]);
  });

  it('refuses polls that Mastodon refuses', async () => {
    const bad = [
      { options: ['only one'], expires_in: 600 },
      { options: ['a', 'b', 'c', 'd', 'e'], expires_in: 600 },
      { options: ['a', 'b'], expires_in: 299 },
      { options: ['a', 'b'], expires_in: 2_629_747 },
      { options: ['a', 'x'.repeat(51)], expires_in: 600 },
      { options: ['a', 'a'], expires_in: 600 },
      { options: ['a', 'b'] },
    ];
    for (const poll of bad) expect((await raw(ana, 'POST', '/api/v1/statuses', { status: 'bad poll', poll })).status, JSON.stringify(poll)).toBe(422);
  });

  it('ends on time by a delayed job that survives stopped workers, notifying voters and the author', async () => {
    const post = await ana.v1.statuses.create({ status: 'Quick one', poll: { options: ['yes', 'no'], expiresIn: 300 } });
    const pollId = post.poll!.id;
    await ben.v1.polls.$select(pollId).votes.create({ choices: [0] });
    // The job waits in Redis for five minutes; this test brings its time (and the poll's) forward to a moment away,
    // with no worker running.
    await s.stopWorkers();
    const { rows } = await s.ctx.db.query<{ id: string }>(`SELECT id FROM outbox WHERE kind = 'endPoll' AND payload->>'pollId' = $1`, [pollId]);
    expect(rows).toHaveLength(1);
    const job = await s.ctx.jobs.fanout.getJob(`outbox-${rows[0]!.id}`);
    expect(await job!.isDelayed()).toBe(true);
    await s.ctx.db.query(`UPDATE polls SET expires_at = now() + interval '300 milliseconds' WHERE id = $1`, [pollId]);
    await s.ctx.versions.bump({ statuses: [post.id] });
    await job!.changeDelay(300);
    const due = Date.now() + 300;
    // Both times pass with no worker: the poll is past its end in PostgreSQL, the job's time has come, and no worker
    // has taken it (it is still queued, not run), so nothing has ended the poll.
    const pastEnd = async () => (await s.ctx.db.query<{ ended: boolean }>(`SELECT expires_at <= now() AS ended FROM polls WHERE id = $1`, [pollId])).rows[0]!.ended;
    expect(await until(async () => Date.now() > due + 100 && (await pastEnd()), (v) => v)).toBe(true);
    expect(['delayed', 'waiting']).toContain(await s.ctx.jobs.fanout.getJobState(job!.id!));
    expect(await notifications(ana, 'poll')).toEqual([]);
    s.startWorkers();
    const ended = await until(() => notifications(ana, 'poll'), (l) => l.length === 1);
    expect(ended[0]).toMatchObject({ type: 'poll', status: { id: post.id, poll: { expired: true } } });
    expectEntity('Notification', ended[0]);
    expect(await until(() => notifications(ben, 'poll'), (l) => l.length === 1)).toHaveLength(1);
    expect(await notifications(cy, 'poll')).toEqual([]);
    expect((await raw(cy, 'POST', `/api/v1/polls/${pollId}/votes`, { choices: [1] })).status).toBe(422);
    expect((await cy.v1.polls.$select(pollId).fetch()).expired).toBe(true);
  });

  it('edits a poll: the same options keep their votes, new ones start over', async () => {
    const post = await ana.v1.statuses.create({ status: 'Poll to edit', poll: { options: ['a', 'b'], expiresIn: 600 } });
    await ben.v1.polls.$select(post.poll!.id).votes.create({ choices: [0] });
    const same = await ana.v1.statuses.$select(post.id).update({ status: 'Poll, edited', poll: { options: ['a', 'b'], expiresIn: 600 } });
    expect(same.poll).toMatchObject({ id: post.poll!.id, votesCount: 1 });
    const changed = await ana.v1.statuses.$select(post.id).update({ status: 'Poll, new options', poll: { options: ['a', 'b', 'c'], expiresIn: 600 } });
    expect(changed.poll).toMatchObject({ votesCount: 0 });
    expect(changed.poll!.id).not.toBe(post.poll!.id);
    const history = await ana.v1.statuses.$select(post.id).history.list();
    expect(history.map((h) => (h as unknown as { poll?: { options: { title: string }[] } }).poll?.options.map((o) => o.title))).toEqual([['a', 'b'], ['a', 'b'], ['a', 'b', 'c']]);
    const gone = await ana.v1.statuses.$select(post.id).update({ status: 'No poll now' });
    expect(gone.poll).toBeNull();
  });
});
