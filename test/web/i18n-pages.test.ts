// The pages and mail in German from end to end: a sample of the pages a person and a visitor see, each searched for
// English words left in what a reader sees (text, alt and labels), the services' refusals said in German on the page
// that shows them, and mail in the recipient's interface language.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Parser } from 'htmlparser2';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authorizationCodeToken, bearer, createApp, type TestUser } from '../helpers/oauth.ts';
import { registerLocalAccount } from '../../services/accounts.ts';
import { WebClient } from '../helpers/web.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses

/**
 * Words of English that German never uses, the give-away of a sentence left untranslated (German shares many words
 * with English, "Filter", "Link", "App", "Follower", "Hashtag", which are left out).
 */
const ENGLISH = new Set([
  'the', 'and', 'you', 'your', 'with', 'this', 'that', 'these', 'are', 'have', 'has', 'not', 'from', 'for', 'of', 'to', 'is',
  'it', 'be', 'by', 'or', 'on', 'all', 'can', 'may', 'who', 'what', 'when', 'where', 'here', 'there', 'more', 'only', 'yet',
  'new', 'post', 'posts', 'account', 'accounts', 'settings', 'save', 'delete', 'follow', 'followers', 'following', 'sign',
  'password', 'people', 'none', 'back', 'older', 'newer', 'newest', 'nothing', 'lists', 'choose', 'search', 'reply',
  'favourite', 'bookmark', 'bookmarks', 'edit', 'block', 'mute', 'unfollow', 'request', 'requests', 'notifications', 'show',
  'hide', 'make', 'change', 'add', 'remove', 'cancel', 'send', 'yours', 'been', 'no', 'any', 'about', 'turn', 'off', 'keep',
]);

/** Elements whose words are not the page's: what people wrote, names, handles, codes, the operator's texts. */
const NOT_OURS = new Set(['status-content', 'display-name', 'handle', 'profile-note', 'about-text', 'policy-text', 'token', 'scheduled-text', 'domain-name']);
const SKIPPED_TAGS = new Set(['script', 'style', 'head', 'code', 'pre', 'textarea']);

/** The English words a reader of the page would meet: its text, and its images' and controls' words. */
function englishLeft(html: string): string[] {
  const found: string[] = [];
  const stack: boolean[] = [];
  const skipping = () => stack.includes(true);
  const check = (text: string) => {
    for (const w of text.match(/\p{L}+/gu) ?? []) if (ENGLISH.has(w.toLowerCase())) found.push(`${w} in “${text.trim().slice(0, 80)}”`);
  };
  const parser = new Parser({
    onopentag(name, attrs) {
      const skip = SKIPPED_TAGS.has(name) || (attrs.class ?? '').split(/\s+/).some((c) => NOT_OURS.has(c));
      if (!['img', 'input', 'br', 'meta', 'link', 'hr'].includes(name)) stack.push(skip);
      if (skip || skipping()) return;
      for (const a of ['alt', 'aria-label', 'title', 'placeholder']) if (attrs[a]) check(attrs[a]);
    },
    ontext(text) {
      if (!skipping()) check(text);
    },
    onclosetag(name) {
      if (!['img', 'input', 'br', 'meta', 'link', 'hr'].includes(name)) stack.pop();
    },
  }, { decodeEntities: true });
  parser.write(html);
  parser.end();
  return found;
}

let s: TestServer;
let smtp: TestSmtp;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let web: WebClient;
const api = async (who: TestUser, method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await s.app.inject({ method, url, headers: bearer(who.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(300);
  return res.json<Json>();
};

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ SMTP_URL: smtp.url, INSTANCE_DESCRIPTION: 'Ein kleiner Server zum Ausprobieren.' });
  // With mail on, people are made confirmed (as if they had followed their link) and sign in for their tokens.
  const client = await createApp(s.app);
  const person = async (username: string): Promise<TestUser> => {
    const email = `${username}@example.com`;
    const password = `pw-${username}-long-enough`;
    const { account } = await registerLocalAccount(s.ctx.db, { username, email, password, agreement: true, approved: true, confirmed: true, locale: 'en' });
    return { id: account.id, username, email, password, token: await authorizationCodeToken(s.app, client, email, password) };
  };
  [alice, bob, carol] = [await person('alice'), await person('bob'), await person('carol')];
  // Alice chooses German on Appearance.
  web = new WebClient(s.app);
  expect((await web.signIn(alice.email, alice.password)).statusCode).toBe(303);
  const saved = await web.submit('/settings/appearance', '/settings/appearance', { locale: 'de', theme: 'system' });
  expect(saved.statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
  await smtp?.stop();
});

describe('pages in German', () => {
  it('leave no English in what a signed-in person reads, with things to show on each', async () => {
    await api(alice, 'POST', `/api/v1/accounts/${bob.id}/follow`);
    await api(bob, 'POST', `/api/v1/accounts/${alice.id}/follow`);
    const mine = await api(alice, 'POST', '/api/v1/statuses', { status: 'Guten Morgen #garten', poll: { options: ['Ja', 'Nein'], expires_in: 3600 } });
    const bobs = await api(bob, 'POST', '/api/v1/statuses', { status: 'Ein Zitat', quoted_status_id: mine.id, spoiler_text: 'Garten' });
    await api(bob, 'POST', `/api/v1/statuses/${mine.id}/favourite`);
    await api(alice, 'POST', `/api/v1/statuses/${bobs.id}/bookmark`);
    await api(alice, 'POST', `/api/v1/statuses/${bobs.id}/favourite`);
    const list = await api(alice, 'POST', '/api/v1/lists', { title: 'Freunde' });
    await api(alice, 'POST', `/api/v1/lists/${list.id}/accounts`, { account_ids: [bob.id] });
    const filter = await api(alice, 'POST', '/api/v2/filters', { title: 'Wetter', context: ['home'], keywords_attributes: [{ keyword: 'Regen' }] });
    await api(alice, 'POST', '/api/v1/tags/garten/follow');
    await api(alice, 'POST', `/api/v1/accounts/${carol.id}/mute`, { duration: 3600 });
    await api(alice, 'POST', '/api/v1/domain_blocks', { domain: 'laut.example' });
    await api(alice, 'POST', '/api/v1/statuses', { status: 'Später', scheduled_at: new Date(Date.now() + 3_600_000).toISOString() });
    const pages = [
      '/home', '/notifications', '/notifications/requests', '/notifications/policy', '/explore', '/search?q=bob', '/search?q=%23garten',
      '/lists', `/lists/${list.id}`, '/filters', `/filters/${filter.id}`, '/followed_tags', '/featured_tags', '/mutes', '/blocks',
      '/domain_blocks', '/follow_requests', '/bookmarks', '/favourites', '/scheduled_statuses', '/publish', `/publish?quote=${mine.id}`,
      '/@bob', '/@alice', `/@alice/${mine.id}`, `/@bob/${bobs.id}`, `/statuses/${mine.id}/delete`, '/tags/garten', '/public/local', '/public',
      '/settings/profile', '/settings/preferences', '/settings/preferences/notifications', '/settings/appearance', '/settings/account',
      '/settings/two_factor', '/settings/security_keys', '/settings/applications', '/settings/development', '/statuses_cleanup',
      '/settings/export', '/settings/import', '/settings/migration', '/settings/delete', '/disputes/strikes', '/auth/sign_out',
    ];
    const left: Record<string, string[]> = {};
    for (const path of pages) {
      const page = await web.get(path);
      expect(page.statusCode, path).toBe(200);
      expect(page.body, path).toContain('<html lang="de"');
      const words = englishLeft(page.body);
      if (words.length > 0) left[path] = words;
    }
    expect(left).toEqual({});
    // The check finds English where there is some: the same page in English.
    await web.submit('/settings/appearance', '/settings/appearance', { locale: 'en', theme: 'system' });
    expect(englishLeft((await web.get('/lists')).body).length).toBeGreaterThan(3);
    await web.submit('/settings/appearance', '/settings/appearance', { locale: 'de', theme: 'system' });
  });

  it('leave no English in what a visitor asking for German reads', async () => {
    const mine = await api(alice, 'POST', '/api/v1/statuses', { status: 'Hallo zusammen' });
    const visitor = new WebClient(s.app);
    const de = { 'accept-language': 'de-DE,de;q=0.9' };
    const left: Record<string, string[]> = {};
    for (const [path, status] of [
      ['/about', 200], ['/@alice', 200], ['/@alice/with_replies', 200], ['/@alice/media', 200], [`/@alice/${mine.id}`, 200], ['/tags/garten', 200],
      ['/auth/sign_in', 200], ['/auth/sign_up', 200], ['/auth/password/new', 200], ['/auth/confirmation/new', 200],
      ['/nowhere/at/all', 404], ['/@nobody', 404], [`/remote_interaction?uri=${encodeURIComponent(`${s.ctx.config.publicUrl}/@alice`)}`, 200],
    ] as const) {
      const page = await visitor.get(path, de);
      expect(page.statusCode, path).toBe(status);
      expect(page.body, path).toContain('<html lang="de"');
      const words = englishLeft(page.body);
      if (words.length > 0) left[path] = words;
    }
    expect(left).toEqual({});
  });
});

describe('refusals in German', () => {
  it('say the services\' refusals in the page\'s language, as the API words them in English', async () => {
    // A list without a title: the service's words, in German on the page, in Mastodon's English from the API.
    const lists = await web.get('/lists');
    const blank = await web.post('/lists', { title: ' ' }, lists.body);
    expect(blank.statusCode).toBe(422);
    expect(blank.body).toContain('Der Titel darf nicht leer sein.');
    const viaApi = await s.app.inject({ method: 'POST', url: '/api/v1/lists', headers: bearer(alice.token), payload: { title: ' ' } });
    expect([viaApi.statusCode, viaApi.json()]).toEqual([422, { error: "Validation failed: Title can't be blank" }]);
    // A server that is no server.
    const domains = await web.get('/domain_blocks');
    const bad = await web.post('/domain_blocks', { domain: 'not a domain' }, domains.body);
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('Die Domain ist kein gültiger Domainname.');
    // A post too long, on the compose form.
    const home = await web.get('/home');
    const long = await web.post('/statuses', { status: 'x'.repeat(s.ctx.config.maxStatusChars + 1), idempotency_key: 'too-long', return_to: '/home' }, home.body);
    expect(long.statusCode).toBe(422);
    expect(long.body).toContain(`Die Zeichenbegrenzung von ${s.ctx.config.maxStatusChars} wurde überschritten.`);
    // The wrong password where the settings ask for it.
    const account = await web.get('/settings/account');
    const wrong = await web.post('/settings/account/password', { current_password: 'not it', password: 'a new long password', password_confirmation: 'a new long password' }, account.body);
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain('Das aktuelle Passwort ist falsch.');
    // A page that is not there, for a browser asking for German.
    const missing = await new WebClient(s.app).get('/@alice/123', { 'accept-language': 'de' });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain('Seite nicht gefunden');
  });
});

describe('mail in the interface language', () => {
  it('sends a person who chose German their mail in German, and one who did not in English', async () => {
    // Someone joins from a German browser: the confirmation mail is German.
    const visitor = new WebClient(s.app);
    const form = await visitor.get('/auth/sign_up', { 'accept-language': 'de' });
    const body = new URLSearchParams({
      _csrf: /name="_csrf" value="([^"]*)"/.exec(form.body)![1]!, username: 'dora', email: 'dora@example.test',
      password: 'a long password', password_confirmation: 'a long password', agreement: '1',
    }).toString();
    const joined = await s.app.inject({ method: 'POST', url: '/auth/sign_up', payload: body, headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-language': 'de', cookie: visitor.jar.header() } });
    expect(joined.statusCode).toBe(303);
    const confirmation = await smtp.waitFor((m) => m.envelopeTo.includes('dora@example.test'));
    expect(confirmation.subject).toBe(`Bestätige deine E-Mail-Adresse für ${s.ctx.config.instanceTitle}`);
    expect(confirmation.text).toContain('Hallo dora,');
    expect(confirmation.text).toContain('Der Link funktioniert einmal, 2 Tage lang.');
    expect(confirmation.html).toContain('<html lang="de">');
    expect(confirmation.html).toContain('E-Mail-Adresse bestätigen');
    // Alice (German) is mentioned: the notification mail is German; carol (English) gets hers in English.
    await api(bob, 'POST', '/api/v1/statuses', { status: '@alice @carol Mittagessen?' });
    // (Alice was mailed of bob's follow before, in German too: "bob folgt dir jetzt".)
    const toAlice = await smtp.waitFor((m) => m.envelopeTo.includes(alice.email) && m.subject.includes('erwähnt'));
    expect(toAlice.subject).toBe('bob hat dich erwähnt');
    expect(toAlice.text).toContain('Beitrag ansehen:');
    expect(toAlice.text).toContain('Du bekommst diese E-Mail, weil du E-Mails zu Erwähnungen gewählt hast.');
    const toCarol = await smtp.waitFor((m) => m.envelopeTo.includes(carol.email) && m.subject.includes('mentioned'));
    expect(toCarol.subject).toBe('You were mentioned by bob');
    expect(toCarol.text).toContain('You get this mail because you chose mail for mentions.');
  });
});
