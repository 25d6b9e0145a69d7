import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { instanceStats } from '../../storage/instance.ts';
import { listRules } from '../../storage/rules.ts';
import { contactAccount, extendedDescription, operatorHtml } from '../../services/instance.ts';
import { instanceThumbnail } from '../../services/instance-thumbnail.ts';
import { privacyPolicy, termsOfService, type PolicyText } from '../../services/instance-policies.ts';
import { LANGUAGES } from '../../services/languages.ts';
import { renderInstanceV1 } from '../serializers/instance.ts';
import { renderView } from './views.ts';
import { headTags, publicChrome, viewerOf } from './page-chrome.ts';
import { accountView, dateView, truncate } from './page-view.ts';
import { NO_VERSIONS, servePage, type PublicPageOptions } from './page-serving.ts';
import { translator } from './i18n.ts';

/** The figures change all the time and are not versioned: a stranger's about page is rendered at most once a minute. */
const ABOUT_TTL_MS = 60_000;
/** The policies change only with a restart (settings); kept a while all the same. */
const POLICY_TTL_MS = 10 * 60_000;

/** Operators' HTML may start at `<h1>`; the page has its own, so their headings move one level down. */
const belowPageHeading = (html: string) => html.replace(/<(\/?)h([1-5])\b/gi, (_m, slash: string, level: string) => `<${slash}h${Number(level) + 1}`);

/** `/` and `/about`, the privacy policy and the terms of service. */
export default async function instancePageRoutes(app: FastifyInstance, opts: PublicPageOptions) {
  const { ctx } = opts;
  const { config } = ctx;

  const about = (request: FastifyRequest, reply: FastifyReply) => servePage(opts, request, reply, '/about', null, async (viewer, locale) => {
    // The same facts the instance API shows (http/serializers/instance.ts), and the figures behind them.
    const [stats, contact, rules, thumbnail, description] = await Promise.all([
      instanceStats(ctx.db), contactAccount(ctx), listRules(ctx.db), instanceThumbnail(config), extendedDescription(ctx),
    ]);
    const entity = renderInstanceV1(ctx.render, config, stats, contact, { rules, thumbnail });
    const instance = {
      title: entity.title,
      description: entity.description,
      domain: config.localDomain,
      thumbnail: entity.thumbnail,
      thumbnailAlt: config.instanceThumbnailDescription,
      registrations: config.registrationsMode,
      closedMessage: config.registrationsClosedMessage ? belowPageHeading(operatorHtml(config.registrationsClosedMessage)) : '',
      people: stats.userCount,
      active: stats.activeMonth,
      posts: stats.statusCount,
      servers: stats.domainCount,
      extendedDescription: belowPageHeading(description.content),
      rules: entity.rules,
      languages: entity.languages.map((code) => translator(locale).languageName(code, LANGUAGES.get(code) ?? code)),
      contact: entity.contact_account ? accountView(ctx.render, entity.contact_account) : null,
      email: config.contactEmail,
    };
    const head = headTags({
      description: truncate(entity.description, 200),
      canonical: `${config.publicUrl}/about`,
      og: [['og:type', 'website'], ['og:site_name', entity.title], ['og:title', entity.title], ['og:description', entity.description],
        ['og:url', `${config.publicUrl}/about`], ['og:image', entity.thumbnail]],
      twitter: [['twitter:card', 'summary_large_image'], ['twitter:title', entity.title], ['twitter:description', entity.description], ['twitter:image', entity.thumbnail]],
    });
    const body = renderView('public/about', { chrome: publicChrome(config, viewer, translator(locale)('about.title', { title: entity.title }), head, locale), instance, signedIn: !!viewer });
    return { body, cache: { used: NO_VERSIONS, ttlMs: ABOUT_TTL_MS } };
  });
  // A signed-in person starts at home, as on Mastodon; a stranger at the about page.
  app.get('/', async (request, reply) => ((await viewerOf(request)) ? reply.redirect('/home') : about(request, reply)));
  app.get('/about', about);

  // `title`: the message key of the page's heading. The text is the operator's (or our default), in its own language.
  const policyPage = (path: string, title: string, text: (c: typeof ctx) => Promise<PolicyText>) =>
    app.get(path, (request, reply) => servePage(opts, request, reply, path, null, async (viewer, locale) => {
      const policy = await text(ctx);
      const heading = translator(locale)(title);
      const head = headTags({ canonical: `${config.publicUrl}${path}`, description: `${heading} - ${config.instanceTitle}` });
      const body = renderView('public/policy', {
        chrome: publicChrome(config, viewer, `${heading} - ${config.instanceTitle}`, head, locale),
        heading, updated: dateView(policy.updatedAt), content: belowPageHeading(policy.content),
      });
      return { body, cache: { used: NO_VERSIONS, ttlMs: POLICY_TTL_MS } };
    }));
  policyPage('/privacy-policy', 'nav.privacy_policy', privacyPolicy);
  policyPage('/terms-of-service', 'nav.terms', termsOfService);
}
