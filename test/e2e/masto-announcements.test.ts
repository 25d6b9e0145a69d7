// Operators' announcements as a Mastodon app reads them with masto, written by an operator with the CLI, and heard
// live on the user stream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import WebSocket from 'ws';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { expectEntity } from '../helpers/schema.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { createAnnouncement } from '../../services/announcements.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let s: TestServer & { url: string };
let ana: mastodon.rest.Client;
let ben: mastodon.rest.Client;
let ws: WebSocket;
const events: Json[] = [];

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

async function raw(client: mastodon.rest.Client, method: string, path: string) {
  const res = await fetch(`${s.url}${path}`, { method, headers: { authorization: `Bearer ${tokenOf(client)}` } });
  return { status: res.status, body: await res.json() as Json };
}

/** The first stream event of this kind after `from` (an index into `events`). */
async function streamed(event: string, from: number): Promise<Json> {
  const end = Date.now() + 5000;
  for (;;) {
    const found = events.slice(from).find((e) => e.event === event);
    if (found) return found;
    if (Date.now() > end) throw new Error(`no ${event} event; got ${JSON.stringify(events.map((e) => e.event))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  s = await startListeningServer();
  ({ ana, ben } = (await mastoAccounts(s.url, 'masto announcements', 'ana', 'ben', 'olga', 'moe')) as Record<'ana' | 'ben', mastodon.rest.Client>);
  await cli('accounts', 'role', 'olga', 'Owner');
  await cli('accounts', 'role', 'moe', 'Moderator');
  ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/v1/streaming?stream=user`, { headers: { authorization: `Bearer ${tokenOf(ben)}` } });
  ws.on('message', (data) => events.push(JSON.parse(String(data))));
  await new Promise((resolve) => ws.on('open', resolve));
  await new Promise((r) => setTimeout(r, 200));
});
afterAll(async () => {
  ws?.close();
  await s?.close();
});

describe('masto: announcements', () => {
  it('an operator who may manage announcements publishes one; readers list, react, dismiss; streams hear each change', async () => {
    expect(await ben.v1.announcements.list()).toEqual([]);
    // A Moderator's role lacks manage_announcements.
    await expect(cli('--as', 'moe', 'announcements', 'add', 'Not mine to say')).rejects.toThrow(/manage_announcements/);

    let mark = events.length;
    const [id] = await cli('--as', 'olga', 'announcements', 'add', 'Maintenance tonight <b>22:00</b>\n\nSee https://status.example.com', '--starts-at', '2026-12-24T22:00:00Z', '--ends-at', '2026-12-24T23:00:00Z');
    const published = await streamed('announcement', mark);
    const payload = JSON.parse(published.payload);
    expectEntity('Announcement', payload);
    expect(payload).toMatchObject({ id, read: false, all_day: false, starts_at: '2026-12-24T22:00:00.000Z', reactions: [] });
    expect(payload.content).toContain('&lt;b&gt;22:00&lt;/b&gt;');
    expect(payload.content).toContain('<a href="https://status.example.com"');

    const [listed] = await ben.v1.announcements.list();
    expect(listed).toMatchObject({ id, read: false });
    const rawList = await raw(ben, 'GET', '/api/v1/announcements');
    expectEntity('Announcement', rawList.body[0]);

    mark = events.length;
    await ben.v1.announcements.$select(id!).reactions.$select('👍').update();
    await ben.v1.announcements.$select(id!).reactions.$select('👍').update(); // twice is once
    await ana.v1.announcements.$select(id!).reactions.$select('👍').update();
    expect(JSON.parse((await streamed('announcement.reaction', mark)).payload)).toEqual({ name: '👍', count: 1, announcement_id: id });
    expect((await ben.v1.announcements.list())[0]!.reactions).toEqual([{ name: '👍', count: 2, me: true }]);
    await ana.v1.announcements.$select(id!).reactions.$select('👍').remove();
    expect((await ben.v1.announcements.list())[0]!.reactions).toEqual([{ name: '👍', count: 1, me: true }]);
    expect((await ana.v1.announcements.list())[0]!.reactions).toEqual([{ name: '👍', count: 1, me: false }]);

    // Not an emoji, an unknown custom emoji, an unknown announcement.
    expect((await raw(ben, 'PUT', `/api/v1/announcements/${id}/reactions/hello`)).status).toBe(422);
    expect((await raw(ben, 'PUT', `/api/v1/announcements/${id}/reactions/${encodeURIComponent('👍x')}`)).status).toBe(422);
    expect((await raw(ben, 'PUT', '/api/v1/announcements/123/reactions/👍'.replace('👍', encodeURIComponent('👍')))).status).toBe(404);
    expect((await raw(ben, 'POST', '/api/v1/announcements/123/dismiss')).status).toBe(404);

    await ben.v1.announcements.$select(id!).dismiss();
    expect((await ben.v1.announcements.list())[0]).toMatchObject({ id, read: true });
    expect((await ana.v1.announcements.list())[0]).toMatchObject({ id, read: false });

    mark = events.length;
    expect(await cli('announcements', 'unpublish', id!)).toEqual([`announcement ${id} unpublished`]);
    expect((await streamed('announcement.delete', mark)).payload).toBe(id);
    expect(await ben.v1.announcements.list()).toEqual([]);
    expect((await raw(ben, 'POST', `/api/v1/announcements/${id}/dismiss`)).status).toBe(404);
    expect(await cli('announcements', 'remove', id!)).toEqual([`announcement ${id} removed`]);
    expect(await cli('announcements', 'list')).toEqual(['no announcements']);
  });

  it('publishes a scheduled announcement at its time, by a delayed job', async () => {
    await expect(cli('announcements', 'add', 'Too late', '--scheduled-at', '2001-01-01T00:00:00Z')).rejects.toThrow(/scheduled_at must be in the future/);
    const mark = events.length;
    const row = await createAnnouncement({ db: s.ctx.db, events: s.ctx.events, jobs: s.ctx.jobs }, { text: 'Soon', scheduledAt: new Date(Date.now() + 1500) });
    expect(await ben.v1.announcements.list()).toEqual([]);
    expect((await cli('announcements', 'list'))[0]).toMatch(new RegExp(`^${row.id}  scheduled for `));
    expect(await eventually(async () => (await ben.v1.announcements.list()).map((a) => a.id).join(), row.id, 8000)).toBe(row.id);
    expect(JSON.parse((await streamed('announcement', mark)).payload)).toMatchObject({ id: row.id, content: '<p>Soon</p>' });
  });
});
