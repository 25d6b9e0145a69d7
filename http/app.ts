import Fastify, { type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.ts';
import { parseNested } from './plugins/body.ts';
import textGuardPlugin from './plugins/text-guard.ts';
import federationHook from '../federation/mount.ts';
import webRoutes from './web/index.ts';
import adminQueueRoutes from './admin/queues.ts';
import searchRoutes from './api/v2/search.ts';
import discoveryRoutes from './api/discovery.ts';
import mediaV1Routes from './api/v1/media.ts';
import mediaV2Routes from './api/v2/media.ts';
import { readFileSync } from 'node:fs';
import bodyPlugin from './plugins/body.ts';
import errorsPlugin from './plugins/errors.ts';
import corsPlugin from './plugins/cors.ts';
import availabilityPlugin from './plugins/availability.ts';
import authPlugin from './plugins/auth.ts';
import readYourWritesPlugin from './plugins/read-your-writes.ts';
import rateLimitPlugin from './plugins/rate-limit.ts';
import { mastodonKeywords } from './plugins/validation.ts';
import healthRoutes from './health.ts';
import fileRoutes from './files.ts';
import mediaProxyRoutes from './media-proxy.ts';
import oauthRoutes from './oauth/routes.ts';
import appsRoutes from './api/v1/apps.ts';
import accountsRoutes from './api/v1/accounts.ts';
import profileRoutes from './api/v1/profile.ts';
import directoryRoutes from './api/v1/directory.ts';
import followRequestsRoutes from './api/v1/follow_requests.ts';
import instanceV1Routes from './api/v1/instance.ts';
import statusesRoutes from './api/v1/statuses.ts';
import statusTranslationRoutes from './api/v1/status_translations.ts';
import timelinesRoutes from './api/v1/timelines.ts';
import markersRoutes from './api/v1/markers.ts';
import announcementsRoutes from './api/v1/announcements.ts';
import notificationsRoutes from './api/v1/notifications.ts';
import notificationRequestsRoutes from './api/v1/notification_requests.ts';
import notificationsV2Routes from './api/v2/notifications.ts';
import pushRoutes from './api/v1/push.ts';
import instanceV2Routes from './api/v2/instance.ts';
import trendsRoutes from './api/v1/trends.ts';
import customEmojisRoutes from './api/v1/custom_emojis.ts';
import preferencesRoutes from './api/v1/preferences.ts';
import streamingRoutes from './streaming/routes.ts';
import filtersV1Routes from './api/v1/filters.ts';
import filtersV2Routes from './api/v2/filters.ts';
import reportsRoutes from './api/v1/reports.ts';
import emailsRoutes from './api/v1/emails.ts';
import adminReportsRoutes from './api/v1/admin/reports.ts';
import adminTrendsRoutes from './api/v1/admin/trends.ts';
import linkTimelineRoutes from './api/v1/link-timeline.ts';
import adminAccountsRoutes from './api/v1/admin/accounts.ts';
import adminDomainBlocksRoutes from './api/v1/admin/domain_blocks.ts';
import adminDomainAllowsRoutes from './api/v1/admin/domain_allows.ts';
import adminDashboardRoutes from './api/v1/admin/dashboard.ts';
import adminIpBlocksRoutes from './api/v1/admin/ip_blocks.ts';
import adminEmailDomainBlocksRoutes from './api/v1/admin/email_domain_blocks.ts';
import adminCanonicalEmailBlocksRoutes from './api/v1/admin/canonical_email_blocks.ts';
import adminUsernameBlocksRoutes from './api/v1/admin/username_blocks.ts';
import ipAccessPlugin from './plugins/ip-access.ts';
import instanceDomainBlocksRoutes from './api/v1/instance_domain_blocks.ts';
import blocksRoutes from './api/v1/blocks.ts';
import listsRoutes from './api/v1/lists.ts';
import accountNotesRoutes from './api/v1/account_notes.ts';
import featuredTagsRoutes from './api/v1/featured_tags.ts';
import scheduledStatusesRoutes from './api/v1/scheduled_statuses.ts';
import tagsRoutes from './api/v1/tags.ts';
import conversationsRoutes from './api/v1/conversations.ts';
import pollsRoutes from './api/v1/polls.ts';
import statusMarksRoutes from './api/v1/status_marks.ts';
import annualReportsRoutes from './api/v1/annual_reports.ts';
import collectionsRoutes from './api/v1/collections.ts';
import asyncRefreshesRoutes from './api/v1_alpha/async_refreshes.ts';
import metricsRoutes, { requestMetricsPlugin } from './metrics.ts';
import { lazyValidatorFactory } from './lazy-validators.ts';
import { namePluginsOnRegister } from './plugin-names.ts';
import openApiRoutes, { collectRouteSchemas } from './openapi.ts';

export type App = FastifyInstance;

/** The whole web application, ready to `listen` or to `inject` requests in tests. */
export async function buildApp(ctx: AppContext, options: { logger?: boolean; logStream?: { write(line: string): void } } = {}) {
  const app = Fastify({
    // Serving TLS itself (TLS_CERT_FILE, TLS_KEY_FILE) or plain HTTP behind a TLS-terminating proxy.
    ...(ctx.config.tlsCertFile ? { https: { cert: readFileSync(ctx.config.tlsCertFile), key: readFileSync(ctx.config.tlsKeyFile) } } : {}),
    // JSON lines to stdout, or to the stream given (the tests read what a request logged).
    logger: options.logger === false ? false : { level: ctx.config.logLevel, ...(options.logStream ? { stream: options.logStream } : {}) },
    // Request ids in every log line; a proxy's X-Request-Id is kept so logs join up across hops.
    genReqId: () => randomUUID(),
    requestIdHeader: 'x-request-id',
    trustProxy: ctx.config.trustProxy,
    routerOptions: {
      // `id[]=1&id[]=2` and `fields_attributes[0][name]=…`, as Rails parses them.
      querystringParser: (s: string) => parseNested(s),
      ignoreTrailingSlash: true,
    },
    bodyLimit: 1024 * 1024,
    ajv: {
      customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false },
      plugins: [mastodonKeywords],
    },
    // Each route's validators are compiled at its first request, not all at start (http/lazy-validators.ts).
    schemaController: { compilersFactory: { buildValidator: lazyValidatorFactory() } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  namePluginsOnRegister(app);
  // References to the API routes' request schemas, for GET /api/openapi.json and its page /about/api (built at the
  // first request of either).
  const apiDescription = collectRouteSchemas(app);

  // Before everything that may refuse a request, so that a 401, 429 or 503 still reaches a web client on another origin.
  await app.register(corsPlugin);
  // Writes wait (2 s at most) for PostgreSQL and Redis while either is away, then are answered 503.
  await app.register(availabilityPlugin, { dependencies: ctx.dependencies });
  // The operator's no_access IP blocks refuse everything else (Mastodon's Rack::Attack blocklist).
  await app.register(ipAccessPlugin, { db: ctx.db });

  // Callback-style hooks where nothing is awaited: every request passes through them.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  await app.register(errorsPlugin);
  // Every answered request is counted by route and status, in memory (GET /metrics shows them).
  await app.register(requestMetricsPlugin, { ctx });
  // The largest upload of any kind; each kind's own limit is checked where it is used.
  await app.register(bodyPlugin, { maxFileBytes: Math.max(ctx.config.maxImageBytes, ctx.config.maxVideoBytes) });
  // Health checks and static files are registered before the rate limiter, which only sees later routes.
  await app.register(healthRoutes, { ctx });
  if (ctx.config.role === 'streaming') {
    // A process of its own for the sockets (ROLE=streaming): health and the streaming API, nothing else.
    await app.register(authPlugin, { db: ctx.db, tokens: ctx.tokens });
    await app.register(textGuardPlugin);
    await app.register(streamingRoutes, { ctx });
    return app;
  }
  await app.register(fileRoutes, { ctx });
  // Text PostgreSQL cannot store is refused before any route sees it: its hooks are everyone's, and come before
  // Fedify's (registered next) and after the body plugin's (multipart fields are the body by then).
  await app.register(textGuardPlugin);
  // ActivityPub first (Fedify); what it does not handle falls through to the routes below.
  await app.register(federationHook, { ctx });
  if (ctx.config.rateLimits) await app.register(rateLimitPlugin, { ctx });
  await app.register(authPlugin, { db: ctx.db, tokens: ctx.tokens });
  // With read replicas, a viewer's writes are remembered so that their next reads see them.
  await app.register(readYourWritesPlugin, { ctx });

  // Pages for browsers (http/web/): their own scope, with sessions, CSRF checks and security headers.
  await app.register(webRoutes, { ctx, apiDescription });
  await app.register(oauthRoutes, { ctx });
  await app.register(appsRoutes, { ctx });
  await app.register(accountsRoutes, { ctx });
  await app.register(profileRoutes, { ctx });
  await app.register(directoryRoutes, { ctx });
  await app.register(followRequestsRoutes, { ctx });
  await app.register(statusesRoutes, { ctx });
  await app.register(statusTranslationRoutes, { ctx });
  await app.register(timelinesRoutes, { ctx });
  await app.register(markersRoutes, { ctx });
  await app.register(announcementsRoutes, { ctx });
  await app.register(notificationsRoutes, { ctx });
  await app.register(notificationRequestsRoutes, { ctx });
  await app.register(notificationsV2Routes, { ctx });
  await app.register(pushRoutes, { ctx });
  await app.register(instanceV1Routes, { ctx });
  await app.register(instanceV2Routes, { ctx });
  await app.register(trendsRoutes, { ctx });
  await app.register(customEmojisRoutes, { ctx });
  await app.register(openApiRoutes, { ctx, description: apiDescription });
  await app.register(preferencesRoutes, { ctx });
  await app.register(searchRoutes, { ctx });
  await app.register(discoveryRoutes, { ctx });
  await app.register(filtersV1Routes, { ctx });
  await app.register(filtersV2Routes, { ctx });
  await app.register(reportsRoutes, { ctx });
  await app.register(emailsRoutes, { ctx });
  await app.register(adminReportsRoutes, { ctx });
  await app.register(adminTrendsRoutes, { ctx });
  await app.register(linkTimelineRoutes, { ctx });
  await app.register(adminAccountsRoutes, { ctx });
  await app.register(adminDomainBlocksRoutes, { ctx });
  await app.register(adminDomainAllowsRoutes, { ctx });
  await app.register(adminDashboardRoutes, { ctx });
  await app.register(adminIpBlocksRoutes, { ctx });
  await app.register(adminEmailDomainBlocksRoutes, { ctx });
  await app.register(adminCanonicalEmailBlocksRoutes, { ctx });
  await app.register(adminUsernameBlocksRoutes, { ctx });
  await app.register(instanceDomainBlocksRoutes, { ctx });
  await app.register(blocksRoutes, { ctx });
  await app.register(listsRoutes, { ctx });
  await app.register(accountNotesRoutes, { ctx });
  await app.register(featuredTagsRoutes, { ctx });
  await app.register(collectionsRoutes, { ctx });
  await app.register(asyncRefreshesRoutes, { ctx });
  await app.register(scheduledStatusesRoutes, { ctx });
  await app.register(tagsRoutes, { ctx });
  await app.register(conversationsRoutes, { ctx });
  await app.register(pollsRoutes, { ctx });
  await app.register(statusMarksRoutes, { ctx });
  await app.register(annualReportsRoutes, { ctx });
  await app.register(mediaV1Routes, { ctx });
  await app.register(mediaV2Routes, { ctx });
  await app.register(mediaProxyRoutes, { ctx });
  await app.register(adminQueueRoutes, { ctx });
  await app.register(metricsRoutes, { ctx });
  await app.register(streamingRoutes, { ctx });
  return app;
}

export type { RouteOptions } from './route-options.ts';
