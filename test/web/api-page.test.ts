// /about/api: the OpenAPI document of GET /api/openapi.json as a page to read, under the site's CSP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { expectValidHtml } from '../helpers/html.ts';
import { descriptionHtml, typeOf } from '../../http/web/api-page.ts';

describe('the API page', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('lists every operation of the OpenAPI document with its parameters and answers, as valid HTML without scripts', async () => {
    const page = await s.app.inject({ method: 'GET', url: '/about/api' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).not.toMatch(/<script/);
    await expectValidHtml(page.body, '/about/api');

    const doc = (await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const operations = Object.entries(doc.paths as Record<string, object>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const shown = [...page.body.matchAll(/<summary><span class="badge">([A-Z]+)<\/span> <code>([^<]+)<\/code><\/summary>/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(shown.sort()).toEqual(operations.sort());

    // One operation in full: its query parameters, its answer (an array of Mastodon's Status) and the error body.
    const home = page.body.slice(page.body.indexOf('id="get-api-v1-timelines-home"'));
    const details = home.slice(0, home.indexOf('</details>'));
    expect(details).toMatch(/<td><code>max_id<\/code><\/td><td>query<\/td>/);
    expect(details).toMatch(/<td><code>limit<\/code><\/td><td>query<\/td><td>integer[^<]*<\/td><td>no<\/td>/);
    expect(details).toContain('<td>200</td><td>Home timeline, newest first (paged, Link header)</td><td>[Status]</td>');
    expect(details).toContain('<td>4XX</td><td>An error, as <code>{&quot;error&quot;: &quot;…&quot;}</code>: 400 for');
    // A body's fields, with which are required.
    const revoke = page.body.slice(page.body.indexOf('id="post-oauth-revoke"'));
    expect(revoke.slice(0, revoke.indexOf('</details>'))).toMatch(/<td><code>token<\/code><\/td><td>body<\/td><td>string[^<]*<\/td><td>yes<\/td>/);
    // The entities the answers name, each once.
    expect(page.body).toContain('<dt id="entity-status"><code>Status</code></dt>');
    expect(page.body).toContain('href="/api/openapi.json"');
  }, 60_000); // html-validate reads the whole page (every operation of the API): seconds on a loaded machine

  it('escapes descriptions, showing their backquoted spans as code', () => {
    expect(descriptionHtml('Keyed as `a<b>` & <i>so</i>')).toBe('Keyed as <code>a&lt;b&gt;</code> &amp; &lt;i&gt;so&lt;/i&gt;');
  });

  it('says a schema in a few words', () => {
    expect(typeOf({ $ref: '#/components/schemas/Account' })).toBe('Account');
    expect(typeOf({ type: 'array', items: { $ref: '#/components/schemas/Status' } })).toBe('[Status]');
    expect(typeOf({ anyOf: [{ type: 'string', enum: ['home'] }, { type: 'string', enum: ['notifications'] }] })).toBe('"home" | "notifications"');
    expect(typeOf({ type: 'string', maxLength: 500 })).toBe('string (≤ 500 characters)');
    expect(typeOf({ type: 'integer', minimum: 1, maximum: 40 })).toBe('integer (≥ 1, ≤ 40)');
    expect(typeOf({ type: ['string', 'null'] })).toBe('string | null');
  });
});
