import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp } from '../helpers/oauth.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { WebClient } from '../helpers/web.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { runCli } from '../../cli/admin.ts';
import { pendingOutbox } from '../../storage/outbox.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

/** Strikes, their mails and appeals: a moderator acts with a text, the person reads and appeals, an operator decides. */
let s: TestServer;
let smtp: TestSmtp;
const ids: Record<string, string> = {};
let bossToken: string;
let modoToken: string;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  return lines;
}

const password = (u: string) => `pw-${u}-long-enough`;
const api = (method: 'GET' | 'POST', url: string, token: string, payload?: object) => s.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
const signedIn = async (u: string) => {
  const web = new WebClient(s.app);
  expect((await web.signIn(`${u}@example.com`, password(u))).statusCode).toBe(303);
  return web;
};
const mailTo = (u: string, subject: RegExp) => smtp.waitFor((m) => m.envelopeTo.includes(`${u}@example.com`) && subject.test(m.subject));

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ SMTP_URL: smtp.url, LOCAL_DOMAIN: 'strikes.test' });
  for (const u of ['boss', 'modo', 'offender', 'limited']) {
    const { account } = await registerLocalAccount(s.ctx.db, { username: u, email: `${u}@example.com`, password: password(u), agreement: true, approved: true, confirmed: true });
    ids[u] = account.id;
  }
  await cli('accounts', 'role', 'boss', 'Admin');
  await cli('accounts', 'role', 'modo', 'Moderator');
  const client = await createApp(s.app, 'read write admin:read admin:write');
  [bossToken, modoToken] = await Promise.all(['boss', 'modo'].map((u) => authorizationCodeToken(s.app, client, `${u}@example.com`, password(u), 'read admin:read admin:write'))) as [string, string];
});
afterAll(async () => {
  await s?.close();
  await smtp?.stop();
});

describe('strikes and appeals', () => {
  it('a suspension with a text is mailed; the person reads and appeals it; approving it lifts the suspension', async () => {
    const act = await api('POST', `/api/v1/admin/accounts/${ids.offender}/action`, modoToken, { type: 'suspend', text: 'Spam links, again & again.', send_email_notification: true });
    expect(act.statusCode, act.body).toBe(200);
    const warning = await mailTo('offender', /suspended/);
    expect(warning.text).toContain('Spam links, again & again.');
    const strikeId = /\/disputes\/strikes\/(\d+)/.exec(warning.text)![1]!;

    // Suspended: signed in for the strikes only.
    const person = new WebClient(s.app);
    const signIn = await person.signIn('offender@example.com', password('offender'), '/settings/profile');
    expect(signIn.statusCode).toBe(303);
    expect(signIn.headers.location).toBe('/disputes/strikes');
    expect((await person.get('/settings/profile')).statusCode).toBe(303);
    const list = await person.get('/disputes/strikes');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('Spam links, again &amp; again.');
    expect((await person.submit(`/disputes/strikes/${strikeId}`, `/disputes/strikes/${strikeId}/appeal`, { text: 'Those were my own shop links.' })).statusCode).toBe(303);
    // Once per strike: a form error, not a 500.
    const again = await person.post(`/disputes/strikes/${strikeId}/appeal`, { text: 'Please!' }, list.body);
    expect(again.statusCode).toBe(422);
    expect(again.body).toContain('already been appealed');

    // Appeals need manage_appeals, which a Moderator lacks.
    expect((await (await signedIn('modo')).get('/admin/disputes/appeals')).statusCode).toBe(403);
    const boss = await signedIn('boss');
    const page = await boss.get('/admin/disputes/appeals');
    expect(page.body).toContain('Those were my own shop links.');
    const appealId = /\/admin\/disputes\/appeals\/(\d+)\/approve/.exec(page.body)![1]!;
    expect((await boss.post(`/admin/disputes/appeals/${appealId}/approve`, {}, page.body)).statusCode).toBe(303);

    expect((await api('GET', `/api/v1/admin/accounts/${ids.offender}`, bossToken)).json().suspended).toBe(false);
    const { rows } = await s.ctx.db.query(`SELECT overruled_at FROM account_warnings WHERE id = $1`, [strikeId]);
    expect(rows[0].overruled_at).not.toBeNull();
    await mailTo('offender', /appeal.*approved/);
    // Deciding twice is refused.
    expect((await boss.post(`/admin/disputes/appeals/${appealId}/reject`, {}, page.body)).statusCode).toBe(422);
  });

  it('a rejected appeal keeps the action and mails the rejection', async () => {
    const act = await api('POST', `/api/v1/admin/accounts/${ids.limited}/action`, modoToken, { type: 'silence', text: 'Too many hashtags.' });
    expect(act.statusCode, act.body).toBe(200);
    const warning = await mailTo('limited', /limited/);
    const strikeId = /\/disputes\/strikes\/(\d+)/.exec(warning.text)![1]!;
    const person = await signedIn('limited');
    const tooLong = await person.submit(`/disputes/strikes/${strikeId}`, `/disputes/strikes/${strikeId}/appeal`, { text: 'x'.repeat(2001) });
    expect(tooLong.statusCode).toBe(422);
    expect((await person.submit(`/disputes/strikes/${strikeId}`, `/disputes/strikes/${strikeId}/appeal`, { text: 'Hashtags help people find me.' })).statusCode).toBe(303);

    // From the CLI this time: for an operator only with manage_appeals.
    await expect(cli('--as', 'modo', 'appeals', 'list')).rejects.toThrow(/manage_appeals/);
    const [line] = await cli('--as', 'boss', 'appeals', 'list');
    expect(line).toContain('Hashtags help people find me.');
    const appealId = line!.split(' ')[0]!;
    expect(await cli('--as', 'boss', 'appeals', 'reject', appealId)).toEqual([`appeal ${appealId} rejected`]);
    // The CLI has no queue: its mail waits in the outbox for the sweeper, which this stands in for.
    await s.ctx.jobs.enqueueMany(await pendingOutbox(s.ctx.db, 0, 100));
    expect((await api('GET', `/api/v1/admin/accounts/${ids.limited}`, bossToken)).json().silenced).toBe(true);
    await mailTo('limited', /appeal.*rejected/);
    expect((await person.get(`/disputes/strikes/${strikeId}`)).body).toContain('Appeal rejected');
  });
});
