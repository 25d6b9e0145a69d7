// GET /api/openapi.json: an OpenAPI 3.1 description of this server's own API, made by @fastify/swagger from the
// request schemas the routes validate with, so it cannot drift from the code. Nothing of it costs memory at rest:
// as routes are declared, only references to their schemas are kept; the first request loads @fastify/swagger and
// declares each route again, with those schemas and no work, on a Fastify instance of its own, and keeps the
// document's text. The app's own routes get no response schemas (Fastify would turn them into serialisers that
// drop every property a schema does not declare): what each answers is written in http/openapi-answers.ts and given
// only to that instance.
import type { FastifyInstance, FastifySchema } from 'fastify';
import type { RouteOptions } from './route-options.ts';
import { ALL_SCOPES } from './oauth/scopes.ts';
import { ANSWERS, ENTITIES } from './openapi-answers.ts';

interface DescribedRoute {
  method: string;
  url: string;
  schema: FastifySchema;
}

/** The parts of a route's schema that describe its request. */
const REQUEST_PARTS = ['params', 'querystring', 'body', 'headers', 'summary', 'description', 'tags'] as const;

/** Routes of the client API and OAuth: what apps call (pages, ActivityPub and files are not described). */
const DESCRIBED = /^\/(api|oauth)\//;

/**
 * Keeps a reference to the request schemas of every API route declared from now on (an onRoute hook on the root,
 * which the route plugins registered after it inherit). Call before registering the routes.
 */
export function collectRouteSchemas(app: FastifyInstance): ApiDescription {
  const routes: DescribedRoute[] = [];
  const seen = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (!DESCRIBED.test(route.url) || route.url === '/api/openapi.json') return;
    const schema: Record<string, unknown> = {};
    for (const part of REQUEST_PARTS) {
      const value = (route.schema as Record<string, unknown> | undefined)?.[part];
      if (value !== undefined) schema[part] = value;
    }
    // Fastify adds a HEAD route for each GET by itself; the description says GET.
    for (const method of [route.method].flat().filter((m) => m !== 'HEAD')) {
      const key = `${method} ${route.url}`;
      if (seen.has(key)) continue;
      seen.add(key);
      routes.push({ method, url: route.url, schema });
    }
  });
  return new ApiDescription(routes);
}

/** The document, built once with @fastify/swagger on an instance that only declares the routes. */
async function buildDocument(routes: DescribedRoute[], publicUrl: string, version: string): Promise<string> {
  const [{ default: Fastify }, { default: swagger }] = await Promise.all([import('fastify'), import('@fastify/swagger')]);
  const doc = Fastify({ logger: false });
  // The schemas were compiled by the app, with its keywords (maximumClamp…): here they are only read, and the
  // answers (http/openapi-answers.ts) only described, never serialised through.
  doc.setValidatorCompiler(() => () => true);
  doc.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await doc.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'fedi-server API',
        version,
        description: "Mastodon's client API as this server offers it (docs/api.md says where it differs). Request schemas are the ones the server validates with; responses name Mastodon's entities, described in Mastodon's documentation.",
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          OAuth2: {
            type: 'oauth2',
            flows: {
              authorizationCode: {
                authorizationUrl: `${publicUrl}/oauth/authorize`,
                tokenUrl: `${publicUrl}/oauth/token`,
                scopes: Object.fromEntries(ALL_SCOPES.map((s) => [s, s])),
              },
              clientCredentials: { tokenUrl: `${publicUrl}/oauth/token`, scopes: Object.fromEntries(ALL_SCOPES.map((s) => [s, s])) },
            },
          },
        },
      },
    },
    // Mastodon's entities by their names, as components/schemas.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  for (const [name, description] of Object.entries(ENTITIES)) {
    doc.addSchema({ $id: name, type: 'object', description: `Mastodon's ${name} entity: ${description}.`, externalDocs: { url: 'https://docs.joinmastodon.org/entities/' } });
  }
  for (const route of routes) {
    const response = ANSWERS[`${route.method} ${route.url}`];
    doc.route({ method: route.method as 'GET', url: route.url, schema: { ...route.schema, ...(response ? { response } : {}) }, handler: async () => null });
  }
  await doc.ready();
  try {
    return JSON.stringify(doc.swagger());
  } finally {
    await doc.close();
  }
}

/** The document, built at its first use (the JSON route's or the page's, http/web/api-page.ts) and kept. */
export class ApiDescription {
  private document: Promise<string> | null = null;
  private readonly routes: DescribedRoute[];

  constructor(routes: DescribedRoute[]) {
    this.routes = routes;
  }

  text(publicUrl: string, version: string): Promise<string> {
    this.document ??= buildDocument(this.routes, publicUrl, version).catch((err: unknown) => {
      this.document = null;
      throw err;
    });
    return this.document;
  }
}

export default async function openApiRoutes(app: FastifyInstance, options: RouteOptions & { description: ApiDescription }) {
  const { ctx, description } = options;
  app.get('/api/openapi.json', { config: { auth: { kind: 'anonymous' } } }, async (_request, reply) => {
    return reply.type('application/json; charset=utf-8').send(await description.text(ctx.config.publicUrl, ctx.config.softwareVersion));
  });
}
