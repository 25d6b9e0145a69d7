// The job queues page (/admin/jobs): each BullMQ queue's counts and the jobs that failed for good, with retry and
// remove (each in the audit log); only roles that may view devops (the Owner, or a role given it) may use it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { WebClient, signedInClient } from '../helpers/web.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { actionLogsPage } from '../../storage/action-logs.ts';
import { addToOutbox } from '../../storage/outbox.ts';

let s: TestServer;
let devops: TestUser;
let admin: TestUser;
let plain: TestUser;
/** A fan-out job queued from an outbox row and a transcode, both failing on a media or import id that is no number. */
let outboxId: string;
let fanoutJobId: string;
let mediaJobId: string;

async function cli(...args: string[]): Promise<void> {
  await runCli(args, s.ctx.db, () => {}, (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
}
const signedIn = (user: TestUser): Promise<WebClient> => signedInClient(s.app, user);
const stateOf = async (queue: 'fanout' | 'media', id: string) => (await (await s.ctx.jobs[queue].getJob(id))?.getState()) ?? 'gone';
const outboxRows = async (id: string) => (await s.ctx.db.query(`SELECT count(*)::int AS n FROM outbox WHERE id = $1`, [id])).rows[0].n as number;

beforeAll(async () => {
  s = await startTestServer();
  const client = await createApp(s.app);
  [devops, admin, plain] = await Promise.all(['jdevops', 'jadmin', 'jplain'].map((u) => registerUser(s.app, client, u))) as [TestUser, TestUser, TestUser];
  await cli('roles', 'create', 'Devops', '--position', '5', '--permissions', 'view_devops');
  await cli('accounts', 'role', 'jdevops', 'Devops');
  await cli('accounts', 'role', 'jadmin', 'Admin');

  const row = await addToOutbox(s.ctx.db, 'processImport', { importId: 'not-a-number' });
  outboxId = row.id;
  fanoutJobId = (await s.ctx.jobs.fanout.add('processImport', { kind: 'processImport', outboxId, importId: 'not-a-number' }, { jobId: `outbox-${outboxId}`, attempts: 2, removeOnFail: 1000 })).id!;
  mediaJobId = (await s.ctx.jobs.media.add('transcodeMedia', { kind: 'transcodeMedia', outboxId: '0', mediaId: 'not-a-number' }, { attempts: 1, removeOnFail: 1000 })).id!;
  expect(await eventually(() => stateOf('fanout', fanoutJobId), 'failed', 15_000)).toBe('failed');
  expect(await eventually(() => stateOf('media', mediaJobId), 'failed', 15_000)).toBe('failed');
}, 60_000);
afterAll(async () => s?.close());

describe('job queues page', () => {
  it('shows each queue\'s counts and the failed jobs with their error and attempts', async () => {
    const web = await signedIn(devops);
    const page = await web.get('/admin/jobs');
    expect(page.statusCode).toBe(200);
    await expectValidHtml(page.body, '/admin/jobs');
    for (const queue of ['fanout', 'pull', 'media', 'federation', 'federation-ordered-0', 'federation-ordered-7']) {
      expect(page.body, queue).toContain(`<th scope="row">${queue}</th>`);
    }
    expect(page.body).toMatch(/<th scope="row">fanout<\/th><td>\d+<\/td><td>\d+<\/td><td>\d+<\/td><td>1<\/td>/);
    expect(page.body).toMatch(/<th scope="row">media<\/th><td>0<\/td><td>0<\/td><td>0<\/td><td>1<\/td><td>0<\/td>/);
    expect(page.body).toMatch(new RegExp(`<td>fanout</td><td>processImport <span class="muted">outbox-${outboxId}</span></td><td>[^<]*invalid input syntax for type bigint[^<]*</td><td>2 of 2</td>`));
    expect(page.body).toMatch(new RegExp(`<td>media</td><td>transcodeMedia <span class="muted">${mediaJobId}</span></td><td>[^<]*</td><td>1 of 1</td>`));
  });

  it('retries a failed job with all its attempts, and logs it', async () => {
    const web = await signedIn(devops);
    const page = await web.get('/admin/jobs');
    const failedAt = (await s.ctx.jobs.media.getJob(mediaJobId))!.finishedOn!;
    await s.stopWorkers();
    try {
      const retried = await web.post(`/admin/jobs/media/${mediaJobId}/retry`, {}, page.body);
      expect(retried.statusCode).toBe(303);
      expect(retried.headers.location).toBe('/admin/jobs?notice=retried');
      expect(await stateOf('media', mediaJobId)).toBe('waiting');
      const after = await web.get(retried.headers.location as string);
      expect(after.body).toContain('The job is queued again, with all its attempts.');
      expect(after.body).toMatch(/<th scope="row">media<\/th><td>1<\/td><td>0<\/td><td>0<\/td><td>0<\/td>/);
      // Waiting, it is no failed job: retried again or removed, it is not found.
      expect((await web.post(`/admin/jobs/media/${mediaJobId}/retry`, {}, page.body)).statusCode).toBe(404);
      expect((await web.post(`/admin/jobs/media/${mediaJobId}/remove`, {}, page.body)).statusCode).toBe(404);
    } finally {
      s.startWorkers();
    }
    // It runs again and fails again: its one attempt spent anew, not a second on top of the first.
    expect(await eventually(() => stateOf('media', mediaJobId), 'failed', 15_000)).toBe('failed');
    const job = (await s.ctx.jobs.media.getJob(mediaJobId))!;
    expect(job.attemptsMade).toBe(1);
    expect(job.finishedOn).toBeGreaterThan(failedAt);
    const [entry] = await actionLogsPage(s.ctx.db, { targetType: 'Job' }, { limit: 1 });
    expect(entry).toMatchObject({ account_id: devops.id, action: 'retry', target_id: null, human_identifier: `media ${mediaJobId} (transcodeMedia)` });
  });

  it('removes a failed job for good, with any outbox row left of it, and logs it', async () => {
    const web = await signedIn(devops);
    const page = await web.get('/admin/jobs');
    // Its last attempt took its outbox row already (jobs/worker.ts); removing the job removes one left by an older
    // failure too.
    expect(await outboxRows(outboxId)).toBe(0);
    const removed = await web.post(`/admin/jobs/fanout/${encodeURIComponent(fanoutJobId)}/remove`, {}, page.body);
    expect(removed.statusCode).toBe(303);
    expect(removed.headers.location).toBe('/admin/jobs?notice=removed');
    expect(await stateOf('fanout', fanoutJobId)).toBe('gone');
    // The sweeper has nothing left to queue it again from.
    expect(await outboxRows(outboxId)).toBe(0);
    const after = await web.get('/admin/jobs?notice=removed');
    expect(after.body).toContain('The job is removed.');
    expect(after.body).not.toContain(`outbox-${outboxId}`);
    const [entry] = await actionLogsPage(s.ctx.db, { targetType: 'Job' }, { limit: 1 });
    expect(entry).toMatchObject({ account_id: devops.id, action: 'destroy', human_identifier: `fanout outbox-${outboxId} (processImport)` });
    expect((await web.get('/admin/action_logs?target_type=Job')).statusCode).toBe(403); // devops alone may not read the log
  });

  it('answers an unknown queue, an unknown job and one that has not failed with 404, changing nothing', async () => {
    const web = await signedIn(devops);
    const page = await web.get('/admin/jobs');
    const later = await s.ctx.jobs.fanout.add('processImport', { kind: 'processImport', importId: '0' }, { delay: 3_600_000 });
    const logs = (await actionLogsPage(s.ctx.db, { targetType: 'Job' }, { limit: 10 })).length;
    for (const url of [`/admin/jobs/nope/${mediaJobId}/retry`, '/admin/jobs/media/999999/retry', '/admin/jobs/media/999999/remove', `/admin/jobs/fanout/${later.id}/retry`, `/admin/jobs/fanout/${later.id}/remove`]) {
      expect((await web.post(url, {}, page.body)).statusCode, url).toBe(404);
    }
    expect(await later.getState()).toBe('delayed');
    expect((await actionLogsPage(s.ctx.db, { targetType: 'Job' }, { limit: 10 })).length).toBe(logs);
    await later.remove();
  });

  it('needs view_devops: an Admin and a person without a role get 403; a form without its token is refused', async () => {
    for (const who of [admin, plain]) {
      const web = await signedIn(who);
      expect((await web.get('/admin/jobs')).statusCode).toBe(403);
      const own = await web.get('/settings/profile');
      expect((await web.post(`/admin/jobs/media/${mediaJobId}/remove`, {}, own.body)).statusCode).toBe(403);
    }
    const web = await signedIn(devops);
    await web.get('/admin/jobs');
    expect((await web.post(`/admin/jobs/media/${mediaJobId}/remove`, {})).statusCode).toBe(403);
    expect(await stateOf('media', mediaJobId)).toBe('failed');
    expect((await new WebClient(s.app).get('/admin/jobs')).headers.location).toBe('/auth/sign_in?return_to=%2Fadmin%2Fjobs');
  });
});
