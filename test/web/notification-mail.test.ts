import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, type RegisteredApp } from '../helpers/oauth.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { eventually } from '../helpers/eventually.ts';
import { WebClient } from '../helpers/web.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { queueDigests } from '../../services/notification-emails.ts';

/** Mail about notifications: what is mailed, what is not, the unsubscribe link, and the daily digest. */
let s: TestServer;
let smtp: TestSmtp;
let client: RegisteredApp;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ SMTP_URL: smtp.url, LOCAL_DOMAIN: 'notify.test' });
  client = await createApp(s.app);
});
afterAll(async () => {
  await s?.close();
  await smtp?.stop();
});

interface Person { name: string; accountId: string; userId: string; email: string; password: string; token: string }

async function person(name: string): Promise<Person> {
  const email = `${name}@example.com`;
  const password = `pw-${name}-long-enough`;
  const { account, user } = await registerLocalAccount(s.ctx.db, { username: name, email, password, agreement: true, approved: true, confirmed: true });
  return { name, accountId: account.id, userId: user.id, email, password, token: await authorizationCodeToken(s.app, client, email, password) };
}

const api = async (who: Person, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: Record<string, unknown>) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const post = (who: Person, status: string, visibility = 'public') => api(who, 'POST', '/api/v1/statuses', { status, visibility });
const settled = () => eventually(() => workSettled(s.ctx), true, 10_000);
const mailsTo = (who: Person) => smtp.messages.filter((m) => m.envelopeTo.includes(who.email));

describe('notification mail', () => {
  it('mails a mention with one-click unsubscribe headers; the link works without a session, a tampered one is refused', async () => {
    const [alice, bob] = [await person('alice'), await person('bob')];
    const status = await post(bob, '@alice lunch at noon?');
    const mail = await smtp.waitFor((m) => m.envelopeTo.includes(alice.email));
    expect(mail.subject).toBe('You were mentioned by bob');
    expect(mail.text).toContain('lunch at noon?');
    expect(mail.text).toContain(`http://notify.test/@bob/${status.id}`);
    expect(mail.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const url = /^<(http:\/\/notify\.test\/unsubscribe\?token=[^>]+)>$/.exec(mail.headers.get('list-unsubscribe') ?? '')?.[1];
    expect(url, mail.headers.get('list-unsubscribe')).toBeTruthy();
    const path = url!.replace('http://notify.test', '');

    // A tampered token (another kind under the same signature) is refused, on the page and to the one-click POST.
    const tampered = path.replace('.mention.', '.favourite.');
    expect((await s.app.inject({ method: 'GET', url: tampered })).statusCode).toBe(404);
    const forged = await s.app.inject({ method: 'POST', url: tampered, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'List-Unsubscribe=One-Click' });
    expect(forged.statusCode).toBe(404);

    // Opening the link only asks; the mail client's one-click POST (no cookie, no form token) unsubscribes.
    const page = await s.app.inject({ method: 'GET', url: path });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('mails about mentions');
    const choice = async () => (await s.ctx.db.query(`SELECT notification_emails->'mention' AS on FROM users WHERE id = $1`, [alice.userId])).rows[0].on;
    expect(await choice()).toBeNull();
    const oneClick = await s.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'List-Unsubscribe=One-Click' });
    expect(oneClick.statusCode).toBe(200);
    expect(await choice()).toBe(false);
    // The page's own button (no session either) answers with a redirect to fixed words.
    const token = new URL(url!).searchParams.get('token')!;
    const form = await s.app.inject({ method: 'POST', url: '/unsubscribe', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token }).toString() });
    expect(form.statusCode).toBe(303);
    expect((await s.app.inject({ method: 'GET', url: form.headers.location as string })).body).toContain('You will no longer get mails about mentions.');

    await post(bob, '@alice and dinner?');
    await settled();
    expect(mailsTo(alice)).toHaveLength(1);
  });

  it('mails nothing for a kind that is off: favourites by default, follows once turned off on the settings page', async () => {
    const [carol, dan] = [await person('carol'), await person('dan')];
    const browser = new WebClient(s.app);
    expect((await browser.signIn(carol.email, carol.password)).statusCode).toBe(303);
    const page = await browser.get('/settings/preferences/notifications');
    expect(page.body).toMatch(/name="follow" type="checkbox" value="1" checked/);
    expect(page.body).not.toMatch(/name="favourite" type="checkbox" value="1" checked/);
    const saved = await browser.post('/settings/preferences/notifications', { mention: '1', follow_request: '1' }, page.body);
    expect(saved.statusCode).toBe(303);

    const status = await post(carol, 'a quiet post');
    await api(dan, 'POST', `/api/v1/statuses/${status.id}/favourite`);
    await api(dan, 'POST', `/api/v1/accounts/${carol.accountId}/follow`);
    await settled();
    const kinds = (await s.ctx.db.query(`SELECT type FROM notifications WHERE account_id = $1 ORDER BY id`, [carol.accountId])).rows.map((r) => r.type);
    expect(kinds).toEqual(['favourite', 'follow']);
    expect(mailsTo(carol)).toHaveLength(0);
  });

  it('mails nothing for a notification the notification policy files away', async () => {
    const [erin, frank] = [await person('erin'), await person('frank')];
    await api(erin, 'PATCH', '/api/v2/notifications/policy', { for_not_following: 'filter' });
    await post(frank, '@erin buy my course');
    await settled();
    const { rows } = await s.ctx.db.query(`SELECT filtered FROM notifications WHERE account_id = $1`, [erin.accountId]);
    expect(rows).toEqual([{ filtered: true }]);
    expect(mailsTo(erin)).toHaveLength(0);
  });

  it('sends one daily digest with the counts to a person away with unread notifications, and none again until more arrive', async () => {
    const [gina, hal, ivy] = [await person('gina'), await person('hal'), await person('ivy')];
    const browser = new WebClient(s.app);
    await browser.signIn(gina.email, gina.password);
    const page = await browser.get('/settings/preferences/notifications');
    expect((await browser.post('/settings/preferences/notifications', { digest: '1' }, page.body)).statusCode).toBe(303);
    const status = await post(gina, 'tell me what you think');
    for (const fan of [hal, ivy]) await api(fan, 'POST', `/api/v1/statuses/${status.id}/favourite`);
    await api(hal, 'POST', `/api/v1/accounts/${gina.accountId}/follow`);

    // Active (a page opened in the last day): no digest yet.
    expect(await queueDigests(s.ctx)).toBe(0);
    await s.ctx.db.query(`UPDATE web_sessions SET last_active_at = now() - interval '2 days' WHERE user_id = $1`, [gina.userId]);
    expect(await queueDigests(s.ctx)).toBe(1);
    const digest = await smtp.waitFor((m) => m.envelopeTo.includes(gina.email) && /new notifications/.test(m.subject));
    expect(digest.subject).toBe('3 new notifications since your last visit to notify.test');
    expect(digest.text).toContain('2 favourites, 1 new follower');
    expect(digest.text).toContain('hal (@hal) is now following you');
    expect(digest.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    expect(await queueDigests(s.ctx)).toBe(0);

    // One-click as multipart/form-data, the other form RFC 8058 allows.
    const url = /^<http:\/\/notify\.test(\/unsubscribe\?token=[^>]+)>$/.exec(digest.headers.get('list-unsubscribe') ?? '')![1]!;
    const boundary = 'one-click-boundary';
    const res = await s.app.inject({
      method: 'POST', url, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect((await s.ctx.db.query(`SELECT notification_digest FROM users WHERE id = $1`, [gina.userId])).rows[0].notification_digest).toBe(false);
  });
});
