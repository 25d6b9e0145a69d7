// The pages in the reader's language (http/web/i18n.ts): a signed-in person's interface language, a visitor's
// Accept-Language, English for anything else; `<html lang>` says which; words given to a translated sentence are
// escaped like any other value; a stranger's cached public page is kept once per language.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { WebClient } from '../helpers/web.ts';

let s: TestServer;
let alice: TestUser;
let bob: TestUser;
let aliceWeb: WebClient;
let bobWeb: WebClient;

const htmlLang = (body: string) => /<html lang="([^"]*)"/.exec(body)?.[1];

async function chooseLanguage(web: WebClient, locale: string) {
  const saved = await web.submit('/settings/appearance', '/settings/appearance', { locale, theme: 'system' });
  expect([saved.statusCode, saved.headers.location]).toEqual([303, '/settings/appearance?notice=saved']);
}

beforeAll(async () => {
  s = await startTestServer();
  [alice, bob] = await registerUsers(s.app, 'alice', 'bob');
  aliceWeb = new WebClient(s.app);
  expect((await aliceWeb.signIn(alice.email, alice.password)).statusCode).toBe(303);
  bobWeb = new WebClient(s.app);
  expect((await bobWeb.signIn(bob.email, bob.password)).statusCode).toBe(303);
});
afterAll(async () => {
  await s?.close();
});

describe('a signed-in person whose interface language is German', () => {
  it('gets German navigation, compose form and settings, with <html lang="de">, whatever the browser asks', async () => {
    await chooseLanguage(aliceWeb, 'de');
    const home = await aliceWeb.get('/home', { 'accept-language': 'en-GB,en;q=0.9' });
    expect(home.statusCode).toBe(200);
    expect(htmlLang(home.body)).toBe('de');
    for (const nav of ['>Startseite</a>', '>Mitteilungen</a>', '>Entdecken</a>', '>Neuer Beitrag</a>', '>Einstellungen</a>', '>Abmelden</a>']) expect(home.body).toContain(nav);
    for (const label of ['Was gibt’s Neues?', 'Inhaltswarnung (optional)', 'Wer ihn sehen kann', 'Nur für Folgende', 'Umfrage hinzufügen', '>Veröffentlichen</button>']) expect(home.body).toContain(label);
    expect(home.body).not.toContain('>Sign out</a>');
    expect(home.body).not.toContain('s on your mind?');

    const settings = await aliceWeb.get('/settings/appearance');
    expect(htmlLang(settings.body)).toBe('de');
    expect(settings.body).toContain('<h1>Darstellung</h1>');
    expect(settings.body).toContain('Englisch und Deutsch');
    const notifications = await aliceWeb.get('/notifications');
    expect(notifications.body).toContain('<h1>Mitteilungen</h1>');
    expect(notifications.body).toContain('<title>Mitteilungen - ');
  });

  it('sees a post with German words and plurals, and German notifications of what others do', async () => {
    const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'Hallo' } });
    expect(posted.statusCode).toBe(200);
    const id = posted.json<{ id: string }>().id;
    expect((await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${id}/favourite`, headers: bearer(bob.token) })).statusCode).toBe(200);
    const page = await aliceWeb.get(`/@alice/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('0 Antworten');
    expect(page.body).toContain('1-mal favorisiert');
    expect(page.body).toContain('>Löschen</a>');
    expect(page.body).toContain('Deine Antwort');
    const notifications = await aliceWeb.get('/notifications');
    expect(notifications.body).toContain('hat deinen Beitrag favorisiert');
  });

  it('keeps a display name with markup escaped inside a translated sentence', async () => {
    const evil = '<script>alert(1)</script>';
    const changed = await s.app.inject({ method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(bob.token), payload: { display_name: evil } });
    expect(changed.statusCode).toBe(200);
    const posted = await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(bob.token), payload: { status: 'Hi' } });
    const id = posted.json<{ id: string }>().id;
    const page = await aliceWeb.get(`/@bob/${id}`);
    expect(page.statusCode).toBe(200);
    // The page's title, the reply form's heading and the buttons' hidden words all name the author.
    expect(page.body).toContain('<title>Beitrag von &lt;script&gt;alert(1)&lt;/script&gt; - ');
    expect(page.body).toContain('Antwort an &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).toContain('den Beitrag von &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).not.toContain(evil);
  });

  it('a language the pages do not speak is English, as is no choice with a browser asking for none of ours', async () => {
    await chooseLanguage(bobWeb, 'fr');
    const fr = await bobWeb.get('/home', { 'accept-language': 'fr' });
    expect(htmlLang(fr.body)).toBe('en');
    expect(fr.body).toContain('>Home</a>');
    expect(fr.body).toContain('s on your mind?');
    await chooseLanguage(bobWeb, '');
    const none = await bobWeb.get('/home', { 'accept-language': 'xx-YY, tlh;q=0.8' });
    expect(htmlLang(none.body)).toBe('en');
    expect(none.body).toContain('>Sign out</a>');
    // No choice of their own: the browser's language decides.
    const asked = await bobWeb.get('/home', { 'accept-language': 'de-CH' });
    expect(htmlLang(asked.body)).toBe('de');
  });

  it('refuses a language that is no language, in German', async () => {
    const page = await aliceWeb.get('/settings/appearance');
    const refused = await aliceWeb.post('/settings/appearance', { locale: 'nonsense', theme: 'system' }, page.body);
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('Wähle eine Sprache aus der Liste.');
  });
});

describe('a visitor', () => {
  it('with Accept-Language: de gets the sign-in and sign-up pages in German', async () => {
    const visitor = new WebClient(s.app);
    const signIn = await visitor.get('/auth/sign_in', { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' });
    expect(signIn.statusCode).toBe(200);
    expect(htmlLang(signIn.body)).toBe('de');
    for (const text of ['<h1>Anmelden</h1>', '>E-Mail-Adresse</label>', '>Passwort</label>', '>Passwort vergessen?</a>', '<title>Anmelden - ']) expect(signIn.body).toContain(text);
    const signUp = await visitor.get('/auth/sign_up', { 'accept-language': 'de' });
    expect(signUp.body).toContain('>Benutzername</label>');
    expect(signUp.body).toContain('>Registrieren</button>');
  });

  it('with no language of ours, or none at all, gets English', async () => {
    const visitor = new WebClient(s.app);
    for (const header of [{ 'accept-language': 'xx-YY, tlh;q=0.5' }, {}] as Record<string, string>[]) {
      const signIn = await visitor.get('/auth/sign_in', header);
      expect(htmlLang(signIn.body)).toBe('en');
      expect(signIn.body).toContain('<h1>Sign in</h1>');
      expect(signIn.body).toContain('>E-mail address</label>');
    }
  });

  it('gets a public page in their language, each language kept apart, varying by Accept-Language', async () => {
    const visitor = new WebClient(s.app);
    const german = await visitor.get('/@alice', { 'accept-language': 'de' });
    expect(german.statusCode).toBe(200);
    expect(german.headers.vary).toContain('Accept-Language');
    expect(htmlLang(german.body)).toBe('de');
    expect(german.body).toContain('>Anmelden</a>');
    const english = await visitor.get('/@alice', { 'accept-language': 'en' });
    expect(htmlLang(english.body)).toBe('en');
    expect(english.body).toContain('>Sign in</a>');
    expect((await visitor.get('/@alice', { 'accept-language': 'de' })).body).toBe(german.body);
  });

  it('who signs up from a German browser keeps German as their language', async () => {
    const visitor = new WebClient(s.app);
    const form = await visitor.get('/auth/sign_up', { 'accept-language': 'de' });
    const body = new URLSearchParams({ _csrf: /name="_csrf" value="([^"]*)"/.exec(form.body)![1]!, username: 'dora', email: 'dora@example.test', password: 'a long password', password_confirmation: 'a long password', agreement: '1' }).toString();
    const res = await s.app.inject({ method: 'POST', url: '/auth/sign_up', payload: body, headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-language': 'de', cookie: visitor.jar.header() } });
    expect(res.statusCode).toBeLessThan(400);
    const { rows } = await s.ctx.db.query<{ locale: string }>(`SELECT u.locale FROM users u JOIN accounts a ON a.id = u.account_id WHERE a.username = 'dora'`);
    expect(rows[0]?.locale).toBe('de');
  });
});
