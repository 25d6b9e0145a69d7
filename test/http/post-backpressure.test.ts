// While this process's job worker is behind (ROLE=all), a new post waits for it, for a bounded time
// (services/job-backlog.ts). The real worker is stopped; the test plays a worker's part through ctx.jobBacklog.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';

let s: TestServer;
let amy: TestUser;

beforeAll(async () => {
  s = await startTestServer();
  [amy] = await registerUsers(s.app, 'amy');
  await s.stopWorkers();
});
afterAll(async () => s?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Plays a worker that keeps taking jobs which each waited 5 s in the queue: it makes progress, and stays behind.
 * `finishing: false`: its jobs are slow, none finishes meanwhile (each finished one lets a held post in).
 * Returns what stops it.
 */
function keepBehind(backlog: TestServer['ctx']['jobBacklog'], { finishing = true } = {}): () => void {
  backlog.setWorking(true);
  const work = () => {
    backlog.started(Date.now() - 5_000, true);
    if (finishing) backlog.finished();
  };
  work();
  const busy = setInterval(work, 50);
  return () => clearInterval(busy);
}

/** Posts, and tells whether the answer has come yet. */
function posting(text: string) {
  const state = { answered: false, status: 0, at: 0 };
  const done = s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(amy.token), payload: { status: text } }).then((res) => {
    Object.assign(state, { answered: true, status: res.statusCode, at: performance.now() });
    return res;
  });
  return { state, done };
}

describe('posting while the job worker is behind', () => {
  it('goes through at once when no worker runs here (ROLE=web) or the worker keeps up', async () => {
    expect(s.ctx.jobBacklog.behind).toBe(false);
    expect((await posting('no worker here').done).statusCode).toBe(200);
    s.ctx.jobBacklog.setWorking(true);
    s.ctx.jobBacklog.started(Date.now() - 50, true);
    expect(s.ctx.jobBacklog.behind).toBe(false);
    expect((await posting('a worker keeping up').done).statusCode).toBe(200);
  });

  it('waits until the worker has caught up', async () => {
    s.ctx.jobBacklog.setWorking(true);
    // A job that waited 5 s in the queue is running.
    s.ctx.jobBacklog.started(Date.now() - 5_000, true);
    expect(s.ctx.jobBacklog.behind).toBe(true);
    const before = await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses');
    const held = posting('held back');
    await sleep(300);
    expect(held.state.answered).toBe(false);
    // Held before the actor: nothing is written yet.
    expect((await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n).toBe(before.rows[0].n);
    // The worker takes a job that waited only briefly: it has caught up.
    s.ctx.jobBacklog.started(Date.now() - 10, true);
    const res = await held.done;
    expect(res.statusCode, res.body).toBe(200);
    expect((await s.ctx.db.query('SELECT count(*)::int AS n FROM statuses')).rows[0].n).toBe(before.rows[0].n + 1);
  });

  it('does not count a retry that waited out its backoff', async () => {
    s.ctx.jobBacklog.setWorking(true);
    s.ctx.jobBacklog.started(Date.now() - 60_000, false);
    expect(s.ctx.jobBacklog.behind).toBe(false);
  });

  it('lets held posts in as the worker finishes jobs, first come first served, and the rest once it has caught up', async () => {
    s.ctx.jobBacklog.setWorking(true);
    // A job that waited 400 ms (behind, by less than twice the mark): one held post goes in for each job finished.
    s.ctx.jobBacklog.started(Date.now() - 400, true);
    expect(s.ctx.jobBacklog.behind).toBe(true);
    const posts = [posting('first held'), posting('second held'), posting('third held'), posting('fourth held')];
    const answered = () => posts.map((p) => p.state.answered);
    // The posts reached the hold (nothing answered, and nothing written, while nothing finishes).
    await sleep(300);
    expect(answered()).toEqual([false, false, false, false]);
    s.ctx.jobBacklog.finished();
    const first = await posts[0]!.done;
    expect(first.statusCode, first.body).toBe(200);
    await sleep(200);
    expect(answered()).toEqual([true, false, false, false]);
    s.ctx.jobBacklog.finished();
    expect((await posts[1]!.done).statusCode).toBe(200);
    // Further behind (a job that waited 2 s): one post for every four jobs finished, so that the backlog drains.
    s.ctx.jobBacklog.started(Date.now() - 2_000, true);
    for (let i = 0; i < 3; i++) s.ctx.jobBacklog.finished();
    await sleep(200);
    expect(answered()).toEqual([true, true, false, false]);
    s.ctx.jobBacklog.finished();
    expect((await posts[2]!.done).statusCode).toBe(200);
    expect(posts[3]!.state.answered).toBe(false);
    // Caught up: the rest go in.
    s.ctx.jobBacklog.started(Date.now() - 10, true);
    expect((await posts[3]!.done).statusCode).toBe(200);
    const made = await Promise.all(posts.map(async (p) => (await p.done).json<{ id: string; content: string }>()));
    // Written in the order they came.
    expect(made.map((t) => t.content)).toEqual(['<p>first held</p>', '<p>second held</p>', '<p>third held</p>', '<p>fourth held</p>']);
    const ids = made.map((t) => BigInt(t.id));
    expect(ids.every((id, i) => i === 0 || ids[i - 1]! < id)).toBe(true);
  });

  it('holds background work (the pull queue\'s fetches) until the worker has caught up, or for its longest wait', async () => {
    s.ctx.jobBacklog.setWorking(true);
    s.ctx.jobBacklog.started(Date.now() - 400, true);
    let ran = false;
    const waiting = s.ctx.jobBacklog.caughtUp(10_000).then(() => (ran = true));
    // A job finished, the worker still behind: a held post would go in, background work goes on waiting.
    s.ctx.jobBacklog.finished();
    await sleep(100);
    expect(ran).toBe(false);
    s.ctx.jobBacklog.started(Date.now() - 10, true);
    await waiting;
    expect(ran).toBe(true);
    // Behind for longer than its longest wait: it goes anyway.
    s.ctx.jobBacklog.started(Date.now() - 5_000, true);
    const sent = performance.now();
    await s.ctx.jobBacklog.caughtUp(300);
    expect(performance.now() - sent).toBeGreaterThanOrEqual(250);
  });

  it('is accepted anyway after the longest hold', async () => {
    const stop = keepBehind(s.ctx.jobBacklog, { finishing: false });
    try {
      const sent = performance.now();
      const held = posting('held for the longest');
      expect((await held.done).statusCode).toBe(200);
      expect(held.state.at - sent).toBeGreaterThanOrEqual(s.ctx.config.postHoldMs - 50);
    } finally {
      stop();
    }
  });

  it('holds nothing back for a worker that makes no progress (jobs stuck on a dependency), or once it stops', async () => {
    s.ctx.jobBacklog.setWorking(true);
    s.ctx.jobBacklog.started(Date.now() - 5_000, true); // never finishes, and nothing else is taken
    const sent = performance.now();
    const stuck = posting('not held for a stuck worker');
    expect((await stuck.done).statusCode).toBe(200);
    expect(stuck.state.at - sent).toBeLessThan(s.ctx.config.postHoldMs);
    s.ctx.jobBacklog.started(Date.now() - 5_000, true);
    expect(s.ctx.jobBacklog.behind).toBe(true);
    s.ctx.jobBacklog.setWorking(false); // stopped, or paused while PostgreSQL or Redis is away
    expect(s.ctx.jobBacklog.behind).toBe(false);
    expect((await posting('no worker any more').done).statusCode).toBe(200);
  });
});

describe('with POST_HOLD_MS=0', () => {
  it('never holds a post back', async () => {
    const off = await startTestServer({ POST_HOLD_MS: '0' });
    try {
      const [ann] = await registerUsers(off.app, 'ann');
      await off.stopWorkers();
      const stop = keepBehind(off.ctx.jobBacklog);
      try {
        expect(off.ctx.jobBacklog.behind).toBe(true);
        const sent = performance.now();
        const res = await off.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(ann.token), payload: { status: 'not held' } });
        expect(res.statusCode, res.body).toBe(200);
        expect(performance.now() - sent).toBeLessThan(1_000);
      } finally {
        stop();
      }
    } finally {
      await off.close();
    }
  });
});

describe('background picture work beside fan-out', () => {
  it('waits while fan-out runs and until it has been quiet a moment, or until its bound from when it was queued', async () => {
    const { JobBacklog, QUIET_MS } = await import('../../services/job-backlog.ts');
    const backlog = new JobBacklog(5_000);
    const far = () => Date.now() + 60_000;
    // No worker in this process: nothing to wait for.
    await backlog.quiet(far());
    backlog.setWorking(true);
    // A worker that has run nothing yet is quiet.
    await backlog.quiet(far());
    backlog.started(Date.now(), true);
    backlog.started(Date.now(), true);
    let resolvedAt = 0;
    const waiting = backlog.quiet(far()).then(() => { resolvedAt = Date.now(); });
    await sleep(100);
    expect(resolvedAt).toBe(0);
    backlog.finished();
    await sleep(QUIET_MS + 50);
    // One job still runs.
    expect(resolvedAt).toBe(0);
    backlog.finished();
    const lastFinished = Date.now();
    // A job that starts and ends within the quiet time puts the wait off again.
    await sleep(QUIET_MS / 2);
    backlog.started(Date.now(), true);
    backlog.finished();
    const secondFinished = Date.now();
    await waiting;
    expect(resolvedAt - lastFinished).toBeGreaterThanOrEqual(QUIET_MS);
    expect(resolvedAt - secondFinished).toBeGreaterThanOrEqual(QUIET_MS - 5);
    // Quiet now: at once.
    const at = Date.now();
    await backlog.quiet(far());
    expect(Date.now() - at).toBeLessThan(50);
    // With a job running, the bound ends the wait; a bound already past does not wait at all.
    backlog.started(Date.now(), true);
    const before = Date.now();
    await backlog.quiet(before + 200);
    expect(Date.now() - before).toBeGreaterThanOrEqual(190);
    const past = Date.now();
    await backlog.quiet(past - 1);
    expect(Date.now() - past).toBeLessThan(50);
    // A worker that stops lets every waiter go.
    const stopped = backlog.quiet(far());
    backlog.setWorking(false);
    await stopped;
  });
});
