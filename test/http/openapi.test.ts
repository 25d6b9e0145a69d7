// GET /api/openapi.json: our own OpenAPI 3.1 description, built from the route schemas the server validates with.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { ANSWERS } from '../../http/openapi-answers.ts';
import { compareWithMastodon } from '../../cli/openapi-compare.ts';
import { MASTODON_OPENAPI } from '../helpers/schema.ts';

describe('GET /api/openapi.json', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('is an OpenAPI 3.1 document of our API paths, with the parameters the routes validate', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    const doc = JSON.parse(res.body);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.title).toBe('fedi-server API');
    expect(doc.servers).toEqual([{ url: s.config.publicUrl }]);
    expect(doc.components.securitySchemes.OAuth2.flows.authorizationCode.tokenUrl).toBe(`${s.config.publicUrl}/oauth/token`);
    const paths = Object.keys(doc.paths);
    for (const path of ['/api/v1/statuses', '/api/v1/statuses/{id}', '/api/v1/accounts/{id}', '/api/v2/search', '/api/v1/timelines/home', '/api/v2/media', '/oauth/token']) {
      expect(paths).toContain(path);
    }
    // Only the client API and OAuth: not pages, ActivityPub, files, nor the document itself.
    expect(paths.every((p) => p.startsWith('/api/') || p.startsWith('/oauth/'))).toBe(true);
    expect(paths).not.toContain('/api/openapi.json');
    // A path parameter and the query string of a route, as its schema declares them.
    const status = doc.paths['/api/v1/statuses/{id}'].get;
    expect(status.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'id', in: 'path', required: true })]));
    const home = doc.paths['/api/v1/timelines/home'].get;
    expect(home.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['query:max_id', 'query:limit']));
    // HEAD routes Fastify adds for each GET are not described.
    expect(Object.values(doc.paths).some((ops) => 'head' in (ops as object))).toBe(false);
    // The same text on a second request (built once).
    expect((await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).body).toBe(res.body);
  });

  it('leaves the routes answering as before: no response schema drops undeclared properties', async () => {
    await s.app.inject({ method: 'GET', url: '/api/openapi.json' });
    const instance = await s.app.inject({ method: 'GET', url: '/api/v2/instance' });
    expect(instance.statusCode).toBe(200);
    expect(Object.keys(instance.json())).toEqual(expect.arrayContaining(['domain', 'configuration', 'registrations', 'contact', 'rules']));
  });

  it('describes what every route answers: a success with its description and schema, and the error body', async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }> }>>)) {
      if (!/^\/api\/(v1|v2|v1_alpha)\//.test(path)) continue;
      for (const [method, op] of Object.entries(ops)) {
        const answers = Object.entries(op.responses ?? {});
        const success = answers.filter(([code]) => /^[12]/.test(code));
        const described = success.filter(([code, r]) => r.description && r.description !== 'Default Response' && (code === '101' || Object.values(r.content ?? {}).some((c) => c.schema)));
        const errors = answers.find(([code]) => code === '4XX')?.[1];
        if (described.length === 0 || !errors?.content?.['application/json']?.schema) missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(missing, 'routes without a described answer: add them to http/openapi-answers.ts').toEqual([]);
    // Entities are components of the document, referred to by name.
    expect(doc.paths['/api/v1/statuses/{id}'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Status' });
    expect(doc.paths['/api/v1/timelines/home'].get.responses['200'].content['application/json'].schema.items).toEqual({ $ref: '#/components/schemas/Status' });
    expect(doc.components.schemas.Status.description).toContain('Status');
  });

  it('has an answer for each route and no answer for a route that does not exist', async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const declared = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, object>)) {
      for (const method of Object.keys(ops)) declared.add(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
    }
    expect(Object.keys(ANSWERS).filter((key) => !declared.has(key)), 'answers of routes that do not exist').toEqual([]);
    expect([...declared].filter((key) => !(key in ANSWERS)), 'routes without answers').toEqual([]);
  });

  it('lists the differences from Mastodon\'s description as docs/api.md states them', async () => {
    const doc = (await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const { theirsOnly, oursOnly } = compareWithMastodon(doc, JSON.parse(readFileSync(MASTODON_OPENAPI, 'utf8')));
    const apiDoc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const section = (title: string) => {
      const start = apiDoc.indexOf(title);
      expect(start, `docs/api.md has no "${title}"`).toBeGreaterThan(-1);
      const rest = apiDoc.slice(start + title.length);
      const end = rest.search(/\n(#+ |\*\*)/);
      return [...(end === -1 ? rest : rest.slice(0, end)).matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) [^`]+)`/g)].map((m) => m[1]).sort();
    };
    expect(section('**In Mastodon\'s description, not served here**'), 'docs/api.md: Mastodon\'s operations we do not serve').toEqual(theirsOnly);
    expect(section('**Served here, not in Mastodon\'s description**'), 'docs/api.md: our operations Mastodon\'s description lacks').toEqual(oursOnly);
  });
});
