import type { FastifyInstance } from 'fastify';
import type { RouteOptions } from '../route-options.ts';
import sessionPlugin from './session.ts';
import securityHeaders from './security-headers.ts';
import publicPageRoutes from './public-pages.ts';
import authPageRoutes from './auth.ts';
import authorizePageRoutes from './authorize.ts';
import oidcPageRoutes from './oidc.ts';
import securityKeyPageRoutes from './security-keys.ts';
import settingsPageRoutes from './settings.ts';
import unsubscribePageRoutes from './unsubscribe.ts';
import importPageRoutes from './imports.ts';
import adminPageRoutes from './admin.ts';
import invitePageRoutes from './invites.ts';
import exportPageRoutes from './exports.ts';
import clientPageRoutes from './client-pages.ts';
import clientActionRoutes from './client-actions.ts';
import apiPageRoutes from './api-page.ts';
import type { ApiDescription } from '../openapi.ts';

/**
 * What a browser gets: public pages, joining and signing in, the pages of a signed-in person (timelines, posting,
 * notifications, search), settings and moderation. One encapsulated scope, so
 * its cookies, CSRF checks and page security headers never touch the API's routes.
 */
export default async function webRoutes(app: FastifyInstance, { ctx, apiDescription }: RouteOptions & { apiDescription: ApiDescription }) {
  await app.register(securityHeaders, {
    // Scripts only from our own origin (the signed-in pages' one script, http/public/assets/client.js; no other page
    // has any); styles and fonts come from our stylesheet; images and media may be remote (avatars and attachments
    // of other servers, or an S3 file host).
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:', 'https:', 'http:'],
        mediaSrc: ["'self'", 'https:', 'http:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        manifestSrc: ["'self'"],
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'same-origin' },
    // The pages link to remote images and media: no cross-origin isolation.
    crossOriginEmbedderPolicy: false,
    crossOriginResourcePolicy: false,
    // HSTS belongs to whoever terminates TLS (LOCAL_HTTPS behind a proxy, or TLS_CERT_FILE).
    hsts: ctx.config.publicUrl.startsWith('https:') ? { maxAge: 31536000 } : false,
  });
  await app.register(sessionPlugin, { ctx });
  await app.register(publicPageRoutes, { ctx });
  await app.register(apiPageRoutes, { ctx, apiDescription });
  await app.register(authPageRoutes, { ctx });
  await app.register(authorizePageRoutes, { ctx });
  await app.register(oidcPageRoutes, { ctx });
  await app.register(clientPageRoutes, { ctx });
  await app.register(clientActionRoutes, { ctx });
  await app.register((await import('./client-saved.ts')).default, { ctx });
  await app.register((await import('./client-lists.ts')).default, { ctx });
  await app.register((await import('./client-filters.ts')).default, { ctx });
  await app.register((await import('./client-relations.ts')).default, { ctx });
  await app.register((await import('./client-blocks.ts')).default, { ctx });
  await app.register((await import('./client-notification-requests.ts')).default, { ctx });
  await app.register((await import('./client-tags.ts')).default, { ctx });
  await app.register((await import('./client-translation.ts')).default, { ctx });
  await app.register((await import('./client-live.ts')).default, { ctx });
  await app.register((await import('./client-scheduled.ts')).default, { ctx });
  await app.register(settingsPageRoutes, { ctx });
  await app.register(unsubscribePageRoutes, { ctx });
  await app.register(invitePageRoutes, { ctx });
  await app.register(securityKeyPageRoutes, { ctx });
  await app.register((await import('./settings-appearance.ts')).default, { ctx });
  await app.register((await import('./settings-development.ts')).default, { ctx });
  await app.register((await import('./settings-statuses-cleanup.ts')).default, { ctx });
  await app.register((await import('./account-deletion.ts')).default, { ctx });
  await app.register(importPageRoutes, { ctx });
  await app.register(adminPageRoutes, { ctx });
  await app.register((await import('./admin-settings.ts')).default, { ctx });
  await app.register((await import('./admin-rules.ts')).default, { ctx });
  await app.register((await import('./admin-relays.ts')).default, { ctx });
  await app.register((await import('./admin-custom-emojis.ts')).default, { ctx });
  await app.register((await import('./admin-roles.ts')).default, { ctx });
  await app.register((await import('./admin-reports.ts')).default, { ctx });
  await app.register((await import('./admin-accounts.ts')).default, { ctx });
  await app.register((await import('./admin-action-logs.ts')).default, { ctx });
  await app.register((await import('./admin-dashboard.ts')).default, { ctx });
  await app.register((await import('./admin-domains.ts')).default, { ctx });
  await app.register((await import('./admin-access-blocks.ts')).default, { ctx });
  await app.register((await import('./admin-username-blocks.ts')).default, { ctx });
  await app.register((await import('./admin-trends.ts')).default, { ctx });
  await app.register((await import('./admin-jobs.ts')).default, { ctx });
  await app.register((await import('./disputes.ts')).default, { ctx });
  await app.register(exportPageRoutes, { ctx });
  await app.register((await import('./migration.ts')).default, { ctx });
  await app.register((await import('./remote-interaction.ts')).default, { ctx });
}
