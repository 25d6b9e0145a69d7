import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../route-options.ts';
import suggestionsRoutes from './v1/suggestions.ts';
import accountSearchRoutes from './v1/accounts_search.ts';

/** Finding people: follow suggestions (v1 and v2) and account search. */
export default async function discoveryRoutes(app: FastifyInstance, opts: RouteOptions) {
  await app.register(suggestionsRoutes, opts);
  await app.register(accountSearchRoutes, opts);
}
