import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BatchViews, VIEW_WAIT_MS } from '../../jobs/batch-views.ts';
import type { StreamMessage, StreamView } from '../../services/stream-events.ts';
import WebSocket from 'ws';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { until } from '../helpers/instances.ts';

/** A view whose currency the test decides, and a render that counts its calls and takes as long as it is told. */
function renders(delays: number[] = []) {
  let n = 0;
  const current = new Map<string, boolean>();
  const render = async (): Promise<StreamView | null> => {
    const json = `view ${++n}`;
    current.set(json, true);
    await new Promise((r) => setTimeout(r, delays[n - 1] ?? 0));
    return { json, stillCurrent: async () => current.get(json)! };
  };
  return { render, renders: () => n, outdate: (json: string) => current.set(json, false) };
}

describe('the view a new status\'s messages carry, batch after batch', () => {
  it('sends the first render as it is, checks it before each later batch, and renders again once it is out of date', async () => {
    const r = renders();
    const views = new BatchViews(r.render);
    expect(await views.forBatch()).toBe('view 1');
    expect(await views.forBatch()).toBe('view 1');
    expect(r.renders()).toBe(1);
    // Favourited (or edited) between two batches: the next goes with a view rendered again.
    r.outdate('view 1');
    expect(await views.forBatch()).toBe('view 2');
    expect(await views.forBatch()).toBe('view 2');
    expect(r.renders()).toBe(2);
  });

  it('sends a batch without a view when its render is late, and the next batches with it once it is done', async () => {
    const r = renders([VIEW_WAIT_MS + 150]);
    const views = new BatchViews(r.render);
    expect(await views.forBatch()).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await views.forBatch()).toBe('view 1');
  });

  it('sends none when there is nothing to show, the render fails, or its check cannot be made and the render again fails', async () => {
    expect(await new BatchViews(async () => null).forBatch()).toBeUndefined();
    expect(await new BatchViews(async () => { throw new Error('PostgreSQL away'); }).forBatch()).toBeUndefined();
    let calls = 0;
    const flaky = new BatchViews(async () => {
      if (++calls > 1) throw new Error('PostgreSQL away');
      return { json: 'first', stillCurrent: async () => { throw new Error('Redis away'); } };
    });
    expect(await flaky.forBatch()).toBe('first');
    expect(await flaky.forBatch()).toBeUndefined();
  });
});

// The fan-out job against a real server: what its messages carry, and the view's check against Redis's versions.
describe('stream views from the fan-out job', () => {
  let s: TestServer & { url: string };
  let ana: TestUser;
  let ben: TestUser;
  let cy: TestUser;
  type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
  const call = async (user: TestUser, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object): Promise<Json> => {
    const res = await s.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    s = await startListeningServer();
    [ana, ben, cy] = await registerUsers(s.app, 'ana', 'ben', 'cy');
    await call(ben, 'POST', `/api/v1/accounts/${ana.id}/follow`);
    await call(cy, 'POST', `/api/v1/accounts/${ana.id}/follow`);
    await call(ana, 'POST', `/api/v1/accounts/${ben.id}/follow`);
    for (const u of [ana, ben, cy]) await call(u, 'GET', '/api/v1/timelines/home');
  }, 60_000);
  afterAll(async () => s?.close());

  /** The messages fan-out jobs publish to followers' home streams (not the author's own) while `act` runs, for what it names. */
  async function homeMessages(act: () => Promise<string>, event: StreamMessage['event'] = 'update'): Promise<StreamMessage[]> {
    const sent: StreamMessage[] = [];
    const spy = vi.spyOn(s.ctx.events, 'publishToHomes').mockImplementation(async (ids, message) => {
      if ([...ids].some((id) => id !== ana.id)) sent.push(message);
    });
    try {
      const id = await act();
      return await until(async () => sent.filter((m) => 'statusId' in m && m.statusId === id && m.event === event), (got) => got.length > 0, 'the fan-out\'s messages', 5000);
    } finally {
      spy.mockRestore();
    }
  }

  it('gives a new status\'s messages the view someone who has not acted on it gets from REST', async () => {
    for (const visibility of ['public', 'unlisted', 'private']) {
      // A render that takes longer than the job waits (the first in a cold process, a busy machine) leaves the view
      // out, as it should: tried a few times.
      let message: StreamMessage | undefined;
      let id = '';
      for (let attempt = 0; attempt < 4 && !(message && 'view' in message); attempt++) {
        [message] = await homeMessages(async () => (id = (await call(ana, 'POST', '/api/v1/statuses', { status: `hello #views ${visibility}`, visibility, poll: { options: ['a', 'b'], expires_in: 600 } })).id));
      }
      expect(message).toMatchObject({ event: 'update', statusId: id, accountId: ana.id, view: expect.any(String) });
      expect(JSON.parse((message as { view: string }).view)).toEqual(await call(cy, 'GET', `/api/v1/statuses/${id}`));
    }
  });

  it('sends boosts, edits and direct statuses without a view: their receivers\' processes render them', async () => {
    const original = await call(ben, 'POST', '/api/v1/statuses', { status: 'to be boosted and edited' });
    const [boost] = await homeMessages(async () => (await call(ana, 'POST', `/api/v1/statuses/${original.id}/reblog`)).id);
    expect(boost).toMatchObject({ event: 'update' });
    expect(boost).not.toHaveProperty('view');
    const mine = await call(ana, 'POST', '/api/v1/statuses', { status: 'before the edit' });
    const [edit] = await homeMessages(async () => (await call(ana, 'PUT', `/api/v1/statuses/${mine.id}`, { status: 'after the edit' })).id, 'status.update');
    expect(edit).toMatchObject({ event: 'status.update', statusId: mine.id });
    expect(edit).not.toHaveProperty('view');
    const [direct] = await homeMessages(async () => (await call(ana, 'POST', '/api/v1/statuses', { status: `@ben hi`, visibility: 'direct' })).id);
    expect(direct).not.toHaveProperty('view');
  });

  it('knows when a favourite, a boost or an edit has made a view out of date', async () => {
    const status = await call(ana, 'POST', '/api/v1/statuses', { status: 'watched' });
    const fresh = async () => (await s.ctx.renderStreamView(status.id, ana.id))!;
    let view = await fresh();
    expect(await view.stillCurrent()).toBe(true);
    await call(ben, 'POST', `/api/v1/statuses/${status.id}/favourite`);
    expect(await view.stillCurrent()).toBe(false);
    view = await fresh();
    expect(JSON.parse(view.json)).toMatchObject({ favourites_count: 1, favourited: false });
    expect(await view.stillCurrent()).toBe(true);
    await call(cy, 'POST', `/api/v1/statuses/${status.id}/reblog`);
    expect(await view.stillCurrent()).toBe(false);
    view = await fresh();
    await call(ana, 'PUT', `/api/v1/statuses/${status.id}`, { status: 'watched, edited' });
    expect(await view.stillCurrent()).toBe(false);
    expect(JSON.parse((await fresh()).json)).toMatchObject({ content: expect.stringContaining('watched, edited') });
    // The author's new display name shows in it too.
    view = await fresh();
    await call(ana, 'PATCH' as 'PUT', '/api/v1/accounts/update_credentials', { display_name: 'Ana Renamed' });
    expect(await view.stillCurrent()).toBe(false);
  });

  it('sends the view to a receiver with nothing of their own in it without reading the status', async () => {
    const socketOf = async (u: TestUser) => {
      const ws = new WebSocket(`${s.url.replace('http', 'ws')}/api/v1/streaming?stream=user`, [u.token]);
      const got: Json[] = [];
      ws.on('message', (d) => got.push(JSON.parse(String(d)) as Json));
      await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
      await new Promise((r) => setTimeout(r, 150)); // subscribed
      return { ws, got };
    };
    const cyHome = await socketOf(cy);
    const published = vi.spyOn(s.ctx.events, 'publishToHomes');
    const load = vi.spyOn(s.ctx.statusLoader, 'load');
    try {
      // Retried while the job's render was late (then its message has no view, and the status is read).
      for (let attempt = 0; attempt < 4; attempt++) {
        published.mockClear();
        load.mockClear();
        const { id } = await call(ana, 'POST', '/api/v1/statuses', { status: `shared ${attempt}` });
        const payloadOf = (socket: { got: Json[] }) => until(async () => socket.got.find((m) => m.event === 'update' && JSON.parse(m.payload).id === id), (m) => m !== undefined, 'the update', 5000);
        const toCy = await payloadOf(cyHome);
        const message = published.mock.calls.map(([, m]) => m).find((m) => 'statusId' in m && m.statusId === id && 'view' in m);
        if (!message) continue;
        // Read by the job, as its author, for the view; not by the streaming side, neither as nobody nor as cy.
        const loads = load.mock.calls.filter(([, ids]) => ids.includes(id)).map(([viewer]) => viewer);
        expect(JSON.parse(toCy!.payload)).toEqual(await call(cy, 'GET', `/api/v1/statuses/${id}`));
        expect(loads).toContain(ana.id);
        expect(loads).not.toContain(null);
        expect(loads).not.toContain(cy.id);
        return;
      }
      throw new Error('no message carried a view');
    } finally {
      published.mockRestore();
      load.mockRestore();
      cyHome.ws.close();
    }
  });
});
