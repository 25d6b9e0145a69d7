// Machine translation of posts (POST /api/v1/statuses/:id/translate, /api/v1/instance/translation_languages and the
// v2 instance's configuration.translation), against loopback servers answering in DeepL's and LibreTranslate's
// documented API shapes, through masto as an app calls it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { mastodon } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { expectEntity } from '../helpers/schema.ts';
import { fakeService, type FakeService } from '../helpers/translation-service.ts';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- API and service bodies

async function raw(server: TestServer & { url: string }, path: string, init: RequestInit = {}) {
  const res = await fetch(`${server.url}${path}`, init);
  return { status: res.status, body: await res.json() as Json };
}

describe('translation through DeepL', () => {
  let deepl: FakeService;
  let server: TestServer & { url: string };
  let alice: mastodon.rest.Client;
  let bob: mastodon.rest.Client;

  beforeAll(async () => {
    deepl = await fakeService('deepl');
    server = await startListeningServer({ DEEPL_API_KEY: 'test-key:fx', DEEPL_API_URL: deepl.url });
    ({ alice, bob } = await mastoAccounts(server.url, 'translation-test', 'alice', 'bob') as { alice: mastodon.rest.Client; bob: mastodon.rest.Client });
  });
  afterAll(async () => {
    await server?.close();
    await deepl?.close();
  });

  it('says translation is on and lists the pairs of languages DeepL offers', async () => {
    const instance = await bob.v2.instance.fetch();
    expect(instance.configuration.translation.enabled).toBe(true);
    const { status, body } = await raw(server, '/api/v1/instance/translation_languages');
    expect(status).toBe(200);
    expect(body.und).toEqual(expect.arrayContaining(['de', 'en', 'en-GB', 'pt', 'ja']));
    expect(body.de).toContain('en');
    expect(body.de).not.toContain('de');
    expect(body.en).toEqual(expect.arrayContaining(['de', 'ja', 'en-GB']));
  });

  it('translates the text, content warning and poll of a public post, once for everyone who asks', async () => {
    const post = await alice.v1.statuses.create({ status: 'Hello world, :blobcat: here', spoilerText: 'A warning', language: 'en', poll: { options: ['Yes please', 'No thanks'], expiresIn: 3600 } });
    const before = deepl.requests.filter((r) => r.path === '/v2/translate').length;
    // As an app calls it; then the whole entity, which masto's types know only in part.
    expect((await bob.v1.statuses.$select(post.id).translate({ lang: 'de' })).content).toContain('de:Hello');
    const translation = (await raw(server, `/api/v1/statuses/${post.id}/translate`, { method: 'POST', headers: { authorization: `Bearer ${tokenOf(bob)}`, 'content-type': 'application/json' }, body: JSON.stringify({ lang: 'de' }) })).body;
    expectEntity('Translation', translation);
    expect(translation.content).toContain('de:Hello');
    expect(translation.content).toContain(':blobcat:');
    expect(translation.content).not.toContain('de:blobcat');
    expect(translation.content).not.toContain('translate=');
    expect(translation.spoiler_text).toBe('de:A de:warning');
    expect(translation.poll?.id).toBe(post.poll?.id);
    expect(translation.poll?.options.map((o: Json) => o.title)).toEqual(['de:Yes de:please', 'de:No de:thanks']);
    expect(translation.detected_source_language).toBe('en');
    expect(translation.provider).toBe('DeepL.com');
    const sent = deepl.requests.filter((r) => r.path === '/v2/translate');
    expect(sent).toHaveLength(before + 1);
    expect(sent.at(-1)!.body).toMatchObject({ target_lang: 'DE', source_lang: 'EN', tag_handling: 'html' });
    expect(sent.at(-1)!.body.text).toHaveLength(4);

    // The same text into the same language again, by someone else: from the cache.
    const again = await alice.v1.statuses.$select(post.id).translate({ lang: 'de' });
    expect(again.content).toBe(translation.content);
    expect(deepl.requests.filter((r) => r.path === '/v2/translate')).toHaveLength(before + 1);
  });

  it("sanitises what the service answers, and uses the person's language when none is given", async () => {
    const post = await alice.v1.statuses.create({ status: 'evil text', language: 'de' });
    const translation = await bob.v1.statuses.$select(post.id).translate();
    expect(translation.content).toContain('en:evil');
    expect(translation.content).not.toContain('<script');
  });

  it('refuses what may not be translated, and says so when the service fails', async () => {
    const secret = await alice.v1.statuses.create({ status: 'Only for followers', visibility: 'private', language: 'en' });
    const direct = await alice.v1.statuses.create({ status: '@bob just us', visibility: 'direct', language: 'en' });
    const open = await alice.v1.statuses.create({ status: 'Open to all', language: 'en' });
    const auth = { authorization: `Bearer ${tokenOf(bob)}`, 'content-type': 'application/json' };
    const post = (id: string, body: Json = {}) => raw(server, `/api/v1/statuses/${id}/translate`, { method: 'POST', headers: auth, body: JSON.stringify(body) });

    expect((await post(secret.id)).status).toBe(404); // bob does not follow alice: he cannot see it at all
    expect((await post(direct.id, { lang: 'de' })).status).toBe(403);
    expect((await post(open.id, { lang: 'xx' })).status).toBe(403); // a pair DeepL does not offer
    expect((await post('1234567890', { lang: 'de' })).status).toBe(404);
    expect((await post(open.id, { lang: 'not a language' })).status).toBe(422);
    const anonymous = await raw(server, `/api/v1/statuses/${open.id}/translate`, { method: 'POST' });
    expect(anonymous.status).toBe(401);

    deepl.failWith = 456;
    const quota = await post(open.id, { lang: 'de' });
    expect(quota).toEqual({ status: 503, body: { error: expect.stringContaining('quota') } });
    deepl.failWith = 429;
    expect((await post(open.id, { lang: 'de' })).status).toBe(503);
    deepl.failWith = 500;
    expect((await post(open.id, { lang: 'ja' })).status).toBe(503);
    deepl.failWith = null;
    expect((await post(open.id, { lang: 'ja' })).body.content).toContain('ja:Open');
  });
});

describe('translation through LibreTranslate', () => {
  let libre: FakeService;
  let server: TestServer & { url: string };

  beforeAll(async () => {
    libre = await fakeService('libretranslate');
    server = await startListeningServer({ LIBRE_TRANSLATE_ENDPOINT: libre.url, LIBRE_TRANSLATE_API_KEY: 'libre-key' });
  });
  afterAll(async () => {
    await server?.close();
    await libre?.close();
  });

  it('lists its pairs and translates with its key, detecting the language of a post that names none', async () => {
    const { carol, dave } = await mastoAccounts(server.url, 'translation-test', 'carol', 'dave') as Record<string, mastodon.rest.Client>;
    const languages = await raw(server, '/api/v1/instance/translation_languages');
    expect(languages.body).toEqual({ en: ['de', 'fr'], de: ['en'], und: expect.arrayContaining(['de', 'fr', 'en']) });
    const post = await carol!.v1.statuses.create({ status: 'Good morning', language: null as unknown as string });
    const translation = await dave!.v1.statuses.$select(post.id).translate({ lang: 'fr' });
    expect(translation.content).toContain('fr:Good');
    expect(translation.provider).toBe('LibreTranslate');
    const sent = libre.requests.filter((r) => r.path === '/translate').at(-1)!;
    expect(sent.body).toMatchObject({ target: 'fr', format: 'html', api_key: 'libre-key' });
  });
});

describe('without a translation service', () => {
  let server: TestServer & { url: string };
  beforeAll(async () => { server = await startListeningServer(); });
  afterAll(async () => { await server?.close(); });

  it('says translation is off, offers no languages and answers 404', async () => {
    const { erin } = await mastoAccounts(server.url, 'translation-test', 'erin') as Record<string, mastodon.rest.Client>;
    expect((await erin!.v2.instance.fetch()).configuration.translation.enabled).toBe(false);
    expect((await raw(server, '/api/v1/instance/translation_languages')).body).toEqual({});
    const post = await erin!.v1.statuses.create({ status: 'Nothing to translate', language: 'en' });
    const res = await raw(server, `/api/v1/statuses/${post.id}/translate`, { method: 'POST', headers: { authorization: `Bearer ${tokenOf(erin!)}` } });
    expect(res).toEqual({ status: 404, body: { error: 'Record not found' } });
  });
});
