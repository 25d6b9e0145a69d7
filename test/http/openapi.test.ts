// GET /api/openapi.json: our own OpenAPI 3.1 description, built from the route schemas the server validates with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

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
});
