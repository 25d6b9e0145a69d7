import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { ApiError } from '../../errors.ts';

let s: TestServer;
let ana: TestUser;
let bo: TestUser;

beforeAll(async () => {
  s = await startTestServer({ ACTOR_IDLE_MS: '150' });
  const client = await createApp(s.app);
  [ana, bo] = await Promise.all([registerUser(s.app, client, 'ana'), registerUser(s.app, client, 'bo')]);
});
afterAll(async () => s?.close());

const waitUntil = async (check: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return check();
};

describe('account actors', () => {
  it('spawns an actor on first message, stops it when idle, and spawns it again', async () => {
    await waitUntil(() => s.ctx.actors.size === 0);
    expect(s.ctx.actors.size).toBe(0);
    expect(await s.ctx.actors.ask(ana.id, { type: 'follow', targetId: bo.id, options: {} })).toBe('followed');
    expect(s.ctx.actors.size).toBe(1);
    expect(await waitUntil(() => s.ctx.actors.size === 0)).toBe(true);
    expect(await s.ctx.actors.ask(ana.id, { type: 'unfollow', targetId: bo.id })).toBe(true);
    expect(s.ctx.actors.size).toBe(1);
  });

  it('hands errors back to the caller and keeps working', async () => {
    await expect(s.ctx.actors.ask(ana.id, { type: 'follow', targetId: '424242', options: {} })).rejects.toBeInstanceOf(ApiError);
    await expect(s.ctx.actors.ask(ana.id, { type: 'follow', targetId: ana.id, options: {} })).rejects.toMatchObject({ statusCode: 403 });
    expect(await s.ctx.actors.ask(ana.id, { type: 'follow', targetId: bo.id, options: { notify: true } })).toBe('followed');
  });

  it('applies one account\'s messages one at a time, in order', async () => {
    const outcomes = await Promise.all([
      s.ctx.actors.ask(bo.id, { type: 'follow', targetId: ana.id, options: {} }),
      s.ctx.actors.ask(bo.id, { type: 'unfollow', targetId: ana.id }),
      s.ctx.actors.ask(bo.id, { type: 'follow', targetId: ana.id, options: {} }),
    ]);
    expect(outcomes).toEqual(['followed', true, 'followed']);
    const { rows } = await s.ctx.db.query('SELECT following_count FROM accounts WHERE id = $1', [bo.id]);
    expect(rows[0].following_count).toBe(1);
  });
});
