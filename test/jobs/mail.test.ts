// Outgoing mail: queued through the outbox in the transaction of what causes it, sent by a BullMQ job over SMTP to a
// real smtp-server on loopback, retried while the server is away, given up when it refuses a recipient for good;
// POST /api/v1/emails/confirmations; and the operators' alerts of sign-ups and reports.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startSmtp, type ReceivedMail, type TestSmtp } from '../helpers/smtp.ts';
import { bearer, createApp, type RegisteredApp } from '../helpers/oauth.ts';
import { eventually } from '../helpers/eventually.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { expectEntity } from '../helpers/schema.ts';
import { transaction } from '../../storage/db.ts';
import { insertAccessToken, hashSecret } from '../../storage/oauth.ts';
import { confirmEmail, findUserById, setApproved, takeMailToken, type UserRow } from '../../storage/users.ts';
import type { AccountRow } from '../../storage/accounts.ts';
import type { OutboxRow } from '../../storage/outbox.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { queueMail, mailEnabled, type Mail } from '../../services/mail.ts';
import { alertOperatorsOfSignUp } from '../../services/operator-alerts.ts';
import { sendMailJob, refusedForGood } from '../../jobs/mail.ts';
import type { AppContext } from '../../context.ts';

const TITLE = 'Mail Test Town';
const HOME = 'http://test.local';

let smtp: TestSmtp;
let s: TestServer;
let client: RegisteredApp;
let otherClient: RegisteredApp;

interface Person { user: UserRow; account: AccountRow; token: string; email: string }

/** A user made directly (no sign-up hooks), with a token of `client` (the app they signed up through). */
async function person(name: string, opts: { confirmed?: boolean; admin?: boolean; approved?: boolean } = {}): Promise<Person> {
  const email = `${name}@example.com`;
  const { user, account } = await registerLocalAccount(s.ctx.db, {
    username: name, email, password: `pw-${name}-secret`, agreement: true, approved: opts.approved ?? true,
    admin: opts.admin ?? false, applicationId: client.id, confirmed: opts.confirmed ?? true,
  });
  const token = randomBytes(24).toString('base64url');
  await insertAccessToken(s.ctx.db, { token, applicationId: client.id, userId: user.id, scopes: 'read write follow push' });
  return { user, account, token, email };
}

async function send(mail: Mail): Promise<OutboxRow> {
  const row = await transaction(s.ctx.db, (tx) => queueMail(tx, mail));
  await s.ctx.jobs.enqueue(row);
  return row;
}

const outboxRow = async (id: string) => (await s.ctx.db.query('SELECT 1 FROM outbox WHERE id = $1', [id])).rowCount;
/** True once no job is left to run and no outbox row waits for one (test/helpers/work-settled.ts): no mail can go out any more. */
const drained = () => workSettled(s.ctx);
const to = (address: string, subject?: RegExp) => (m: ReceivedMail) => m.envelopeTo.includes(address) && (!subject || subject.test(m.subject));
const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelopeTo.includes(address));

/** What every mail has: both parts, the instance in the subject, our From, a Message-ID, and only absolute links. */
function expectWellFormed(m: ReceivedMail) {
  expect(m.subject).toContain(TITLE);
  expect(m.text.length).toBeGreaterThan(20);
  expect(m.html).toMatch(/^<!DOCTYPE html>/);
  expect(m.headers.get('from')).toContain('notifications@test.local');
  expect(m.headers.get('message-id')).toMatch(/^<[^@>\s]+@test\.local>$/);
  expect(m.headers.get('auto-submitted')).toBe('auto-generated');
  for (const href of m.html.matchAll(/href="([^"]*)"/g)) expect(href[1]).toMatch(/^https?:\/\//);
}

/** The one link in both parts that starts with `prefix`, the same in both. */
function linkIn(m: ReceivedMail, prefix: string): URL {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const inText = new RegExp(`${escaped}[^\\s"<]*`).exec(m.text)?.[0];
  const inHtml = new RegExp(`href="(${escaped}[^"]*)"`).exec(m.html)?.[1]?.replace(/&amp;/g, '&');
  expect(inText, m.text).toBeTruthy();
  expect(inHtml).toBe(inText);
  return new URL(inText!);
}

async function api(token: string | null, method: 'GET' | 'POST', url: string, payload?: object) {
  const res = await s.app.inject({ method, url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
}

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ SMTP_URL: smtp.url, INSTANCE_TITLE: TITLE });
  client = await createApp(s.app, 'read write follow push');
  otherClient = await createApp(s.app, 'read write follow push');
}, 60_000);
afterAll(async () => {
  await s?.close();
  await smtp?.stop();
});

describe('mail kinds', () => {
  it('confirmation: a link with a fresh token, stored only hashed, that works once', async () => {
    const p = await person('conny', { confirmed: false });
    const row = await send({ type: 'confirmation', userId: p.user.id });
    const m = await smtp.waitFor(to(p.email));
    expectWellFormed(m);
    expect(m.subject).toBe(`Confirm your e-mail address for ${TITLE}`);
    const link = linkIn(m, `${HOME}/auth/confirmation?`);
    const token = link.searchParams.get('confirmation_token')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { rows } = await s.ctx.db.query('SELECT confirmation_token_hash FROM users WHERE id = $1', [p.user.id]);
    expect(rows[0].confirmation_token_hash).not.toBe(token);
    expect(rows[0].confirmation_token_hash).toBe(hashSecret(token));
    expect(m.raw).not.toContain(rows[0].confirmation_token_hash);
    expect((await takeMailToken(s.ctx.db, 'confirmation', hashSecret(token), 3600))?.id).toBe(p.user.id);
    expect(await takeMailToken(s.ctx.db, 'confirmation', hashSecret(token), 3600)).toBeNull();
    expect(await eventually(() => outboxRow(row.id), 0)).toBe(0);
    expect(mailsTo(p.email)).toHaveLength(1);
  });

  it('confirmation of a new address goes to the new address; none once confirmed', async () => {
    const p = await person('renata');
    await s.ctx.db.query('UPDATE users SET unconfirmed_email = $2 WHERE id = $1', [p.user.id, 'renata.new@example.com']);
    await send({ type: 'confirmation', userId: p.user.id });
    const m = await smtp.waitFor(to('renata.new@example.com'));
    expect(m.subject).toBe(`Confirm your new e-mail address on ${TITLE}`);
    expect(m.text).toContain('renata.new@example.com');
    linkIn(m, `${HOME}/auth/confirmation?confirmation_token=`);
    expect(mailsTo(p.email)).toHaveLength(0);

    // Confirmed meanwhile, with no new address waiting: nothing is sent, and the job is done.
    await confirmEmail(s.ctx.db, p.user.id);
    const row = await send({ type: 'confirmation', userId: p.user.id });
    expect(await eventually(() => outboxRow(row.id), 0)).toBe(0);
    expect(mailsTo('renata.new@example.com')).toHaveLength(1);
  });

  it('reset_password: a one-hour link, stored hashed, and says nothing changes otherwise', async () => {
    const p = await person('paula');
    await send({ type: 'reset_password', userId: p.user.id });
    const m = await smtp.waitFor(to(p.email));
    expectWellFormed(m);
    expect(m.subject).toBe(`Reset your password on ${TITLE}`);
    expect(m.text).toContain('expires in one hour');
    expect(m.text).toMatch(/did not ask for this.*nothing changes/s);
    const token = linkIn(m, `${HOME}/auth/password/edit?`).searchParams.get('reset_password_token')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { rows } = await s.ctx.db.query('SELECT reset_password_token_hash FROM users WHERE id = $1', [p.user.id]);
    expect(rows[0].reset_password_token_hash).toBe(hashSecret(token));
    expect((await takeMailToken(s.ctx.db, 'reset_password', hashSecret(token), 3600))?.id).toBe(p.user.id);
    expect(await takeMailToken(s.ctx.db, 'reset_password', hashSecret(token), 3600)).toBeNull();
  });

  it('approved links to sign-in; rejected needs no user row', async () => {
    const p = await person('april');
    await send({ type: 'approved', userId: p.user.id });
    const approved = await smtp.waitFor(to(p.email));
    expectWellFormed(approved);
    expect(approved.subject).toBe(`Your account on ${TITLE} has been approved`);
    expect(linkIn(approved, `${HOME}/auth/sign_in`).pathname).toBe('/auth/sign_in');

    await send({ type: 'rejected', email: 'gone@example.com', username: 'gone<b>' });
    const rejected = await smtp.waitFor(to('gone@example.com'));
    expectWellFormed(rejected);
    expect(rejected.subject).toBe(`Your sign-up on ${TITLE} was not approved`);
    expect(rejected.text).toContain('Hello gone<b>,');
    // Escaped in HTML.
    expect(rejected.html).toContain('Hello gone&lt;b&gt;,');
  });

  it('email_changed warns the old address of the new one', async () => {
    const p = await person('oldie');
    await send({ type: 'email_changed', userId: p.user.id, newEmail: 'oldie.new@example.com' });
    const m = await smtp.waitFor(to(p.email));
    expectWellFormed(m);
    expect(m.text).toContain('oldie.new@example.com');
    expect(m.html).toContain('oldie.new@example.com');
    expect(smtp.messages.some((x) => x.envelopeTo.includes('oldie.new@example.com'))).toBe(false);
  });

  it('does nothing, once said, with mail off', async () => {
    const said: string[] = [];
    const log = { info: (_: object, msg: string) => said.push(msg), warn: () => {}, error: () => {} };
    const off = { config: { smtp: null } } as unknown as AppContext;
    expect(mailEnabled(off.config)).toBe(false);
    expect(mailEnabled(s.config)).toBe(true);
    expect(await sendMailJob(off, { mail: { type: 'rejected', email: 'x@example.com', username: 'x' } }, undefined, log)).toBe('off');
    expect(await sendMailJob(off, { mail: { type: 'rejected', email: 'y@example.com', username: 'y' } }, undefined, log)).toBe('off');
    expect(said).toHaveLength(1);
  });
});

describe('the outbox and retries', () => {
  it('writes the row in the caller\'s transaction: a rollback sends nothing', async () => {
    const rolledBack = `SELECT count(*)::int AS n FROM outbox WHERE kind = 'sendMail' AND payload->'mail'->>'email' = 'rolledback@example.com'`;
    await expect(transaction(s.ctx.db, async (tx) => {
      const row = await queueMail(tx, { type: 'rejected', email: 'rolledback@example.com', username: 'rb' });
      // Not visible outside the transaction before it commits.
      expect(await outboxRow(row.id)).toBe(0);
      throw new Error('changed my mind');
    })).rejects.toThrow('changed my mind');
    expect((await s.ctx.db.query(rolledBack)).rows[0].n).toBe(0);
    // A committed one, for comparison, arrives; the rolled-back one never does.
    await send({ type: 'rejected', email: 'committed@example.com', username: 'c' });
    await smtp.waitFor(to('committed@example.com'));
    expect(smtp.recipientAttempts.get('rolledback@example.com')).toBeUndefined();
  });

  it('retries while the SMTP server is down, and delivers once it is back', async () => {
    await smtp.stop();
    try {
      const row = await send({ type: 'rejected', email: 'patient@example.com', username: 'patient' });
      const jobId = `outbox-${row.id}`;
      // The first attempt fails (connection refused): the job waits for its retry, its outbox row kept.
      const waiting = await eventually(async () => {
        const job = await s.ctx.jobs.fanout.getJob(jobId);
        return job && job.attemptsMade >= 1 ? await job.getState() : 'not yet';
      }, 'delayed', 5000);
      expect(waiting).toBe('delayed');
      const job = (await s.ctx.jobs.fanout.getJob(jobId))!;
      expect(job.opts.attempts).toBeGreaterThanOrEqual(8);
      expect(job.opts.backoff).toMatchObject({ type: 'exponential' });
      expect(await outboxRow(row.id)).toBe(1);
      expect(mailsTo('patient@example.com')).toHaveLength(0);
      await smtp.start();
      // Its backoff is 10 s; the test does not wait for it.
      await job.promote();
      const m = await smtp.waitFor(to('patient@example.com'));
      expectWellFormed(m);
      expect(await eventually(() => outboxRow(row.id), 0)).toBe(0);
    } finally {
      await smtp.start().catch(() => {});
    }
  });

  it('lets the last attempt take the outbox row with it', async () => {
    await smtp.stop();
    try {
      const row = await transaction(s.ctx.db, (tx) => queueMail(tx, { type: 'rejected', email: 'late@example.com', username: 'late' }));
      const job = { outboxId: row.id, mail: row.payload.mail as Mail };
      await expect(sendMailJob(s.ctx, job, { attemptsMade: 0, opts: { attempts: 10 } })).rejects.toThrow();
      expect(await outboxRow(row.id)).toBe(1);
      await expect(sendMailJob(s.ctx, job, { attemptsMade: 9, opts: { attempts: 10 } })).rejects.toThrow();
      expect(await outboxRow(row.id)).toBe(0);
    } finally {
      await smtp.start();
    }
  });

  it('gives up at once on a recipient refused with a 5xx', async () => {
    smtp.refuse.add('nobody@example.com');
    const row = await send({ type: 'rejected', email: 'nobody@example.com', username: 'nobody' });
    const jobId = `outbox-${row.id}`;
    expect(await eventually(async () => (await s.ctx.jobs.fanout.getJob(jobId))?.getState(), 'failed', 5000)).toBe('failed');
    const job = (await s.ctx.jobs.fanout.getJob(jobId))!;
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toContain('mail refused');
    // Its row goes too, so the sweeper does not start it over.
    expect(await outboxRow(row.id)).toBe(0);
    // Nothing left that could try it again.
    expect(await eventually(drained, true, 10_000)).toBe(true);
    expect(smtp.recipientAttempts.get('nobody@example.com')).toBe(1);
  });

  it('tells refusals for good from what may pass later', () => {
    expect(refusedForGood({ name: 'Error', message: '', code: 'EENVELOPE', command: 'RCPT TO', responseCode: 550 })).toBe(true);
    expect(refusedForGood({ name: 'Error', message: '', code: 'EMESSAGE', command: 'DATA', responseCode: 554 })).toBe(true);
    expect(refusedForGood({ name: 'Error', message: '', code: 'EENVELOPE', command: 'API' })).toBe(true);
    expect(refusedForGood({ name: 'Error', message: '', code: 'EENVELOPE', command: 'RCPT TO', responseCode: 450 })).toBe(false);
    expect(refusedForGood({ name: 'Error', message: '', code: 'EENVELOPE', command: 'RCPT TO', responseCode: 503 })).toBe(false);
    expect(refusedForGood({ name: 'Error', message: '', code: 'EAUTH', command: 'AUTH PLAIN', responseCode: 535 })).toBe(false);
    expect(refusedForGood({ name: 'Error', message: '', code: 'ESOCKET' })).toBe(false);
  });
});

describe('POST /api/v1/emails/confirmations', () => {
  it('sends the confirmation again to an unconfirmed user, through the app they signed up with', async () => {
    const p = await person('fresh', { confirmed: false });
    // Other API routes refuse the unconfirmed login; this one serves it.
    expect((await api(p.token, 'GET', '/api/v1/accounts/verify_credentials')).body.error).toBe('Your login is missing a confirmed e-mail address');
    expect(await api(p.token, 'GET', '/api/v1/emails/check_confirmation')).toEqual({ status: 200, body: false });
    const res = await api(p.token, 'POST', '/api/v1/emails/confirmations');
    expect(res).toEqual({ status: 200, body: {} });
    const m = await smtp.waitFor(to(p.email));
    const token = linkIn(m, `${HOME}/auth/confirmation?`).searchParams.get('confirmation_token')!;
    expect((await takeMailToken(s.ctx.db, 'confirmation', hashSecret(token), 3600))?.id).toBe(p.user.id);
  });

  it('corrects the address first when `email` is given', async () => {
    const p = await person('typo', { confirmed: false });
    const res = await api(p.token, 'POST', '/api/v1/emails/confirmations', { email: 'typo.fixed@example.com' });
    expect(res.status).toBe(200);
    const m = await smtp.waitFor(to('typo.fixed@example.com'));
    linkIn(m, `${HOME}/auth/confirmation?confirmation_token=`);
    const user = (await findUserById(s.ctx.db, p.user.id))!;
    expect(user.unconfirmed_email).toBe('typo.fixed@example.com');
    expect(user.email).toBe(p.email);
    expect(mailsTo(p.email)).toHaveLength(0);

    const bad = await api(p.token, 'POST', '/api/v1/emails/confirmations', { email: 'not an address' });
    expect(bad.status).toBe(422);
    const taken = await api(p.token, 'POST', '/api/v1/emails/confirmations', { email: 'conny@example.com' });
    expect(taken.status).toBe(422);
    expect(taken.body.error).toMatch(/email is already taken/);
  });

  it('refuses as Mastodon does', async () => {
    const confirmed = await person('settled');
    const refused = await api(confirmed.token, 'POST', '/api/v1/emails/confirmations');
    expect(refused).toEqual({ status: 403, body: { error: 'This method is only available while the e-mail is awaiting confirmation' } });
    expect(await api(confirmed.token, 'GET', '/api/v1/emails/check_confirmation')).toEqual({ status: 200, body: true });

    // A token of another app than the one the user signed up with.
    const p = await person('elsewhere', { confirmed: false });
    const otherToken = randomBytes(24).toString('base64url');
    await insertAccessToken(s.ctx.db, { token: otherToken, applicationId: otherClient.id, userId: p.user.id, scopes: 'read write' });
    const wrongApp = await api(otherToken, 'POST', '/api/v1/emails/confirmations');
    expect(wrongApp).toEqual({ status: 403, body: { error: 'This method is only available to the application the user originally signed-up with' } });
    // An app's own token has no user.
    const appOnly = randomBytes(24).toString('base64url');
    await insertAccessToken(s.ctx.db, { token: appOnly, applicationId: client.id, userId: null, scopes: 'read write' });
    expect((await api(appOnly, 'POST', '/api/v1/emails/confirmations')).status).toBe(403);
    // Scopes: write:accounts.
    const readOnly = randomBytes(24).toString('base64url');
    await insertAccessToken(s.ctx.db, { token: readOnly, applicationId: client.id, userId: p.user.id, scopes: 'read' });
    expect((await api(readOnly, 'POST', '/api/v1/emails/confirmations')).body.error).toBe('This action is outside the authorized scopes');
    expect((await api(null, 'POST', '/api/v1/emails/confirmations')).status).toBe(401);
    expect(mailsTo(p.email)).toHaveLength(0);
  });
});

describe('operator alerts', () => {
  let admin: Person;
  let admin2: Person;

  beforeAll(async () => {
    admin = await person('opal', { admin: true });
    admin2 = await person('otto', { admin: true });
    // Disabled and unconfirmed admins are not told.
    const off = await person('olaf', { admin: true });
    await s.ctx.db.query('UPDATE users SET disabled = true WHERE id = $1', [off.user.id]);
  });

  const notifications = async (who: Person, type: string) =>
    (await api(who.token, 'GET', `/api/v1/notifications?types[]=${type}`)).body as { type: string; account: { id: string }; report?: { id: string; target_account: { id: string } } }[];

  it('a sign-up: admin.sign_up notifications and a mail to each operator', async () => {
    const newcomer = await person('newbie', { approved: false });
    const rows = await transaction(s.ctx.db, (tx) => alertOperatorsOfSignUp(tx, s.ctx, { userId: newcomer.user.id, accountId: newcomer.account.id }));
    expect(rows).toHaveLength(2);
    await s.ctx.jobs.enqueueMany(rows);
    for (const op of [admin, admin2]) {
      const m = await smtp.waitFor(to(op.email, /newbie/));
      expectWellFormed(m);
      expect(m.subject).toBe(`New account up for review on ${TITLE} (newbie)`);
      expect(m.text).toContain('waits for approval');
      expect(linkIn(m, `${HOME}/admin/approvals`).pathname).toBe('/admin/approvals');
      const got = await notifications(op, 'admin.sign_up');
      expect(got.map((n) => [n.type, n.account.id])).toContainEqual(['admin.sign_up', newcomer.account.id]);
      expectEntity('Notification', got.find((n) => n.account.id === newcomer.account.id));
    }
    expect(mailsTo('olaf@example.com')).toHaveLength(0);

    // Open sign-ups: the mail says no approval is needed.
    const open = await person('opener');
    await setApproved(s.ctx.db, open.user.id, true);
    await s.ctx.jobs.enqueueMany(await transaction(s.ctx.db, (tx) => alertOperatorsOfSignUp(tx, s.ctx, { userId: open.user.id, accountId: open.account.id })));
    const m = await smtp.waitFor(to(admin.email, /opener/));
    expect(m.subject).toBe(`New sign-up on ${TITLE} (opener)`);
    expect(m.text).toContain('does not need approval');
  });

  it('a report: admin.report notifications with the report, and a mail linking to it', async () => {
    const reporter = await person('rita');
    const target = await person('troll');
    const filed = await api(reporter.token, 'POST', '/api/v1/reports', { account_id: target.account.id, comment: 'not nice <at all>', category: 'spam' });
    expect(filed.status, JSON.stringify(filed.body)).toBe(200);
    const reportId = filed.body.id as string;
    for (const op of [admin, admin2]) {
      const m = await smtp.waitFor(to(op.email, new RegExp(`#${reportId}`)));
      expectWellFormed(m);
      expect(m.subject).toBe(`New report for ${TITLE} (#${reportId})`);
      expect(m.text).toContain('rita reported troll');
      expect(m.text).toContain('not nice <at all>');
      expect(m.html).toContain('not nice &lt;at all&gt;');
      expect(linkIn(m, `${HOME}/admin/reports/`).pathname).toBe(`/admin/reports/${reportId}`);
      const got = await eventually(async () => (await notifications(op, 'admin.report')).filter((n) => n.report?.id === reportId).length, 1);
      expect(got).toBe(1);
      const n = (await notifications(op, 'admin.report')).find((x) => x.report?.id === reportId)!;
      expect(n.account.id).toBe(reporter.account.id);
      expect(n.report!.target_account.id).toBe(target.account.id);
      expectEntity('Notification', n);
    }
    // The reporter hears nothing of it.
    expect(await notifications(reporter, 'admin.report')).toHaveLength(0);

    // Another report about the same account while this one is open: the operators know already (Mastodon's rule).
    const again = await api(admin2.token, 'POST', '/api/v1/reports', { account_id: target.account.id, comment: 'still' });
    expect(again.status).toBe(200);
    // Whatever the report queued has run (a mail would have been sent by then).
    expect(await eventually(drained, true, 10_000)).toBe(true);
    expect(smtp.messages.filter((m) => m.subject.includes(`#${again.body.id}`))).toHaveLength(0);
  });
});
